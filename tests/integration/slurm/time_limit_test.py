"""A stage finishes whatever the time limit (issue 42), on the local Slurm, under a real 2-minute
``--time``: three jobs at once on one cluster, one node each (``limit_stages.py``), each test
waiting on its job's files (inotify), never sleeping.

- NeMo-RL under Ray: the stand-in honours the ``checkpoint_must_save_by`` the plan derives from
  the time limit less the start-up allowance (5 s of training an attempt), from the start of its
  training loop as NeMo-RL counts it. The stage reaches its step budget across several attempts
  of one job id, each resuming at the last saved step, while a later job (``afterok``) waits for
  the last attempt; the status shows the continuations.
- The same stage crashing in attempt two ends FAILED, with no third attempt.
- Megatron-Bridge, one process per GPU, with a start-up allowance of 0: its own deadline
  (``train.exit_duration_in_mins``) would come after the time limit, so only Slurm's
  ``--signal`` (30 s before the limit, sent by slurmctld's timer) saves the run: the job script's
  trap sends SIGTERM to the framework's step, the stand-in saves and stops as Megatron's exit
  signal handler does, the launcher lets it, and the job continues from that iteration.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest

from tests.integration.slurm.file_events import FileEvents, job_ended
from tests.integration.slurm.launch_scenarios import FAKE_DRIVER
from tests.integration.support.local_slurm import LocalSlurm, local_slurm
from tests.integration.support.stage_workspace import JOB_PROCESSES, Workspace

HERE = Path(__file__).resolve().parent
STAGES = HERE / "limit_stages.py"
FAKE_TRAIN = HERE / "fake_train.py"
# A stage launcher with no stage of its own (RECIPEKIT_STAGE names it): see BUILD.
LAUNCHER = Path("tests.integration.slurm/stage-launcher.pex")
TIME_LIMIT = "00:02:00"
# NeMo-RL: 115 s of the 2 minutes for start-up (preflight, Ray on one node: 10 to 30 s here)
# and the last save; checkpoint_must_save_by = 00:00:00:05, 4 steps of 1 s an attempt (the
# step that would pass the deadline is not started).
RL_ALLOWANCE, RL_STEPS = 115, 10
# Megatron-Bridge: Slurm signals 30 s before the limit, up to 60 s earlier (30 to 90 s into the
# job); 1 s an iteration until then, so attempt 1 stops between iterations 25 and 90, and the
# requeued attempt trains the rest at 0.1 s an iteration, long before its own signal.
SFT_SIGNAL_S, SFT_ITERATIONS, SFT_STEP_SECONDS = 30, 120, "1,0.1"


@attrs.frozen
class Submitted:
    workspace: Workspace
    profile: str
    job_id: str
    log: Path
    started: float

    @property
    def attempts_file(self) -> Path:
        return self.log.parent.parent / "attempts.jsonl"

    def attempts(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.attempts_file.read_text().splitlines()]


def _workspace(root: Path, cluster: LocalSlurm, ray_python: Path, stage: str) -> Workspace:
    driver = FAKE_DRIVER if stage == "rl" else FAKE_TRAIN
    ws = Workspace(root, cluster, ray_python, f"limit-{stage}", LAUNCHER, driver)
    ws.environment.update({"RECIPEKIT_STAGE": f"{STAGES}:{stage}"})
    if stage == "sft":
        # Megatron-Bridge's runner in its checkout, its inputs, and where it saves.
        runner = ws.framework_root / "scripts" / "training" / "run_recipe.py"
        runner.parent.mkdir(parents=True)
        shutil.copy(FAKE_TRAIN, runner)
        for name in ("model", "data"):
            (ws.shared / "artifacts" / name).mkdir(parents=True)
        ws.overrides = [
            f"checkpoint.pretrained_checkpoint={ws.shared / 'artifacts' / 'model'}",
            f"dataset.path={ws.shared / 'artifacts' / 'data'}",
            f"checkpoint.save={ws.shared / 'checkpoints' / 'limit-sft'}",
            f"train.train_iters={SFT_ITERATIONS}",
            f"checkpoint.save_interval={SFT_ITERATIONS}",
        ]
    else:
        # No periodic saves: every checkpoint but the last is a deadline's.
        ws.overrides += [f"grpo.max_num_steps={RL_STEPS}", "checkpointing.save_period=1000"]
    return ws


# The crash scenario's Ray, beside the other RL job's on the same host: Ray's GCS listens on
# every address, so two heads of the test profile's port plan (gcs 6379) would collide.
OTHER_PORTS = (
    "RayPorts(node_offset=1000, gcs=6479, dashboard=8365, node_manager=23001, "
    "object_manager=23002, runtime_env_agent=23003, dashboard_agent_grpc=23004, "
    "dashboard_agent_listen=23005, metrics_export=23006, min_worker=23100, max_worker=23999)"
)


def _with_ports(profile: str, ports: str) -> str:
    path = Path(profile.partition(":")[0])
    text = path.read_text()
    assert "RayPorts(node_offset=1000)" in text
    path.write_text(text.replace("RayPorts(node_offset=1000)", ports))
    return profile


def _submit(ws: Workspace, profile: str, env: dict[str, str]) -> Submitted:
    started = time.monotonic()
    job_id, log = ws.submit(profile, env=env)
    return Submitted(ws, profile, job_id, log, started)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalSlurm]:
    with local_slurm(tmp_path_factory.mktemp("slurm-limit"), nodes=3, gpus_per_node=8) as c:
        yield c
        c.cancel_all()
        c.wait_for_no_node_processes(JOB_PROCESSES, timeout=30)


@attrs.frozen
class Jobs:
    rl: Submitted
    crash: Submitted
    sft: Submitted
    # A job with afterok on the RL stage's, and the file it writes its start time to.
    later: str
    later_marker: Path


@pytest.fixture(scope="module")
def jobs(tmp_path_factory: pytest.TempPathFactory, cluster: LocalSlurm, ray_python: Path) -> Jobs:
    """The three scenarios' jobs, submitted at once (one node each), and an afterok job."""
    root = tmp_path_factory.mktemp("limit")
    rl = _workspace(root / "rl", cluster, ray_python, "rl")
    rl_profile = rl.write_profile(
        node="B200_NODE", time_limit=TIME_LIMIT, startup_allowance_s=RL_ALLOWANCE
    )
    crash = _workspace(root / "crash", cluster, ray_python, "rl")
    crash.overrides.append("grpo.seed=11")  # a plan (and run) of its own
    crash_profile = _with_ports(
        crash.write_profile(
            node="B200_NODE", time_limit=TIME_LIMIT, startup_allowance_s=RL_ALLOWANCE
        ),
        OTHER_PORTS,
    )
    sft = _workspace(root / "sft", cluster, ray_python, "sft")
    sft_profile = sft.write_profile(
        node="B200_NODE",
        time_limit=TIME_LIMIT,
        startup_allowance_s=0,
        time_limit_signal_s=SFT_SIGNAL_S,
    )
    rl_job = _submit(rl, rl_profile, {"FAKE_GRPO_STEP_SECONDS": "1"})
    sft_job = _submit(sft, sft_profile, {"FAKE_STEP_SECONDS": SFT_STEP_SECONDS})
    crash_env = {"FAKE_GRPO_STEP_SECONDS": "1", "FAKE_GRPO_CRASH_ATTEMPT": "2"}
    crash_job = _submit(crash, crash_profile, crash_env)
    # A later stage: waits for the whole RL stage (afterok), every continuation included.
    marker = rl.root / "later-stage-started"
    later = cluster.sbatch(
        f"#!/bin/bash\ndate +%s.%N > {marker}\n",
        [f"--dependency=afterok:{rl_job.job_id}", "--nodes=1", f"--output={marker}.out"],
    )
    return Jobs(rl=rl_job, crash=crash_job, sft=sft_job, later=later, later_marker=marker)


@pytest.fixture()
def events(cluster: LocalSlurm) -> Iterator[FileEvents]:
    watcher = FileEvents().watch(cluster.jobcomp_path.parent)
    yield watcher
    watcher.close()


def _finished(job: Submitted, cluster: LocalSlurm, events: FileEvents, timeout: float) -> str:
    return events.wait_until(job_ended(cluster, job.job_id), timeout, f"job {job.job_id}")


def test_a_stage_reaches_its_step_budget_across_attempts_of_one_job(
    jobs: Jobs, cluster: LocalSlurm, events: FileEvents
) -> None:
    job, ws = jobs.rl, jobs.rl.workspace
    plan = ws.launcher(job.profile, "plan")
    assert "checkpointing.checkpoint_must_save_by=00:00:00:05 (derived" in plan.stdout, plan.stdout
    state = _finished(job, cluster, events, timeout=300)
    text = job.log.read_text()
    assert state == "COMPLETED", text + cluster.describe()
    records = job.attempts()
    ends = [r for r in records if "outcome" in r]
    assert [r["outcome"] for r in ends][-1] == "done", records
    assert len(ends) >= 3 and {r["job"] for r in records} == {job.job_id}, records
    steps = [int(str(r["step"])) for r in ends]
    assert steps == sorted(steps) and steps[-1] == RL_STEPS, records
    # Each attempt resumed at the step the one before saved at its deadline.
    for saved in steps[:-1]:
        assert f"resuming from {ws.shared}/checkpoints/limit-rl/step_{saved}" in text
    assert text.count("Timeout has been reached, stopping training early") == len(ends) - 1
    assert text.count("recipekit: continuing the stage: requeueing job") == len(ends) - 1
    info = cluster.job_info(job.job_id)
    assert info is not None and int(info["Restarts"]) == len(ends) - 1
    # The later job started only after the last attempt had ended.
    assert events.wait_until(job_ended(cluster, jobs.later), 60, "later job") == "COMPLETED"
    assert float(jobs.later_marker.read_text()) >= float(str(ends[-1]["end"]))
    status = ws.launcher(job.profile, "status")
    continued = f"continued {len(ends) - 1}x (attempt 1: steps 0-{steps[0]}, 2: steps "
    assert continued in status.stdout, status.stdout + status.stderr
    assert f"steps {steps[-2]}-{RL_STEPS} done)" in status.stdout
    print(f"{len(ends)} attempts of job {job.job_id} in {time.monotonic() - job.started:.1f} s")


def test_a_crash_in_attempt_two_ends_the_stage_failed_without_a_third(
    jobs: Jobs, cluster: LocalSlurm, events: FileEvents
) -> None:
    job = jobs.crash
    state = _finished(job, cluster, events, timeout=300)
    text = job.log.read_text()
    assert state == "FAILED", text
    assert "fake-grpo: crashing in attempt 2" in text
    assert re.search(r"exited with status 1 in attempt 2 of job \d+ .*a crash, not a", text), text
    outcomes = [r["outcome"] for r in job.attempts() if "outcome" in r]
    assert outcomes == ["continued", "crashed"], outcomes
    assert [r["JobState"] for r in cluster.jobcomp_records(job.job_id)] == ["PENDING", "FAILED"]
    status = job.workspace.launcher(job.profile, "status")
    assert "continued 1x" in status.stdout and "crashed (exit 1)" in status.stdout, status.stdout
    print(f"job {job.job_id}: FAILED in attempt 2 after {time.monotonic() - job.started:.1f} s")


def test_slurms_time_limit_signal_reaches_the_framework_which_saves_and_continues(
    jobs: Jobs, cluster: LocalSlurm, events: FileEvents
) -> None:
    job, ws = jobs.sft, jobs.sft.workspace
    script = (job.log.parent.parent / "job.sbatch").read_text()
    assert f"#SBATCH --signal=B:USR1@{SFT_SIGNAL_S}" in script.splitlines()
    state = _finished(job, cluster, events, timeout=300)
    text = job.log.read_text()
    assert state == "COMPLETED", text + cluster.describe()
    # Slurm's signal reached the batch script, its trap the framework's step, the launcher let
    # the framework save, and the framework saved and stopped on it (not at its own deadline).
    assert f"is {SFT_SIGNAL_S} s from its time limit: asking the framework to save and" in text
    assert "SIGTERM: the framework saves and stops; waiting for it" in text
    saved = re.findall(
        r"fake-train: exit signal received: saved and stopping at iteration (\d+)", text
    )
    assert saved and "exiting program after" not in text, text
    ends = [r for r in job.attempts() if "outcome" in r]
    assert [r["outcome"] for r in ends][-1] == "done" and ends[-1]["step"] == SFT_ITERATIONS
    for record, iteration in zip(ends, saved, strict=False):
        assert record["outcome"] == "continued" and record["stopped_by"] == "time-limit signal"
        assert record["step"] == int(iteration)
        assert f"fake-train: resuming from iteration {iteration}" in text
    assert len(ends) == len(saved) + 1, ends
    info = cluster.job_info(job.job_id)
    assert info is not None and int(info["Restarts"]) == len(saved)
    status = ws.launcher(job.profile, "status")
    assert f"continued {len(saved)}x (attempt 1: steps 0-{saved[0]}" in status.stdout, (
        status.stdout + status.stderr
    )
    print(
        f"job {job.job_id}: signalled at iteration(s) {saved}, done in {len(ends)} attempts, "
        f"{time.monotonic() - job.started:.1f} s"
    )
