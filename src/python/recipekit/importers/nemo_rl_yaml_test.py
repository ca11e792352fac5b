"""import-yaml: which NeMo-RL version and entry point a YAML is for, what the written module says
(derivations, comments, run-time environment references, several datasets, the escape hatch),
and what compiling it refuses. The whole corpus round-trips in nemo_rl_yaml_corpus_test.py."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import attrs
import pytest
from click.testing import CliRunner

from recipekit.cli.recipekit_cli import cli
from recipekit.errors import RecipeError
from recipekit.importers.nemo_rl_yaml import (
    Imported,
    ImportedRecipe,
    compile_object,
    fit,
    import_yaml,
    load_keeping_env,
)
from recipekit.importers.yaml_comments import chain_source
from recipekit.loading import load_object
from recipekit.nemo_rl import NEMO_RL_VERSION
from recipekit.nemo_rl import algorithms as nemo_rl
from recipekit.nemo_rl.run_env import from_env
from recipekit.nemo_rl.schema_main import DatasetMain
from recipekit.nemo_rl.yaml_loader import expand
from recipekit.stage import Stage

V3 = "nemo-rl/super-v3/examples/configs"
MAIN = "nemo-rl/main/examples"
GB200 = f"{V3}/recipes/llm/dapo17k_nemotron_super_120b_gb200_5x4_noncolocated.yaml"
SWE1 = f"{MAIN}/configs/recipes/llm/grpo-qwen3-1.7b-1n8g-megatron-super-swe1.yaml"


def _import(reference_dir: Path, name: str, tmp_path: Path, **kwargs: Any) -> tuple[Imported, Path]:
    imported = import_yaml(reference_dir / name, **kwargs)
    module = tmp_path / f"{Path(name).stem.replace('.', '_').replace('-', '_')}.py"
    module.parent.mkdir(parents=True, exist_ok=True)
    module.write_text(imported.source)
    return imported, module


def _stage(module: Path) -> Stage:
    recipe = load_object(f"{module}:recipe")
    return recipe.stage if isinstance(recipe, ImportedRecipe) else recipe


@pytest.mark.parametrize(
    ("name", "framework"),
    [
        (GB200, nemo_rl.NEMO_RL_GRPO),
        (f"{V3}/super/stage1_rlvr.yaml", nemo_rl.NEMO_RL_GYM_GRPO),
        (f"{V3}/vlm_grpo_3B.yaml", nemo_rl.NEMO_RL_VLM_GRPO),
        (f"{V3}/sft.yaml", nemo_rl.NEMO_RL_SFT),
        (f"{V3}/sft_vlm_3B.yaml", nemo_rl.NEMO_RL_VLM_SFT),
        (f"{V3}/dpo.yaml", nemo_rl.NEMO_RL_DPO),
        (f"{V3}/rm.yaml", nemo_rl.NEMO_RL_RM),
        (f"{V3}/distillation_math.yaml", nemo_rl.NEMO_RL_DISTILLATION),
        (f"{MAIN}/configs/grpo_math_1B.yaml", nemo_rl.NEMO_RL_SUPER35_GRPO),
        (
            f"{MAIN}/configs/recipes/vlm/mopd-nemotron-super-omni-120ba12b-4n8g-smoke.v1.yaml",
            nemo_rl.NEMO_RL_SUPER35,
        ),
        (f"{MAIN}/nemo_gym/nemotron-3-super/stage2_swe1.yaml", nemo_rl.NEMO_RL_SUPER35_GYM_GRPO),
        (f"{MAIN}/configs/sft.yaml", nemo_rl.NEMO_RL_SUPER35_SFT),
        (f"{MAIN}/configs/dpo.yaml", nemo_rl.NEMO_RL_SUPER35_DPO),
        (
            f"{MAIN}/configs/xtoken_off_policy_distillation.yaml",
            nemo_rl.NEMO_RL_SUPER35_XTOKEN_DISTILLATION,
        ),
        (f"{MAIN}/configs/ppo_math_1B.yaml", nemo_rl.NEMO_RL_SUPER35_PPO),
        (f"{MAIN}/configs/evals/eval.yaml", nemo_rl.NEMO_RL_SUPER35_EVAL),
    ],
)
def test_the_module_names_the_version_and_entry_point_it_targets(
    name: str, framework: Any, reference_dir: Path, tmp_path: Path
) -> None:
    imported, module = _import(reference_dir, name, tmp_path)
    assert imported.framework is framework
    assert imported.schema == ("super-v3" if "/super-v3/" in name else "main")
    version = NEMO_RL_VERSION if imported.schema == "super-v3" else nemo_rl.SUPER35_VERSION
    stage = _stage(module)
    assert (stage.framework.name, stage.framework.version) == ("nemo-rl", version)
    assert stage.framework.entry_point == framework.entry_point
    assert isinstance(stage.config, framework.config_type)
    imports = re.findall(
        r"^from recipekit\.nemo_rl\.\w+ import (NEMO_RL_\w+)$", imported.source, re.M
    )
    assert len(imports) == 1 and getattr(nemo_rl, imports[0]) is framework


def test_an_interpolated_key_comes_back_as_a_derivation(
    reference_dir: Path, tmp_path: Path
) -> None:
    imported, module = _import(reference_dir, GB200, tmp_path)
    assert "max_model_len=DERIVED" in imported.source
    longer = _stage(module).with_values({"policy.max_total_sequence_length": 4096})
    config, _ = compile_object(longer)
    assert config["policy"]["generation"]["vllm_cfg"]["max_model_len"] == 4096


# --- what the version lacks or requires ------------------------------------------------------


def test_a_main_only_key_against_super_v3_is_an_error_naming_it(
    reference_dir: Path, tmp_path: Path
) -> None:
    _, module = _import(reference_dir, GB200, tmp_path)
    with pytest.raises(RecipeError) as failure:
        _stage(module).with_values({"grpo.val_start_at": 1})
    assert [(i.path, i.message) for i in failure.value.issues] == [
        ("grpo.val_start_at", "unknown key")
    ]
    # Written into the module, `recipekit compile` reports it at its key path.
    source = module.read_text().replace(
        "    val_at_start=True,", "    val_start_at=1,\n    val_at_start=True,", 1
    )
    module.write_text(source)
    result = CliRunner().invoke(cli, ["compile", str(module)])
    assert result.exit_code != 0
    assert "grpo.val_start_at" in result.output and "unknown key" in result.output


def test_the_same_key_compiles_against_main(reference_dir: Path, tmp_path: Path) -> None:
    _, module = _import(reference_dir, f"{MAIN}/configs/grpo_math_1B.yaml", tmp_path)
    config, _ = compile_object(_stage(module).with_values({"grpo.val_start_at": 5}))
    assert config["grpo"]["val_start_at"] == 5


def test_a_key_the_version_requires_cannot_be_left_out(reference_dir: Path, tmp_path: Path) -> None:
    # super-v3's SFTConfig requires every key; main's gives each a default.
    for branch in ("super-v3/examples/configs", "main/examples/configs"):
        _, module = _import(reference_dir, f"nemo-rl/{branch}/sft.yaml", tmp_path / branch)
        head, sft = module.read_text().split("\nsft = ", 1)
        module.write_text(head + "\nsft = " + sft.replace("    seed=42,\n", "", 1))
        result = CliRunner().invoke(cli, ["compile", str(module)])
        if branch.startswith("super-v3"):
            assert result.exit_code != 0
            assert "sft.seed: required key is missing" in result.output
        else:
            assert result.exit_code == 0, result.output
            assert "seed" not in json.loads(result.stdout)["sft"]


def test_a_config_another_version_reads_is_an_error(reference_dir: Path, tmp_path: Path) -> None:
    _, module = _import(reference_dir, f"{MAIN}/configs/sft.yaml", tmp_path)
    on_super_v3 = attrs.evolve(_stage(module), framework=nemo_rl.NEMO_RL_SFT)
    with pytest.raises(RecipeError) as failure:
        compile_object(on_super_v3)
    assert "reads a SFTMasterConfig" in failure.value.render()


def test_an_algorithm_super_v3_has_no_entry_point_for(reference_dir: Path) -> None:
    with pytest.raises(RecipeError) as failure:
        import_yaml(reference_dir / MAIN / "configs/ppo_math_1B.yaml", schema="super-v3")
    assert "super-v3 has no entry point for ppo" in failure.value.render()


# --- ${oc.env:...} ------------------------------------------------------------------------------


def test_environment_references_stay_run_time_references(
    reference_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HF_HOME", raising=False)
    imported, module = _import(reference_dir, SWE1, tmp_path)
    assert "data_path=from_env('HF_HOME') + '/superv3_data/swe1/train-split.jsonl'" in (
        imported.source
    )
    config, _ = compile_object(load_object(f"{module}:recipe"))
    assert (
        config["data"]["train"]["data_path"]
        == "${oc.env:HF_HOME}/superv3_data/swe1/train-split.jsonl"
    )
    assert config["env"]["nemo_gym"]["uv_venv_dir"] == "${oc.env:HF_HOME}/gym_venvs"


def test_from_env_writes_omegaconfs_reference() -> None:
    assert from_env("HF_HOME") == "${oc.env:HF_HOME}"
    assert from_env("HF_HOME", "/tmp") == "${oc.env:HF_HOME,/tmp}"
    with pytest.raises(RecipeError):
        from_env("not a name")


# --- comments -----------------------------------------------------------------------------------


def test_comments_of_the_yaml_and_its_parents_stay_beside_their_values(
    reference_dir: Path, tmp_path: Path
) -> None:
    imported, _ = _import(reference_dir, GB200, tmp_path)
    source = imported.source
    # From the parent grpo_math_1B.yaml, on the line above the key.
    assert (
        "        # Use \"reinforce_plus_plus\" for Reinforce++ estimator\n        name='grpo',"
        in source
    )
    # From the file itself, at the end of the key's line.
    assert "        # vLLM on dedicated node: can use TP=4 for better performance\n" in source
    # The file's header opens the module.
    assert "# The YAML's header:\n# DAPO-style run on DAPO-Math-17k" in source
    # Entries of the escape hatch keep theirs, after why they are there.
    swe1, _ = _import(reference_dir, SWE1, tmp_path)
    assert (
        "    # Register the expected key here as an alias pointing to the same server.\n"
        "    'env.nemo_gym.single_step_tool_use_with_argument_comparison_swe': {"
    ) in swe1.source


def test_a_child_that_sets_a_key_again_takes_its_comment(tmp_path: Path) -> None:
    (tmp_path / "base.yaml").write_text(
        "# ==========\n"
        "# Policy\n"
        "# ==========\n"
        "policy:\n"
        "  lr: 1.0  # the base's rate\n"
        "  steps: 10  # the base's steps\n"
        "             # (continued)\n"
        "  # explains size\n"
        "  size: ${policy.steps}\n"
        "    # indented deeper: ends the block before it, says nothing of warmup\n"
        "  warmup: 1\n"
        "loss:\n"
        "  kind: a  # the base's loss\n"
    )
    (tmp_path / "child.yaml").write_text(
        "# The child.\n"
        "\n"
        "defaults: base.yaml\n"
        "policy:\n"
        "  lr: 2.0\n"
        "loss:\n"
        "  _override_: true\n"
        "  other: b\n"
    )
    source = chain_source(tmp_path / "child.yaml")
    assert source.header == ("The child.",)
    # lr is set again without a comment, loss replaced whole (_override_): theirs are gone.
    assert source.comments == {
        "policy": ("Policy",),
        "policy.steps": ("the base's steps", "(continued)"),
        "policy.size": ("explains size",),
    }
    assert source.expressions == {"policy.size": "${policy.steps}"}


# --- several datasets, the escape hatch, absent keys ----------------------------------------------


def test_several_training_datasets_are_a_tuple_of_typed_datasets(
    reference_dir: Path, tmp_path: Path
) -> None:
    name = f"{MAIN}/configs/grpo_multiple_datasets.yaml"
    imported, module = _import(reference_dir, name, tmp_path)
    assert "    train=(\n        DatasetMain(\n            dataset_name='OpenMathInstruct-2'," in (
        imported.source
    )
    stage = _stage(module)
    assert [d.dataset_name for d in stage.config.data.train] == ["OpenMathInstruct-2", "DeepScaler"]
    one = stage.with_values({"data.train": (DatasetMain(dataset_name="DeepScaler"),)})
    config, _ = compile_object(one)
    assert config["data"]["train"] == [{"dataset_name": "DeepScaler"}]
    assert len(expand(reference_dir / name)["data"]["train"]) == 2


def test_untyped_keys_are_kept_and_say_why(reference_dir: Path, tmp_path: Path) -> None:
    name = f"{MAIN}/nemo_gym/nemotron-3-ultra/reasoning_teacher.yaml"
    imported, module = _import(reference_dir, name, tmp_path)
    why = {w.path: w.message for w in imported.warnings}
    assert why["grpo.use_best_at_k"] == "unknown to the typed schema"
    # null is "set by the launcher": the typed dataset wants a path, the hatch keeps the null.
    assert why["data.train.data_path"] == "the typed schema rejects it: expected a string"
    assert "    'data.train.data_path': None," in imported.source
    config, warnings = compile_object(load_object(f"{module}:recipe"))
    assert config["data"]["train"]["data_path"] is None
    assert {w.path for w in warnings} == set(why)


def test_a_rejected_section_moves_whole_with_the_keys_moved_out_of_it_before(
    reference_dir: Path,
) -> None:
    from recipekit.nemo_rl.schema_grpo_examples import GRPOExamplesConfigMain

    data = load_keeping_env(reference_dir / MAIN / "configs/grpo_math_1B.yaml", {}).resolved
    data["policy"]["generation"]["made_up_key"] = 1
    data["policy"]["generation"]["backend"] = "no-such-backend"
    fitted = fit(data, GRPOExamplesConfigMain)
    value, why = fitted.untyped["policy.generation"]
    assert (value["made_up_key"], value["backend"]) == (1, "no-such-backend")
    assert "policy.generation.made_up_key" not in fitted.untyped
    assert why.startswith("the typed schema rejects it: backend = 'no-such-backend'")
    # The key moved in with it keeps its own reason, so a typo is not hidden by the section.
    assert why.endswith("; made_up_key: unknown to the typed schema")


def test_two_rejected_keys_of_one_optional_section_move_it_alone(reference_dir: Path) -> None:
    # PPO's examples keep a Megatron generation section beside backend vllm that lacks keys
    # main's MCoreGenerationSpecificArgs requires: the first rejection moves the section, and
    # the rest, under it, moved with it; the generation section around it stays typed.
    from recipekit.nemo_rl.schema_grpo_examples import GRPOExamplesConfigMain

    data = load_keeping_env(reference_dir / MAIN / "configs/grpo_math_1B.yaml", {}).resolved
    data["policy"]["generation"]["mcore_generation_config"] = {"buffer_size_gb": 20}
    fitted = fit(data, GRPOExamplesConfigMain)
    assert list(fitted.untyped) == ["policy.generation.mcore_generation_config"]
    _, why = fitted.untyped["policy.generation.mcore_generation_config"]
    assert why.startswith("the typed schema rejects it: expose_http_server: required key")


def test_a_misspelt_key_gets_a_did_you_mean(reference_dir: Path) -> None:
    from recipekit.nemo_rl.schema_grpo_examples import GRPOExamplesConfigMain

    data = load_keeping_env(reference_dir / MAIN / "configs/grpo_math_1B.yaml", {}).resolved
    data["policy"]["generation"]["vllm_cfg"]["gpu_memory_utilisation"] = 0.5
    fitted = fit(data, GRPOExamplesConfigMain)
    _, why = fitted.untyped["policy.generation.vllm_cfg.gpu_memory_utilisation"]
    assert why == "unknown to the typed schema (did you mean 'gpu_memory_utilization'?)"


def test_a_derived_key_the_yaml_leaves_out_stays_out(reference_dir: Path, tmp_path: Path) -> None:
    # main's sft.yaml sets no logprob_batch_size; recipekit would otherwise derive one.
    imported, module = _import(reference_dir, f"{MAIN}/configs/sft.yaml", tmp_path)
    assert "    logprob_batch_size=UNSET,\n" in imported.source
    config, _ = compile_object(load_object(f"{module}:recipe"))
    assert "logprob_batch_size" not in config["policy"]


def test_keys_super_v3_requires_and_no_yaml_sets_are_reported(
    reference_dir: Path, tmp_path: Path
) -> None:
    imported, module = _import(reference_dir, GB200, tmp_path)
    added = ("grpo.penalize_invalid_tool_call", "grpo.penalize_malformed_thinking")
    assert imported.added == added
    assert {w.path for w in imported.warnings} == set(added)
    config, _ = compile_object(load_object(f"{module}:recipe"))
    assert [config["grpo"][k.split(".")[1]] for k in added] == [False, False]


def test_a_small_node_count_runs_on_part_of_an_h100_node(
    reference_dir: Path, tmp_path: Path
) -> None:
    imported, module = _import(reference_dir, f"{MAIN}/configs/evals/eval.yaml", tmp_path)
    stage = _stage(module)
    assert (stage.hardware.node.name, stage.hardware.num_nodes) == ("H100", 1)
    config, _ = compile_object(stage)
    assert config["cluster"] == {"gpus_per_node": 1, "num_nodes": 1}


def test_a_yaml_edited_on_disk_is_read_again(tmp_path: Path) -> None:
    base = tmp_path / "base.yaml"
    base.write_text("a:\n  b: 1\n")
    (tmp_path / "child.yaml").write_text("defaults: base.yaml\nc: ${a.b}\n")
    assert expand(tmp_path / "child.yaml") == {"a": {"b": 1}, "c": 1}
    base.write_text("a:\n  b: 22\n")
    assert expand(tmp_path / "child.yaml") == {"a": {"b": 22}, "c": 22}


def test_an_imported_sft_stage_plans_and_its_cluster_must_fit_the_hardware(
    reference_dir: Path, tmp_path: Path
) -> None:
    from recipekit.framework import Framework
    from recipekit.plan import make_plan

    framework: Framework = nemo_rl.NEMO_RL_SUPER35_SFT  # the protocol plan and launch use
    _, module = _import(reference_dir, f"{MAIN}/configs/sft.yaml", tmp_path)
    stage = _stage(module)
    assert stage.framework is framework
    plan = make_plan(stage).as_json()
    assert plan["framework"]["entry_point"] == "examples/run_sft.py"
    assert plan["layout"] == {"num_nodes": 1, "gpus_per_node": 1}
    with pytest.raises(RecipeError) as failure:
        make_plan(stage, ["cluster.gpus_per_node=16"])
    assert "cluster.gpus_per_node = 16: a H100 node has 8 GPUs" in failure.value.render()


def test_an_imported_megatron_sft_stage_gets_the_megatron_core_layout_rules(
    reference_dir: Path, tmp_path: Path
) -> None:
    # NeMo-RL's SFT entry point builds the same Megatron-Core layout as GRPO: TP 3 cannot
    # divide the one GPU its cluster asks for (before, a non-GRPO stage checked no layout).
    from recipekit.plan import make_plan

    _, module = _import(reference_dir, f"{MAIN}/configs/sft.yaml", tmp_path)
    stage = _stage(module)
    megatron = [
        "policy.dtensor_cfg.enabled=false",
        "policy.megatron_cfg.enabled=true",
    ]
    assert make_plan(stage, megatron).layout.parallel.tp == 1  # type: ignore[attr-defined]
    with pytest.raises(RecipeError) as failure:
        make_plan(stage, [*megatron, "policy.megatron_cfg.tensor_model_parallel_size=3"])
    assert "tensor_model_parallel_size x pipeline_model_parallel_size x" in failure.value.render()
    assert "does not divide the 1 GPUs of NeMo-RL's cluster" in failure.value.render()


def test_a_typed_base_types_every_key_and_cites_its_pinned_source(reference_dir: Path) -> None:
    from recipekit.importers.upstream import Upstream

    upstream = Upstream("nemo-rl/main", "NVIDIA-NeMo/RL", "0123456789abcdef", "x.yaml")
    base = import_yaml(reference_dir / MAIN / "configs/grpo_math_1B.yaml", upstream=upstream)
    assert "\nNVIDIA-NeMo/RL at 0123456789ab: x.yaml\n" in base.source
    assert "UPSTREAM = 'nemo-rl/main/x.yaml'" in base.source
    assert "\nconfig = GRPO" in base.source and "#" not in base.source.split("config = ")[1]
    name = f"{MAIN}/nemo_gym/nemotron-3-ultra/reasoning_teacher.yaml"
    with pytest.raises(RecipeError, match="a typed base types every key") as caught:
        import_yaml(reference_dir / name, upstream=upstream)
    assert "grpo.use_best_at_k" in {i.path for i in caught.value.issues}


def test_base_refuses_a_file_that_is_not_pinned(reference_dir: Path, tmp_path: Path) -> None:
    copy = tmp_path / "grpo.yaml"
    copy.write_text((reference_dir / MAIN / "configs/grpo_math_1B.yaml").read_text())
    result = CliRunner().invoke(cli, ["import-yaml", "--base", str(copy)])
    assert result.exit_code != 0
    assert "not in the reference folder" in result.output
    assert "Traceback" not in result.output
