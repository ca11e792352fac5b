"""The command lines, run as a user runs them (click's runner, real files, no mocks)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from omegaconf import OmegaConf

from recipekit.cli import recipekit_cli, stage_launcher
from recipekit.plan import make_plan
from recipes.super3.dapo import dapo_gb200

GB200 = "recipes.super3.dapo:dapo_gb200"


@pytest.fixture()
def launcher(monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.setenv(stage_launcher.STAGE_VARIABLE, GB200)
    return CliRunner()


def test_plan_text_fits_one_screen(launcher: CliRunner) -> None:
    result = launcher.invoke(stage_launcher.cli, ["plan"])
    assert result.exit_code == 0, result.stderr
    summary, _, script = result.stdout.partition("\njob script for cluster profile 'gb200-nvl72':")
    lines = summary.splitlines()
    assert len(lines) <= 30
    assert "#SBATCH --gres=gpu:4" in script
    assert lines[0].startswith("dapo-gb200: ")
    text = result.stdout
    assert "generation node 1 (4 GPUs): vLLM TP 4 x PP 1 -> 1 instance" in text
    assert "training nodes 2-5 (16 GPUs): megatron TP 4 x PP 1 x CP 4 -> DP 1" in text
    assert make_plan(dapo_gb200).hash in text


def test_plan_json_carries_config_warnings_and_hash(launcher: CliRunner) -> None:
    result = launcher.invoke(
        stage_launcher.cli,
        [
            "plan",
            "--format",
            "json",
            "--set",
            "policy.max_total_sequence_length=2048",
            "--set",
            # One token short of vLLM's context: super-v3 keeps a prompt as long as the limit.
            "data.max_input_seq_length=2047",
        ],
    )
    assert result.exit_code == 0, result.stderr
    plan = json.loads(result.stdout)
    assert plan["config"]["policy"]["generation"]["vllm_cfg"]["max_model_len"] == 2048
    assert plan["warnings"] and plan["hash"] != make_plan(dapo_gb200).hash
    assert plan["overrides"] == [
        "policy.max_total_sequence_length=2048",
        "data.max_input_seq_length=2047",
    ]


def test_bad_input_is_a_message_not_a_traceback(launcher: CliRunner) -> None:
    result = launcher.invoke(
        stage_launcher.cli, ["plan", "--set", "policy.megatron_cfg.tensr_model_parallel_size=2"]
    )
    assert result.exit_code == 2
    assert "Traceback" not in result.stderr
    assert "did you mean 'tensor_model_parallel_size'" in result.stderr


def test_render_writes_what_nemo_rl_reads(launcher: CliRunner, tmp_path: Path) -> None:
    result = launcher.invoke(stage_launcher.cli, ["render", str(tmp_path / "out")])
    assert result.exit_code == 0, result.stderr
    # With the default profile's save deadline (launch.time_budget): from its time limit.
    config = make_plan(dapo_gb200).framework_config
    deadline = {"checkpoint_must_save_by": "00:07:30:00"}
    config = {**config, "checkpointing": {**config["checkpointing"], **deadline}}
    written = tmp_path / "out" / "config.yaml"
    assert yaml.safe_load(written.read_text()) == config
    # NeMo-RL reads it with OmegaConf (YAML 1.1): floats must stay floats.
    assert OmegaConf.to_container(OmegaConf.load(written), resolve=True) == config
    plan = json.loads((tmp_path / "out" / "plan.json").read_text())
    assert plan["config"] == config


def test_launcher_without_a_stage_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(stage_launcher.STAGE_VARIABLE, raising=False)
    result = CliRunner().invoke(stage_launcher.cli, ["plan"])
    assert result.exit_code == 2 and "RECIPEKIT_STAGE" in result.stderr


def test_general_cli_plans_any_recipe_object() -> None:
    result = CliRunner().invoke(recipekit_cli.cli, ["plan", "recipes.super3.dapo:dapo_b200"])
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("dapo-b200: ")


def test_general_cli_names_a_missing_attribute() -> None:
    result = CliRunner().invoke(recipekit_cli.cli, ["plan", "recipes.super3.dapo:dapo_gb20"])
    assert result.exit_code == 2
    assert "did you mean 'dapo_gb200'" in result.stderr


def test_a_recipe_file_with_a_bad_value_points_at_its_line(tmp_path: Path) -> None:
    recipe = tmp_path / "bad_recipe.py"
    recipe.write_text(
        "from recipekit.nemo_rl.schema_super_v3 import Cluster\n"
        "\n"
        "recipe = Cluster(num_nodes=0)\n"
    )
    result = CliRunner().invoke(recipekit_cli.cli, ["plan", f"{recipe}:recipe"])
    assert result.exit_code == 2
    assert f"{recipe}:3" in result.stderr
    assert "cluster.num_nodes = 0: must be >= 1" in result.stderr


def test_expand_prints_resolved_json(reference_dir: Path) -> None:
    source = (
        reference_dir
        / "nemo-rl/super-v3/examples/configs/recipes/llm"
        / "dapo17k_nemotron_super_120b_gb200_5x4_noncolocated.yaml"
    )
    result = CliRunner().invoke(recipekit_cli.cli, ["expand", str(source)])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["policy"]["train_global_batch_size"] == 512


def test_set_refuses_interpolation_naming_the_key() -> None:
    # NeMo-RL would resolve it when it loads config.yaml: the key would be the W&B run name.
    result = CliRunner().invoke(
        recipekit_cli.cli, ["plan", GB200, "--set", "logger.wandb.name=${oc.env:WANDB_API_KEY}"]
    )
    assert result.exit_code == 2
    (line,) = result.stderr.splitlines()
    assert "logger.wandb.name = '${oc.env:WANDB_API_KEY}': holds OmegaConf interpolation" in line


def test_expand_refuses_a_defaults_that_names_itself(tmp_path: Path) -> None:
    source = tmp_path / "loop.yaml"
    source.write_text("defaults: loop.yaml\npolicy: {}\n")
    result = CliRunner().invoke(recipekit_cli.cli, ["expand", str(source)])
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        f"error: {source}: defaults: is a cycle (loop.yaml -> loop.yaml) (a file is read once)"
    ]


def test_lineage_draws_the_super35_pipeline(tmp_path: Path) -> None:
    out = tmp_path / "lineage.svg"
    result = CliRunner().invoke(recipekit_cli.cli, ["lineage", "--out", str(out)])
    assert result.exit_code == 0, result.stderr
    svg = out.read_text()
    for name in ("rlvr", "super35-sft-model", "super35-rl-rlvr-model", "mopd-phase2"):
        assert name in svg


def test_layout_moves_a_stage_to_other_nodes() -> None:
    result = CliRunner().invoke(
        recipekit_cli.cli, ["layout", GB200, "--nodes", "3", "--node", "B200", "--top", "2"]
    )
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("dapo-gb200 on 3 x B200 (8 x B200, 180 GiB): ")
    header = ["#", "layout", "peak", "phase", "peak", "%", "headroom", "GiB", "comm"]
    assert lines[2].split() == header
    assert "      hardware=Hardware(B200_NODE, num_nodes=3)," in lines
    assert "layout dapo-gb200: pricing: started (" in result.stderr  # progress: stderr


def test_layout_json_and_a_stage_name_with_a_typo() -> None:
    result = CliRunner().invoke(
        recipekit_cli.cli, ["layout", GB200, "--top", "1", "--format", "json"]
    )
    assert result.exit_code == 0, result.stderr
    found = json.loads(result.stdout)
    assert found["candidates"][0]["overrides"] == {}  # the guide's own layout is the best
    result = CliRunner().invoke(recipekit_cli.cli, ["layout", "dapo-gb20"])
    assert result.exit_code == 2
    assert result.stderr.startswith(
        "error: dapo-gb20: no stage of that name (did you mean 'dapo-gb200'"
    )


def test_general_render_writes_what_the_framework_reads(tmp_path: Path) -> None:
    out = tmp_path / "rendered"
    result = CliRunner().invoke(recipekit_cli.cli, ["render", GB200, str(out)])
    assert result.exit_code == 0, result.stderr
    assert sorted(p.name for p in out.iterdir()) == ["config.yaml", "plan.json"]
    plan = make_plan(dapo_gb200)
    assert yaml.safe_load((out / "config.yaml").read_text()) == plan.framework_config
    assert json.loads((out / "plan.json").read_text())["hash"] == plan.hash
    assert f"plan {plan.hash}" in result.stdout
    result = CliRunner().invoke(recipekit_cli.cli, ["render", "recipes.super3.dapo:nope", str(out)])
    assert result.exit_code == 2 and "nope" in result.stderr


def test_snapshots_update_then_check_through_the_cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from recipekit.review import snapshots
    from recipekit.review.discover import StageRef

    folder = tmp_path / "recipes" / "team"
    folder.mkdir(parents=True)
    stage = [StageRef("recipes.team.rl", "dapo_gb200", dapo_gb200, folder / "rl.py")]
    monkeypatch.setattr(snapshots, "discover_stages", lambda root: stage)
    cli = recipekit_cli.cli

    missing = CliRunner().invoke(cli, ["snapshots", "--root", str(tmp_path)])
    assert missing.exit_code == 1 and "recipes.team.rl:dapo_gb200" in missing.stderr
    updated = CliRunner().invoke(cli, ["snapshots", "--update", "--root", str(tmp_path)])
    assert updated.exit_code == 0, updated.stderr
    assert updated.stdout.splitlines()[-1] == "5 snapshot files changed"
    assert (folder / "snapshots" / "dapo-gb200" / "config.yaml").is_file()
    checked = CliRunner().invoke(cli, ["snapshots", "--root", str(tmp_path)])
    assert checked.exit_code == 0 and checked.stdout == "snapshots match\n"

    moved = dapo_gb200.with_values({"policy.max_total_sequence_length": 2048})
    stage[0] = StageRef("recipes.team.rl", "dapo_gb200", moved, folder / "rl.py")
    changed = CliRunner().invoke(cli, ["snapshots", "--root", str(tmp_path)])
    assert changed.exit_code == 1
    assert "~ config.policy.max_total_sequence_length: 1024 -> 2048" in changed.stderr


def test_plan_as_its_own_process_ends_with_its_output_and_status(tmp_path: Path) -> None:
    # Run as the process's main, `plan` ends the process itself once its output is flushed
    # (common.ends_without_teardown): all of the output, then the status, refusals included.
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[4]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root / "src/python"), str(root)])}
    # An exit handler the process would run at its teardown, which it skips.
    main = (
        "import atexit; atexit.register(print, 'teardown'); "
        "from recipekit.cli.recipekit_cli import main; main()"
    )
    stage = "recipes.super3.dapo:dapo_gb200"

    def plan(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-c", main, "plan", stage, *args]
        return subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path)

    planned = plan("--format", "json")
    assert planned.returncode == 0, planned.stderr
    assert json.loads(planned.stdout)["stage"] == "dapo-gb200"  # whole: no "teardown" after
    refused = plan("--set", "grpo.num_prompts_per_step=0")
    assert refused.returncode == 2 and "teardown" not in refused.stdout
    assert refused.stderr.startswith("error: ") and "grpo.num_prompts_per_step" in refused.stderr
    # A reader that goes away before the plan is printed (plan | head): quiet, SIGPIPE's status.
    command = [sys.executable, "-c", main, "plan", stage]
    gone = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert gone.stdout is not None
    gone.stdout.close()
    _, errors = gone.communicate()
    assert (gone.returncode, errors) == (141, b"")
