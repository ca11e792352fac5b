"""Smoke tests of the integration-test infrastructure itself: the local Slurm and the Ray venv."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.integration.support.local_slurm import (
    NETNS_DIR,
    NETNS_PREFIX,
    LocalSlurm,
    LocalSlurmError,
    local_slurm,
)
from tests.integration.support.ray_runtime import ray_port_args

# Runs inside a job: every connection off loopback must fail with ENETUNREACH.
_PROBE = f"""
import socket
for host, port, kind in [("169.254.169.254", 80, socket.SOCK_STREAM),
                         ("8.8.8.8", 53, socket.SOCK_DGRAM)]:
    s = socket.socket(socket.AF_INET, kind)
    s.settimeout(5)
    try:
        s.connect((host, port))
        if kind == socket.SOCK_DGRAM:
            s.send(b"x")
        print(host, "CONNECTED")
    except OSError as exc:
        print(host, "errno", exc.errno, "ENETUNREACH" if exc.errno == {errno.ENETUNREACH} else "")
"""


def test_nodes_register_with_gpu_gres(local_slurm_cluster: LocalSlurm) -> None:
    cluster = local_slurm_cluster
    proc = cluster.run(["scontrol", "show", "node", "-o"], check=True)
    nodes = {}
    for line in proc.stdout.splitlines():
        fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
        nodes[fields["NodeName"]] = fields
    assert sorted(nodes) == ["n1", "n2", "n3"] == cluster.nodes
    for name, fields in nodes.items():
        assert fields["Gres"] == "gpu:4", fields
        assert fields["State"] == "IDLE", fields
        assert fields["NodeAddr"] == cluster.node_addresses[name]
        assert fields["Partitions"] == "gpu"
    assert cluster.node_addresses == {"n1": "127.0.1.1", "n2": "127.0.1.2", "n3": "127.0.1.3"}
    partition = cluster.run(["sinfo", "-h", "-o", "%P %D %G"], check=True).stdout.split()
    assert partition == ["gpu*", "3", "gpu:4"]  # `*`: the default partition


def test_sbatch_srun_across_three_nodes(local_slurm_cluster: LocalSlurm) -> None:
    cluster = local_slurm_cluster
    script = "#!/bin/bash\nsrun bash -c 'echo $SLURMD_NODENAME $CUDA_VISIBLE_DEVICES'\n"
    started = time.monotonic()
    job = cluster.sbatch(
        script, ["--nodes=3", "--gres=gpu:4", "--exclusive", "--output=smoke-%j.out"]
    )
    state = cluster.wait_for_job(job, timeout=60)
    elapsed = time.monotonic() - started
    output = (cluster.job_dir / f"smoke-{job}.out").read_text()
    assert state == "COMPLETED", f"{state}\n{output}\n{cluster.describe()}"
    assert sorted(output.splitlines()) == ["n1 0,1,2,3", "n2 0,1,2,3", "n3 0,1,2,3"]
    assert cluster.jobcomp_records(job)[-1]["JobState"] == "COMPLETED"
    sacct = cluster.run(["sacct", "-c", "-j", job, "-n", "-P", "--format=State,NodeList"])
    assert sacct.stdout.split() == ["COMPLETED|n[1-3]"], sacct
    assert cluster.wait_for_no_node_processes() == []
    print(f"3-node sbatch+srun job: {elapsed:.2f} s")


def test_more_gpus_than_a_node_has_is_refused(local_slurm_cluster: LocalSlurm) -> None:
    proc = local_slurm_cluster.run(["sbatch", "--gres=gpu:5", "--wrap=true"])
    assert proc.returncode != 0
    assert "Requested node configuration is not available" in proc.stderr


def test_exclusive_singleton_and_requeue(local_slurm_cluster: LocalSlurm) -> None:
    cluster = local_slurm_cluster
    log = cluster.job_dir / "requeue.log"
    first = cluster.sbatch(
        f'#!/bin/bash\necho "run ${{SLURM_RESTART_COUNT:-0}}" >> {log}\nexec sleep 600\n',
        ["--job-name=single", "--nodes=3", "--exclusive", "--gres=gpu:4", "--output=/dev/null"],
    )
    _wait_for(lambda: cluster.job_state(first) == "RUNNING", 30, cluster)
    second = cluster.sbatch(
        "#!/bin/bash\ntrue\n", ["--job-name=single", "--dependency=singleton"]
    )
    other = cluster.sbatch("#!/bin/bash\ntrue\n", ["--job-name=other", "--nodes=1"])

    def reason(job: str) -> str:
        info = cluster.job_info(job) or {}
        return f"{info.get('JobState')}/{info.get('Reason')}"

    _wait_for(lambda: reason(second) == "PENDING/Dependency", 10, cluster)
    _wait_for(lambda: reason(other) == "PENDING/Resources", 10, cluster)  # first is --exclusive

    started = time.monotonic()
    cluster.run(["scontrol", "requeue", first], check=True)

    def running_again() -> bool:
        info = cluster.job_info(first) or {}
        return info.get("JobState") == "RUNNING" and info.get("Restarts") == "1"

    _wait_for(running_again, 60, cluster)
    requeue_seconds = time.monotonic() - started
    assert reason(second) == "PENDING/Dependency"  # the requeued job still holds the name
    _wait_for(lambda: log.exists() and log.read_text().count("run") == 2, 10, cluster)
    assert log.read_text().splitlines() == ["run 0", "run 1"]

    cluster.run(["scancel", first], check=True)
    assert cluster.wait_for_job(first, 30) == "CANCELLED"
    assert cluster.wait_for_job(second, 30) == "COMPLETED"
    assert cluster.wait_for_job(other, 30) == "COMPLETED"
    assert [r["JobState"] for r in cluster.jobcomp_records(first)] == ["PENDING", "CANCELLED"]
    assert cluster.wait_for_no_node_processes() == []
    print(f"requeue to running again: {requeue_seconds:.1f} s")


def test_jobs_cannot_reach_outside_loopback(local_slurm_cluster: LocalSlurm) -> None:
    cluster = local_slurm_cluster
    script = f"#!/bin/bash\nip -o -4 addr show\n{sys.executable} - <<'EOF'\n{_PROBE}\nEOF\n"
    job = cluster.sbatch(script, ["--output=probe-%j.out"])
    assert cluster.wait_for_job(job, 30) == "COMPLETED"
    output = (cluster.job_dir / f"probe-{job}.out").read_text()
    assert "169.254.169.254 errno 101 ENETUNREACH" in output, output
    assert "8.8.8.8 errno 101 ENETUNREACH" in output, output
    interfaces = {line.split()[1] for line in output.splitlines() if " inet " in line}
    assert interfaces == {"lo"}, output


def test_ray_head_in_namespace_sees_gpus(
    local_slurm_cluster: LocalSlurm, ray_python: Path, tmp_path: Path
) -> None:
    cluster = local_slurm_cluster
    ray = ray_python.parent / "ray"
    version = cluster.run([str(ray), "--version"], check=True, timeout=120).stdout
    assert "2.60.0" in version

    head_log = tmp_path / "ray-head.log"
    argv = [
        str(ray),
        "start",
        "--head",
        "--block",
        "--node-ip-address=127.0.1.1",
        "--num-gpus=4",
        "--num-cpus=2",
        "--object-store-memory=100000000",
        "--disable-usage-stats",
        "--include-dashboard=false",
        *ray_port_args(0, head=True, gcs_port=6379),
    ]
    started = time.monotonic()
    with head_log.open("w") as out:
        head = cluster.popen(argv, stdout=out, stderr=subprocess.STDOUT)
    try:
        driver = (
            "import json, ray\n"
            "ray.init(address='127.0.1.1:6379')\n"
            "print(json.dumps({'resources': ray.cluster_resources(),"
            " 'nodes': [n['NodeManagerAddress'] for n in ray.nodes() if n['Alive']]}))\n"
        )
        while True:
            proc = cluster.run([str(ray_python), "-c", driver], timeout=120)
            if proc.returncode == 0:
                break
            if head.poll() is not None or time.monotonic() - started > 120:
                pytest.fail(
                    f"ray head did not come up (exit {head.poll()}):\n{head_log.read_text()}\n"
                    f"driver: {proc.stderr[-2000:]}"
                )
            time.sleep(1)
        up_seconds = time.monotonic() - started
        result = json.loads(proc.stdout.splitlines()[-1])
        assert result["resources"]["GPU"] == 4.0, result
        assert result["nodes"] == ["127.0.1.1"], result
        ray_processes = cluster.node_processes(r"raylet|gcs_server")
        assert len(ray_processes) == 2, ray_processes
    finally:
        stop_started = time.monotonic()
        head.terminate()  # by PID: `ray stop` would stop every Ray on this host
        try:
            head.wait(timeout=60)
        except subprocess.TimeoutExpired:
            head.kill()
            head.wait(timeout=10)
    left = cluster.wait_for_no_node_processes(timeout=30)
    stop_seconds = time.monotonic() - stop_started
    assert left == [], f"left running after the ray head stopped: {left}"
    print(f"ray head up + driver connected: {up_seconds:.1f} s; stopped in {stop_seconds:.1f} s")


def test_start_failure_raises_with_log_tail(tmp_path: Path) -> None:
    # slurmctld dies at start without slurmdbd if asked to account gres: the error must say why,
    # and nothing of that cluster may be left (namespace, daemons).
    before = _our_namespaces()
    with pytest.raises(LocalSlurmError) as raised:
        with local_slurm(tmp_path, nodes=1, extra_conf="AccountingStorageTRES=gres/gpu"):
            pass
    message = str(raised.value)
    assert "slurmctld exited" in message, message
    assert "slurmdbd is required" in message, message
    assert _our_namespaces() == before
    assert _processes_mentioning(str(tmp_path)) == []


def _our_namespaces() -> set[str]:
    return {p.name for p in NETNS_DIR.glob(f"{NETNS_PREFIX}-{os.getpid()}-*")}


def _processes_mentioning(text: str) -> list[str]:
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if text in cmdline:
                found.append(f"{proc.name} {cmdline}")
    return found


def _wait_for(predicate: Callable[[], bool], timeout: float, cluster: LocalSlurm) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met in {timeout} s\n{cluster.describe()}")
        time.sleep(0.2)
