"""A stage finishes whatever the time limit (issue 42), on the local Slurm: a 2-minute limit,
a start-up allowance that leaves the framework 8 s of training per attempt, and the NeMo-RL
stand-in honouring the ``checkpoint_must_save_by`` it is handed (from the start of its training
loop, as NeMo-RL counts it). The stage reaches its step budget across several attempts of one
job id, each resuming at the last saved step, while a later job (``afterok``) waits for the
last attempt; a crash in attempt two ends the stage FAILED, with no third attempt."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.slurm.launch_scenarios import FAKE_DRIVER, LAUNCHERS
from tests.integration.support.local_slurm import LocalSlurm, local_slurm
from tests.integration.support.stage_workspace import JOB_PROCESSES, Workspace

# 120 s of Slurm time; 112 s for start-up (preflight, Ray on three nodes of two cores: 35 to 55 s
# here) and the last save: checkpoint_must_save_by = 00:00:00:08, about 7 steps of 1 s an attempt.
TIME_LIMIT, ALLOWANCE = "00:02:00", 112
STEPS = 20


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalSlurm]:
    with local_slurm(tmp_path_factory.mktemp("slurm-limit"), nodes=3, gpus_per_node=8) as c:
        yield c


@pytest.fixture()
def workspace(tmp_path: Path, cluster: LocalSlurm, ray_python: Path) -> Iterator[Workspace]:
    ws = Workspace(tmp_path, cluster, ray_python, "dapo-b200", LAUNCHERS["dapo-b200"], FAKE_DRIVER)
    # No periodic saves: every checkpoint but the last is a deadline's.
    ws.overrides += [f"grpo.max_num_steps={STEPS}", "checkpointing.save_period=1000"]
    yield ws
    cluster.cancel_all()
    cluster.wait_for_no_node_processes(JOB_PROCESSES, timeout=30)


def _attempts(log: Path) -> list[dict[str, object]]:
    path = log.parent.parent / "attempts.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_stage_reaches_its_step_budget_across_attempts_of_one_job(
    workspace: Workspace, cluster: LocalSlurm
) -> None:
    started = time.monotonic()
    profile = workspace.write_profile(
        node="B200_NODE", time_limit=TIME_LIMIT, startup_allowance_s=ALLOWANCE
    )
    plan = workspace.launcher(profile, "plan")
    assert "checkpointing.checkpoint_must_save_by=00:00:00:08 (derived" in plan.stdout, plan.stdout
    job_id, log = workspace.submit(profile, env={"FAKE_GRPO_STEP_SECONDS": "1"})
    # A later stage: waits for the whole stage (afterok), every continuation included.
    marker = workspace.root / "later-stage-started"
    later = cluster.sbatch(
        f"#!/bin/bash\ndate +%s.%N > {marker}\n",
        [f"--dependency=afterok:{job_id}", "--nodes=1", f"--output={workspace.root}/later.out"],
    )
    state = cluster.wait_for_job(job_id, timeout=330)
    text = log.read_text()
    assert state == "COMPLETED", text + cluster.describe()
    records = _attempts(log)
    ends = [r for r in records if "outcome" in r]
    assert [r["outcome"] for r in ends][-1] == "done", records
    assert len(ends) >= 3 and {r["job"] for r in records} == {job_id}, records
    steps = [int(str(r["step"])) for r in ends]
    assert steps == sorted(steps) and steps[-1] == STEPS, records
    # Each attempt resumed at the step the one before saved at its deadline.
    for saved in steps[:-1]:
        assert f"resuming from {workspace.shared}/checkpoints/dapo-b200/step_{saved}" in text
    assert text.count("Timeout has been reached, stopping training early") == len(ends) - 1
    assert text.count("recipekit: continuing the stage: requeueing job") == len(ends) - 1
    info = cluster.job_info(job_id)
    assert info is not None and int(info["Restarts"]) == len(ends) - 1
    # The later job started only after the last attempt had ended.
    assert cluster.wait_for_job(later, timeout=60) == "COMPLETED"
    assert float(marker.read_text()) >= float(str(ends[-1]["end"]))
    status = workspace.launcher(profile, "status")
    continued = f"continued {len(ends) - 1}x (attempt 1: steps 0-{steps[0]}, 2: steps "
    assert continued in status.stdout, status.stdout + status.stderr
    assert f"steps {steps[-2]}-{STEPS} done)" in status.stdout
    print(f"{len(ends)} attempts of job {job_id} in {time.monotonic() - started:.1f} s")


def test_a_crash_in_attempt_two_ends_the_stage_failed_without_a_third(
    workspace: Workspace, cluster: LocalSlurm
) -> None:
    started = time.monotonic()
    workspace.overrides.append("grpo.seed=11")  # a plan (and run) of its own
    profile = workspace.write_profile(
        node="B200_NODE", time_limit=TIME_LIMIT, startup_allowance_s=ALLOWANCE
    )
    env = {"FAKE_GRPO_STEP_SECONDS": "1", "FAKE_GRPO_CRASH_ATTEMPT": "2"}
    job_id, log = workspace.submit(profile, env=env)
    state = cluster.wait_for_job(job_id, timeout=240)
    text = log.read_text()
    assert state == "FAILED", text
    assert "fake-grpo: crashing in attempt 2" in text
    assert re.search(r"exited with status 1 in attempt 2 of job \d+ .*a crash, not a", text), text
    outcomes = [r["outcome"] for r in _attempts(log) if "outcome" in r]
    assert outcomes == ["continued", "crashed"], outcomes
    assert [r["JobState"] for r in cluster.jobcomp_records(job_id)] == ["PENDING", "FAILED"]
    status = workspace.launcher(profile, "status")
    assert "continued 1x" in status.stdout and "crashed (exit 1)" in status.stdout, status.stdout
    print(f"attempt 2 of job {job_id} crashed; FAILED in {time.monotonic() - started:.1f} s")
