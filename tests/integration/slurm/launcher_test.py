"""The production launch path against a real Slurm and a real Ray, several nodes on this host.

Everything is the production path -- the packaged stage launcher submits, the generated job
script runs the launcher's job step on every node, which runs preflight, brings Ray up and
starts the framework entry point -- except the entry point itself: NeMo-RL cannot run without
GPUs, so ``examples/run_grpo.py`` in the profile's framework root is ``fake_run_grpo.py``.
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
from tests.integration.support.local_slurm import LocalSlurm, local_slurm
from tests.integration.support.log_markers import RAY_LINE, preflight_passed
from tests.integration.support.stage_workspace import JOB_PROCESSES, Workspace

HERE = Path(__file__).parent
# The stage launchers, as `./pants package` builds them (runtime_package_dependencies).
LAUNCHERS = {
    "dapo-b200": Path("recipes.super3/dapo-b200.pex"),
    "dapo-gb200": Path("recipes.super3/dapo-gb200.pex"),
}
FAKE_DRIVER = HERE / "fake_run_grpo.py"
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


# What the job script says when it requeues the job itself (job_script._LOST_NODE_CHECK).
FALLBACK_REQUEUE = "requeueing it with scontrol requeue"
WAITING_FOR_SLURM = "waiting for Slurm to requeue job"


def _lose_a_node(
    tmp_path: Path, ray_python: Path, *, slurmd_timeout: int, env: dict[str, str]
) -> tuple[LocalSlurm, str, str, list[dict[str, str]]]:
    """Run a three-node plan on four nodes, kill one of its nodes mid-run (not the batch host),
    and wait for the job to complete on the others: (cluster, job id, log text, the job's
    jobcomp records, oldest first). Asserts what both ways of requeueing share."""
    with local_slurm(
        tmp_path / "slurm", nodes=4, gpus_per_node=8, extra_conf=f"SlurmdTimeout={slurmd_timeout}"
    ) as cluster:
        workspace = Workspace(
            tmp_path / "ws", cluster, ray_python, "dapo-b200", LAUNCHERS["dapo-b200"], FAKE_DRIVER
        )
        profile = workspace.write_profile(node="B200_NODE")
        job_id, log = workspace.submit(profile, env={"FAKE_GRPO_SLEEP": "60", **env})
        workspace.wait_for_log(log, "fake-grpo: training for 60 s")
        first = cluster.job_info(job_id)
        assert first is not None
        victim = sorted(set(_hostnames(cluster, first["NodeList"])) - {first["BatchHost"]})[0]
        cluster.kill_node(victim)
        state = cluster.wait_for_job(job_id, timeout=600)
        text = log.read_text()
        assert state == "COMPLETED", text + cluster.describe()
        again = cluster.job_info(job_id)
        assert again is not None and int(again["Restarts"]) >= 1
        assert victim not in _hostnames(cluster, again["NodeList"])
        assert f"lost node(s) {victim}" in text and WAITING_FOR_SLURM in text
        status = workspace.launcher(profile, "status")
        assert f"lost node {victim}" in status.stdout, status.stdout + status.stderr
        assert "restarted 1 time(s)" in status.stdout
        # Nothing of either attempt is left: every process in the cluster's namespace, by
        # where it runs, not by its name.
        assert cluster.wait_for_no_node_processes("", timeout=30) == []
        return cluster, job_id, text, cluster.jobcomp_records(job_id)


def test_a_lost_node_is_requeued_by_slurm_and_completes_on_the_others(
    tmp_path: Path, ray_python: Path
) -> None:
    # The controller declares a silent node down after SlurmdTimeout: long enough here that Ray,
    # on the surviving nodes, sees the node go first and the step fails before Slurm knows (as
    # on a real cluster, where it is 300 s); then Slurm ends the job NODE_FAIL and requeues it
    # (--requeue), while the script still waits (SlurmdTimeout + 120 s) before its fallback.
    _, _, text, records = _lose_a_node(tmp_path, ray_python, slurmd_timeout=45, env={})
    assert FALLBACK_REQUEUE not in text, text
    states = [r["JobState"] for r in records]
    assert states[:1] == ["NODE_FAIL"], states


def test_a_lost_node_slurm_does_not_requeue_is_requeued_by_the_job_script(
    tmp_path: Path, ray_python: Path
) -> None:
    # --no-kill (sbatch reads SBATCH_NO_KILL over the script's directives): Slurm marks the node
    # down but keeps the job running on the others, so it never ends NODE_FAIL and never
    # requeues it. The script's own wait runs out and it requeues the job itself. A short
    # SlurmdTimeout keeps that wait (SlurmdTimeout + 120 s) short.
    _, job_id, text, records = _lose_a_node(
        tmp_path, ray_python, slurmd_timeout=15, env={"SBATCH_NO_KILL": "set"}
    )
    assert f"Slurm has not requeued job {job_id}" in text and FALLBACK_REQUEUE in text, text
    # Slurm shrinks the job off the lost node (RESIZING) and keeps it; the script's scontrol
    # requeue ends that attempt as PENDING (queued again), never NODE_FAIL; the next completes.
    states = [r["JobState"] for r in records]
    assert states == ["RESIZING", "PENDING", "COMPLETED"], states


def _hostnames(cluster: LocalSlurm, nodelist: str) -> list[str]:
    done = cluster.run(["scontrol", "show", "hostnames", nodelist], timeout=30)
    return done.stdout.split()


def test_gb200_plan_on_five_nodes(tmp_path: Path, ray_python: Path) -> None:
    with local_slurm(tmp_path / "slurm", nodes=5, gpus_per_node=4) as cluster:
        workspace = Workspace(
            tmp_path / "ws", cluster, ray_python, "dapo-gb200", LAUNCHERS["dapo-gb200"], FAKE_DRIVER
        )
        channels = tmp_path / "imex"
        channels.mkdir()
        os.mknod(channels / "channel3")
        profile = workspace.write_profile(
            node="GB200_NODE",
            gb200=f"Gb200Settings(imex_channel=3, imex_device_dir={str(channels)!r}, "
            "gloo_socket_ifname='lo')",
            skip={"cpu-arch": "the GB200 plan is for aarch64; this test host is x86_64"},
        )
        job_id, log = workspace.submit(profile)
        state = cluster.wait_for_job(job_id, timeout=420)
        text = log.read_text()
        assert state == "COMPLETED", text
        assert "ray cluster complete: 5 nodes, 20 GPUs" in text
        assert "preflight imex-channel: ok" in text
        assert "preflight cpu-arch: skipped (the GB200 plan is for aarch64" in text
        script = (log.parent.parent / "job.sbatch").read_text()
        assert "#SBATCH --gres=gpu:4" in script and "export NCCL_MNNVL_ENABLE=1" in script
        assert cluster.wait_for_no_node_processes(JOB_PROCESSES, timeout=30) == []


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
