"""The production launch path against a real Slurm and a real Ray, several nodes on this host.

Everything is the production path -- the packaged stage launcher submits, the generated job
script runs the launcher's job step on every node, which runs preflight, brings Ray up and
starts the framework entry point -- except the entry point itself: NeMo-RL cannot run without
GPUs, so ``examples/run_grpo.py`` in the profile's framework root is ``fake_run_grpo.py``.
A lost node (lost_node_test.py, lost_node_fallback_test.py) and the GB200 plan
(gb200_launch_test.py) have files of their own, so that Pants runs them beside this one.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from recipekit.lineage.tracking import read_offline_run
from tests.integration.slurm.launch_scenarios import FAKE_DRIVER, LAUNCHERS
from tests.integration.support.local_slurm import LocalSlurm, local_slurm
from tests.integration.support.log_markers import RAY_LINE, preflight_passed
from tests.integration.support.stage_workspace import JOB_PROCESSES, Workspace

SECRET = "sentinel-wandb-key-6b1f0c"


def _files_under(path: Path) -> Iterator[Path]:
    return (p for p in path.rglob("*") if p.is_file())


@pytest.fixture(scope="module")
def b200_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalSlurm]:
    with local_slurm(tmp_path_factory.mktemp("slurm-b200"), nodes=3, gpus_per_node=8) as cluster:
        yield cluster


@pytest.fixture()
def b200(tmp_path: Path, b200_cluster: LocalSlurm, ray_python: Path) -> Iterator[Workspace]:
    workspace = Workspace(
        tmp_path, b200_cluster, ray_python, "dapo-b200", LAUNCHERS["dapo-b200"], FAKE_DRIVER
    )
    yield workspace
    b200_cluster.cancel_all()
    b200_cluster.wait_for_no_node_processes(JOB_PROCESSES, timeout=30)


def test_b200_plan_runs_end_to_end_and_leaves_nothing(b200: Workspace) -> None:
    profile = b200.write_profile(
        node="B200_NODE", tracking="Tracking(mode='offline', project='rk-test')"
    )
    started = time.monotonic()
    wandb_dirs = {f"WANDB_{d}_DIR": str(b200.root / "wandb-home" / d) for d in ("CONFIG", "CACHE")}
    env = {"WANDB_API_KEY": SECRET, "HF_TOKEN": SECRET, **wandb_dirs}
    job_id, log = b200.submit(profile, env=env)
    state = b200.cluster.wait_for_job(job_id, timeout=420)
    text = log.read_text()
    assert state == "COMPLETED", text
    elapsed = time.monotonic() - started
    assert "ray cluster complete: 3 nodes, 24 GPUs" in text
    assert "fake-grpo: config matches plan" in text
    assert "fake-grpo: ray sees 3 nodes, 24 GPUs" in text
    assert "fake-grpo: WANDB_API_KEY present: yes" in text
    for index, node in enumerate(("n1", "n2", "n3"), 1):
        assert preflight_passed(node, f"127.0.1.{index}") in text, node
    assert RAY_LINE in text  # the positive side of the checks that Ray never started
    assert b200.cluster.wait_for_no_node_processes(JOB_PROCESSES, timeout=30) == []
    # The head recorded the run (offline) once the driver had ended well, with Ray still up.
    run_dir = log.parent.parent
    assert "tracking: recorded the run in W&B project rk-test (offline)" in text
    [offline] = sorted((run_dir / "wandb").glob("offline-run-*"))
    recorded = read_offline_run(offline)
    plan = json.loads((run_dir / "plan.json").read_text())
    assert recorded.config["plan"]["hash"] == plan["hash"]
    # The secret travelled as environment only: no file the launcher or W&B wrote holds it.
    leaked = [p for p in _files_under(b200.root) if SECRET.encode() in p.read_bytes()]
    assert leaked == []
    status = b200.launcher(profile, "status")
    assert f"job {job_id}: COMPLETED" in status.stdout, status.stdout + status.stderr
    assert "Requeue: 1" in status.stdout
    print(f"submit -> job COMPLETED in {elapsed:.1f} s")


def test_preflight_failure_stops_the_job_in_seconds(b200: Workspace) -> None:
    profile = b200.write_profile(node="B200_NODE", checkpoints=b200.root / "not-mounted")
    job_id, log = b200.submit(profile)
    started = time.monotonic()
    state = b200.cluster.wait_for_job(job_id, timeout=120)
    text = log.read_text()
    assert state == "FAILED", text
    assert time.monotonic() - started < 60
    failed = re.findall(
        r"PREFLIGHT FAILED on (n\d) \(127\.0\.1\.\d\): shared-paths: shared path "
        r"'checkpoints': \S+/not-mounted is not mounted",
        text,
    )
    assert sorted(failed) == ["n1", "n2", "n3"], text  # every node reports
    assert RAY_LINE not in text  # Ray never started
    assert b200.cluster.wait_for_no_node_processes(JOB_PROCESSES, timeout=30) == []


def test_a_failing_driver_fails_the_job_and_stops_ray_everywhere(b200: Workspace) -> None:
    profile = b200.write_profile(node="B200_NODE")
    job_id, log = b200.submit(profile, env={"FAKE_GRPO_EXIT": "7"})
    # `logs --follow` streams the log as it grows and returns once the job has ended.
    followed = b200.launcher(profile, "logs", "--follow", timeout=420)
    assert followed.returncode == 0, followed.stderr
    state = b200.cluster.wait_for_job(job_id, timeout=60)
    text = log.read_text()
    assert state == "FAILED", text
    assert "driver exited with status 7" in text
    assert "driver exited with status 7" in followed.stdout
    assert text.startswith(followed.stdout)
    printed = b200.launcher(profile, "logs")
    assert printed.returncode == 0 and printed.stdout == log.read_text()
    assert b200.cluster.wait_for_no_node_processes(JOB_PROCESSES, timeout=30) == []


def test_cancel_mid_run_and_a_second_submit_is_refused(b200: Workspace) -> None:
    profile = b200.write_profile(node="B200_NODE")
    job_id, log = b200.submit(profile, env={"FAKE_GRPO_SLEEP": "600"})
    b200.wait_for_log(log, "fake-grpo: training for 600 s")
    again = b200.launcher(profile, "submit")
    assert again.returncode == 2
    assert f"this plan already has a job: {job_id} (RUNNING)" in again.stderr
    cancelled = b200.launcher(profile, "cancel")
    assert cancelled.returncode == 0, cancelled.stderr
    assert b200.cluster.wait_for_job(job_id, timeout=120) == "CANCELLED"
    assert b200.cluster.wait_for_no_node_processes(JOB_PROCESSES, timeout=30) == []


def test_two_submits_at_the_same_instant_give_one_job_that_cancel_stops(b200: Workspace) -> None:
    profile = b200.write_profile(node="B200_NODE")
    sets = [a for o in b200.overrides for a in ("--set", o)]
    launcher = [str(b200.ray_python), str(b200.launcher_pex.resolve())]
    argv = [*launcher, "submit", *sets, "--cluster", profile]
    env = {**b200.cluster.env(), **b200.environment, "FAKE_GRPO_SLEEP": "600"}
    both = [
        b200.cluster.popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    outputs = [process.communicate(timeout=120) for process in both]
    statuses = [process.returncode for process in both]
    assert sorted(statuses) == [0, 2], outputs
    submitted, refused = (outputs[statuses.index(0)], outputs[statuses.index(2)])
    found = re.search(r"as Slurm job (\d+)", submitted[0])
    assert found, submitted
    job_id = found.group(1)
    assert f"this plan already has a job: {job_id}" in refused[1]
    assert "Traceback" not in refused[1]
    # job.json names the job that runs: cancel stops it, and nothing is left.
    cancelled = b200.launcher(profile, "cancel")
    assert cancelled.returncode == 0, cancelled.stderr
    assert f"cancelled job {job_id}" in cancelled.stdout
    assert b200.cluster.wait_for_job(job_id, timeout=120) == "CANCELLED"
    jobs = b200.cluster.run(["squeue", "--noheader", "--format=%i"], timeout=30).stdout.split()
    assert jobs == []
    assert b200.cluster.wait_for_no_node_processes(JOB_PROCESSES, timeout=30) == []


def test_a_killed_job_step_leaves_nothing_and_the_plan_runs_again(b200: Workspace) -> None:
    profile = b200.write_profile(node="B200_NODE")
    job_id, log = b200.submit(profile, env={"FAKE_GRPO_SLEEP": "600"})
    b200.wait_for_log(log, "fake-grpo: training for 600 s")
    [victim] = [
        p
        for p in b200.cluster.node_process_info(r" job-step ")
        if p.node == "n2" and not p.cmdline.startswith("srun")
    ]
    os.kill(victim.pid, signal.SIGKILL)
    state = b200.cluster.wait_for_job(job_id, timeout=180)
    assert state in {"FAILED", "CANCELLED"}, log.read_text()
    # Every process the job started, on every node, found by where it runs (the cluster's
    # namespace), not by its name: none is left, and no Ray temp dir either.
    assert b200.cluster.wait_for_no_node_processes("", timeout=30) == []
    assert list(Path("/tmp").glob(f"rk-ray-{job_id}-*")) == []
    # So the next submit of the plan passes preflight (its Ray ports are free) and runs.
    again, log = b200.submit(profile)
    assert b200.cluster.wait_for_job(again, timeout=420) == "COMPLETED", log.read_text()


def test_interactive_cluster_attach_run_down(b200: Workspace) -> None:
    profile = b200.write_profile(node="B200_NODE")
    done = b200.launcher(profile, "submit", "--interactive")
    assert done.returncode == 0, done.stdout + done.stderr
    job_id = re.search(r"as Slurm job (\d+)", done.stdout)
    log = re.search(r"^log: (\S+)$", done.stdout, re.MULTILINE)
    assert job_id and log
    b200.wait_for_log(Path(log.group(1)), "interactive Ray cluster up at 127.0.1.1:6379")

    attached = b200.launcher(profile, "attach", "printenv", "SLURMD_NODENAME")
    assert attached.returncode == 0, attached.stderr
    assert attached.stdout.strip() == "n1"

    ran = b200.launcher(profile, "run", timeout=240)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "fake-grpo: ray sees 3 nodes, 24 GPUs" in ran.stdout
    assert b200.cluster.job_state(job_id.group(1)) == "RUNNING"  # the cluster stays up

    failed = b200.launcher(profile, "run", env={"FAKE_GRPO_EXIT": "5"}, timeout=240)
    assert failed.returncode == 5

    released = b200.launcher(profile, "down")
    assert released.returncode == 0, released.stderr
    assert b200.cluster.wait_for_job(job_id.group(1), timeout=120) == "CANCELLED"
    assert b200.cluster.wait_for_no_node_processes(JOB_PROCESSES, timeout=30) == []
