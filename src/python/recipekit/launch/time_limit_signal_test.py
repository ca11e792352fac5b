"""Slurm's signal before the time limit (issue 42): where the job script arms it, what its trap
does for a framework that saves on a signal (Megatron-Bridge) and one that does not (NeMo-RL),
and how the launcher and the head treat the stop that follows."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import attrs

from recipekit.launch import continuation
from recipekit.launch.framework_process import run_framework
from recipekit.launch.job_script import render_job_script
from recipekit.launch.profile import NoContainer, Tracking
from recipekit.launch.run_dir import RunDir
from recipekit.launch.run_files import run_files
from recipekit.launch.time_budget import time_budget
from recipekit.plan import make_plan
from recipes.clusters import PROFILES
from recipes.super3.dapo import dapo_b200
from recipes.super35.sft import sft_tiny


def _profile(name: str, tmp_path: Path, **changes: Any) -> Any:
    (tmp_path / "runs").mkdir(exist_ok=True)
    local = {"container": NoContainer(), "runs_dir": str(tmp_path / "runs"), "artifact_store": None}
    return attrs.evolve(PROFILES[name], **{"tracking": Tracking(mode="off"), **local, **changes})


def test_the_signal_is_armed_where_slurm_cannot_send_it_before_the_job_starts(
    tmp_path: Path,
) -> None:
    plan = make_plan(sft_tiny)
    # Slurm may signal up to 60 s early: a lead of 30 s needs a limit of at least 90 s.
    armed = time_budget(
        plan, _profile("h100", tmp_path, time_limit="00:02:00", time_limit_signal_s=30)
    )
    assert armed is not None and armed.signal_armed
    unarmed = time_budget(plan, _profile("h100", tmp_path, time_limit="00:02:00"))
    assert unarmed is not None and not unarmed.signal_armed  # 120 s + 60 s > 2 min
    assert "no time-limit signal" in unarmed.lines()[-1]


def test_megatron_bridge_saves_on_the_signal_nemo_rl_is_requeued(tmp_path: Path) -> None:
    profile = _profile("h100", tmp_path, time_limit="04:00:00")
    sft = make_plan(sft_tiny)
    budget = time_budget(sft, profile)
    assert budget is not None and budget.save_signal == "SIGTERM"
    files = run_files(sft, profile)
    # The switch is on in the config and in the arguments run_recipe.py reads.
    assert "exit_signal_handler: true" in files.config
    assert "train.exit_signal_handler=true" in json.loads(files.plan)["framework"]["arguments"]
    assert json.loads(files.plan)["time_budget"]["save_signal"] == "SIGTERM"
    assert "the framework's step gets SIGTERM, it saves and stops" in budget.lines()[-1]
    script = files.job_script or ""
    assert 'scancel --signal=TERM "$SLURM_JOB_ID"' in script
    assert "scontrol requeue" not in script.split("on_time_limit() {")[1].split("}")[0]
    # Turned off in the recipe: no save on the signal, and the trap requeues instead.
    off = make_plan(sft_tiny.with_values({"train.exit_signal_handler": False}))
    off_budget = time_budget(off, profile)
    assert off_budget is not None and off_budget.save_signal is None
    # NeMo-RL has no save on a signal: past its deadline the trap requeues the job.
    rl = time_budget(make_plan(dapo_b200), _profile("b200", tmp_path))
    assert rl is not None and rl.save_signal is None
    assert "requeues itself to resume from its newest checkpoint" in rl.lines()[-1]


def _trap_script(tmp_path: Path, body: str) -> str:
    """The job script's functions of the Megatron-Bridge stage, then ``body``."""
    profile = _profile("h100", tmp_path, time_limit="04:00:00")
    budget = time_budget(make_plan(sft_tiny), profile)
    functions = continuation.script_functions(budget, RunDir(tmp_path / "run"))
    return "\n".join(["set -euo pipefail", *functions, body])


def test_the_trap_marks_the_attempt_and_signals_the_frameworks_step(tmp_path: Path) -> None:
    (tmp_path / "run").mkdir()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls"
    (bin_dir / "scancel").write_text(f'#!/bin/sh\necho "$@" >> {calls}\n')
    (bin_dir / "scancel").chmod(0o755)
    # The framework's step: a child that ends once scancel (here: this script) was called.
    body = f"""\
( while [ ! -s {calls} ]; do sleep 0.05; done ) &
framework_step=$!
kill -USR1 $$
wait_step "$framework_step"
echo "step ended"
"""
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "SLURM_JOB_ID": "41"}
    env["SLURM_RESTART_COUNT"] = "2"
    done = subprocess.run(
        ["bash", "-c", _trap_script(tmp_path, body)],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    assert calls.read_text().split() == ["--signal=TERM", "41"]
    assert (tmp_path / "run" / continuation.SIGNALLED_FILE).read_text().split() == ["41", "2"]
    assert "asking the framework to save and stop (SIGTERM to its step)" in " ".join(
        done.stderr.split()
    )
    assert done.stdout.strip() == "step ended"
    # Outside the framework's step: nothing to save, nothing signalled.
    calls.unlink()
    outside = subprocess.run(
        ["bash", "-c", _trap_script(tmp_path, "kill -USR1 $$; echo after")],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert outside.stdout.strip() == "after" and not calls.exists()
    assert "outside the framework's step" in outside.stderr


SAVER = """\
import os, signal, sys, time
saved = []
signal.signal(signal.SIGTERM, lambda *_: saved.append(1))
with open(sys.argv[1], "w") as out:
    out.write(f"ready {os.getpid()}\\n")
while not saved:
    time.sleep(0.01)
time.sleep(0.5)  # the save: longer than the grace a stopped child gets before SIGKILL
with open(sys.argv[1], "a") as out:
    out.write("saved\\n")
"""


def test_the_launcher_lets_the_framework_save_on_the_time_limit_signal(tmp_path: Path) -> None:
    out = tmp_path / "out"

    def signal_the_step() -> None:
        # As Slurm signals every process of a step: the framework and its launcher (this one).
        while not out.exists() or "ready" not in out.read_text():
            time.sleep(0.01)
        os.kill(int(out.read_text().split()[1]), signal.SIGTERM)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=signal_the_step, daemon=True).start()
    logged: list[str] = []
    status = run_framework(
        [sys.executable, "-c", SAVER, str(out)],
        str(tmp_path),
        os.environ,
        grace_s=0.1,
        saving=lambda signum: signum == signal.SIGTERM,
        log=logged.append,
    )
    assert status == 0 and out.read_text().split()[-1] == "saved"
    assert logged == ["SIGTERM: the framework saves and stops; waiting for it"]


def test_the_job_script_of_a_megatron_bridge_stage_passes_bash(tmp_path: Path) -> None:
    profile = _profile("h100", tmp_path, time_limit="04:00:00")
    script = render_job_script(make_plan(sft_tiny), profile, RunDir(tmp_path / "run"))
    assert "#SBATCH --signal=B:USR1@120" in script.splitlines()
    subprocess.run(["bash", "-n"], input=script, text=True, check=True)


def test_nemo_rl_past_its_deadline_at_the_signal_is_requeued(tmp_path: Path) -> None:
    """NeMo-RL cannot save on a signal: the trap requeues a job whose framework still runs past
    its save deadline (its start-up outran the allowance), and leaves one that could yet save."""
    (tmp_path / "run").mkdir()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls"
    for tool in ("scontrol", "scancel"):
        (bin_dir / tool).write_text(f'#!/bin/sh\necho "{tool} $*" >> {calls}\n')
        (bin_dir / tool).chmod(0o755)
    budget = time_budget(make_plan(dapo_b200), _profile("b200", tmp_path))  # 8 h, 7:30:00
    assert budget is not None and budget.save_signal is None
    functions = continuation.script_functions(budget, RunDir(tmp_path / "run"))
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "SLURM_JOB_ID": "9"}

    def signalled_at(seconds: int) -> subprocess.CompletedProcess[str]:
        body = f"SECONDS={seconds}\nkill -USR1 $$\necho after"
        script = "\n".join(["set -euo pipefail", *functions, body])
        return subprocess.run(
            ["bash", "-c", script], env=env, capture_output=True, text=True, timeout=30
        )

    early = signalled_at(budget.deadline_s - 60)
    assert "before the save deadline could pass: ignored" in early.stderr and not calls.exists()
    late = signalled_at(budget.deadline_s + 1800)
    assert late.stdout.strip() == "after", late.stderr
    assert calls.read_text().split("\n")[0] == "scontrol requeue 9"
    [record] = continuation.read_attempts(tmp_path / "run")
    assert record["outcome"] == "time-limit" and record["attempt"] == 1
