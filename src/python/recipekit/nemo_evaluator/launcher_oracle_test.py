"""NeMo Evaluator's own launcher as the oracle for the eval stage's compiled config.

The test runs the real ``nemo-evaluator-launcher`` (0.2.6, from PyPI, in a resolve of its own:
``3rdparty/python:nemo-evaluator-launcher``) exactly as the stage's job script calls it, with
``--dry-run`` added, in a network namespace with only loopback: the launcher composes the config
with its own defaults (Hydra), resolves every task against its own registry and prints the
Slurm job of each task. The test reads those jobs, not recipekit's plan.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import attrs
import pytest
import yaml

from recipekit.launch.profile import Pyxis
from recipekit.launch.profiles import default_profile_for
from recipekit.launch.run_dir import CONFIG_FILE
from recipekit.launch.run_files import run_files
from recipekit.plan import make_plan
from recipekit.stage import Stage
from recipes.super35.evaluation import evaluation

LAUNCHER = Path("3rdparty.python/nemo-evaluator-launcher.pex")
IMAGE = "vllm/vllm-openai@sha256:" + "5e" * 32
SEED_TASKS = ["ns_mmlu_pro", "ns_gpqa", "ns_aime2025", "ns_livecodebench", "ns_ifbench"]


def _launcher_argv(
    stage: Stage,
    tmp_path: Path,
    overrides: tuple[str, ...] = (),
    script_arguments: tuple[str, ...] = (),
) -> list[str]:
    """The job script's launcher command, with the config written where the command reads it
    and ``script_arguments`` where the script passes its own ("$@")."""
    plan = make_plan(stage, overrides)
    profile = default_profile_for(stage.hardware.node.name)
    assert profile is not None and isinstance(profile.container, Pyxis)
    profile = attrs.evolve(profile, container=attrs.evolve(profile.container, image=IMAGE))
    files = run_files(plan, profile)
    assert files.job_script is not None
    command = files.job_script.split("exec ", 1)[1].replace("\\\n", " ")
    argv = shlex.split(command)
    config = tmp_path / CONFIG_FILE
    config.write_text(files.config)
    assert argv[-1] == "$@"
    arguments = [str(config) if a.endswith(CONFIG_FILE) else a for a in argv[1:-1]]
    return [str(LAUNCHER.resolve()), *arguments, *script_arguments]


def _dry_run(argv: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path / "home"),
        "PEX_ROOT": str(tmp_path / "pex-root"),
        # What a submit host's shell has: the launcher reads both.
        "USER": "recipekit-test",
        "HF_TOKEN": "not-a-real-token",
    }
    # Only loopback: the launcher must render the jobs without reaching anything.
    isolate = ["unshare", "--net"] if shutil.which("unshare") and os.geteuid() == 0 else []
    return subprocess.run(
        [*isolate, *argv, "--dry-run"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )


def _jobs(stdout: str) -> list[str]:
    """The Slurm script the launcher printed for each task."""
    parts = re.split(r"=+ Task \d+ =+", stdout)
    return [part for part in parts[1:] if "#SBATCH" in part]


def test_the_launcher_renders_the_eval_stages_jobs(tmp_path: Path) -> None:
    argv = _launcher_argv(evaluation, tmp_path)
    assert argv[1:3] == ["run", "--config"]
    done = _dry_run(argv, tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    jobs = _jobs(done.stdout)
    assert len(jobs) == len(SEED_TASKS)
    config = yaml.safe_load((tmp_path / CONFIG_FILE).read_text())
    profile = default_profile_for(evaluation.hardware.node.name)
    assert profile is not None and profile.artifact_store is not None
    checkpoint = config["deployment"]["checkpoint_path"]
    # Its jobs run outside recipekit's containers: the store at its host path.
    assert checkpoint == f"{profile.artifact_store.path}/super35-rl-mopd-phase2-hf-model/latest"
    for index, (task, job) in enumerate(zip(SEED_TASKS, jobs, strict=True)):
        name = f"{profile.account}-nemo-evaluator-launcher.{task}.{index}"
        assert f"#SBATCH --job-name {name}" in job
        assert f"#SBATCH --partition {profile.partition}" in job
        assert f"#SBATCH --account {profile.account}" in job
        assert "#SBATCH --gres gpu:4" in job
        # vLLM by digest, the stage's checkpoint mounted where vllm serve reads it, TP 4.
        assert f"--container-image {IMAGE}" in job
        assert f"{checkpoint}:/checkpoint:ro" in job
        assert "vllm serve /checkpoint --tensor-parallel-size=4" in job
        assert "--mamba-ssm-cache-dtype float32" in job


def test_a_task_the_launcher_does_not_know_fails_naming_it(tmp_path: Path) -> None:
    argv = _launcher_argv(evaluation, tmp_path)
    config = tmp_path / CONFIG_FILE
    broken = yaml.safe_load(config.read_text())
    broken["evaluation"]["tasks"][1]["name"] = "ns_gpqa_typo"
    config.write_text(yaml.safe_dump(broken, sort_keys=False))
    done = _dry_run(argv, tmp_path)
    assert done.returncode != 0
    assert "ns_gpqa_typo" in done.stdout + done.stderr


@pytest.mark.parametrize("tensor_parallel", [2])
def test_a_layout_override_reaches_the_rendered_job(tensor_parallel: int, tmp_path: Path) -> None:
    override = f"deployment.tensor_parallel_size={tensor_parallel}"
    done = _dry_run(_launcher_argv(evaluation, tmp_path, (override,)), tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    for job in _jobs(done.stdout):
        assert f"vllm serve /checkpoint --tensor-parallel-size={tensor_parallel}" in job


def test_a_pipeline_makes_the_launchers_job_wait_for_the_export(tmp_path: Path) -> None:
    # What `pipeline submit` gives the script when the HF export is job 4242.
    waiting = tuple(evaluation.framework.waiting_for(["4242"]))
    done = _dry_run(_launcher_argv(evaluation, tmp_path, script_arguments=waiting), tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    jobs = _jobs(done.stdout)
    assert jobs and all("#SBATCH --dependency afterok:4242" in job for job in jobs)
