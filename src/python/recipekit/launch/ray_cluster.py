"""Ray on the nodes of a Slurm allocation: start, wait for the whole cluster, stop.

Lessons from NeMo-RL's ``ray.sub``, one function each: every node gets its own temp dir (nodes
sharing a host would otherwise share /tmp/ray); workers start only once the head's GCS answers;
the driver waits until every node and GPU has joined; and Ray is stopped by process group and
temp dir, never with ``ray stop``, which kills every Ray process on the host, other nodes' too.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.resources
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import attrs

from recipekit.launch.profile import ClusterProfile

Log = Callable[[str], None]


def node_temp_dir(job_id: str, node_index: int, plan_hash: str, attempt: int = 0) -> str:
    # Unique to the job, its attempt and plan (two clusters' job 1 must not share one; a
    # requeued attempt's Ray must not share the dir that the attempt before it may still be
    # clearing, whose reaper kills every process naming it), and short: Ray's socket paths
    # under it must stay below the 107-byte Unix socket limit.
    return f"/tmp/rk-ray-{job_id}-{attempt}-{plan_hash[:8]}-{node_index}"


def ray_start_command(
    profile: ClusterProfile,
    *,
    node_index: int,
    node_address: str,
    head_address: str,
    num_gpus: int,
    temp_dir: str,
) -> list[str]:
    command = [
        profile.python,
        "-m",
        "ray.scripts.scripts",
        "start",
        "--block",
        f"--node-ip-address={node_address}",
        f"--num-gpus={num_gpus}",
        "--disable-usage-stats",
        f"--temp-dir={temp_dir}",
        *profile.ray_ports.start_arguments(node_index),
    ]
    if node_index == 0:
        command += ["--head", "--include-dashboard=false"]
    else:
        command += [f"--address={head_address}:{profile.ray_ports.gcs}"]
    return command


def port_answers(address: str, port: int, timeout: float = 2.0) -> bool:
    try:
        with socket.create_connection((address, port), timeout=timeout):
            return True
    except OSError:
        return False


# How often a wait that has not ended says so in the job's log.
WAIT_REPORT_EVERY_S = 15.0


def wait_until(
    ready: Callable[[], bool],
    timeout_s: float,
    awaited: str,
    log: Log | None = None,
    every_s: float = WAIT_REPORT_EVERY_S,
) -> bool:
    """Whether ``ready()`` turns true within ``timeout_s``, asked every half second. With
    ``log``, a wait longer than ``every_s`` is reported every ``every_s`` seconds (``awaited``:
    what is awaited), so a job log shows a node waiting rather than hanging."""
    started = reported = time.monotonic()
    while (now := time.monotonic()) < started + timeout_s:
        if ready():
            return True
        if log is not None and now - reported >= every_s:
            reported = now
            log(f"still waiting for {awaited}: {now - started:.0f} s of {timeout_s:.0f} s")
        time.sleep(0.5)
    return False


def wait_for_port(
    address: str,
    port: int,
    timeout_s: float,
    *,
    what: str = "",
    log: Log | None = None,
    every_s: float = WAIT_REPORT_EVERY_S,
    free: bool = False,
) -> bool:
    """Whether ``address:port`` answers within ``timeout_s`` (``free``: stops answering), the
    wait reported as ``wait_until`` reports it (``what``: what is awaited)."""
    awaited = (
        f"{address}:{port} to close" if free else f"{what or 'a listener'} at {address}:{port}"
    )
    return wait_until(lambda: port_answers(address, port) != free, timeout_s, awaited, log, every_s)


@attrs.define
class RayNode:
    """The ``ray start --block`` process of this node, in its own process group, and the
    reaper that stops it if the launcher itself is killed."""

    process: subprocess.Popen[bytes]
    temp_dir: str
    reaper: subprocess.Popen[bytes] | None = None

    @classmethod
    def start(cls, command: list[str], temp_dir: str, log: Log) -> RayNode:
        log("ray: " + " ".join(command))
        env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
        process = subprocess.Popen(command, start_new_session=True, env=env)
        return cls(process, temp_dir, start_reaper(process.pid, temp_dir))

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self, log: Log, grace_s: float) -> None:
        """SIGTERM lets ``ray start --block`` stop what it started, for ``grace_s``; then
        nothing may remain.

        Quick, because Slurm SIGKILLs the step ``KillWait`` seconds after its SIGTERM.
        """
        if self.alive() and grace_s > 0:
            with contextlib.suppress(ProcessLookupError):
                self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                log("ray: did not stop on SIGTERM; killing its process group")
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        leftovers = kill_processes_mentioning(self.temp_dir)
        if leftovers:
            log(f"ray: killed {leftovers} leftover Ray processes of {self.temp_dir}")
        # Session logs are worth keeping only while the job runs; the job log has the story.
        shutil.rmtree(self.temp_dir, ignore_errors=True)
        if self.reaper is not None and self.reaper.poll() is None:
            self.reaper.kill()
            self.reaper.wait()
        log("ray: stopped")


# Run by the reaper (``python -c``): wait until the launcher dies (the kernel sends SIGTERM:
# PR_SET_PDEATHSIG), then do what RayNode.stop would have done. Orphaned at that moment, the
# reaper is no longer in the job step's process tree, so the step's own cleanup cannot kill it
# first. Standard library only.
_REAPER = """
import os, shutil, signal, sys
group, temp_dir = int(sys.argv[1]), sys.argv[2]
signal.sigwait({signal.SIGTERM, signal.SIGHUP, signal.SIGINT})
try:
    os.killpg(group, signal.SIGKILL)
except ProcessLookupError:
    pass
for entry in os.listdir("/proc"):
    if entry.isdigit() and int(entry) != os.getpid():
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                if temp_dir.encode() in f.read():
                    os.kill(int(entry), signal.SIGKILL)
        except OSError:
            pass
shutil.rmtree(temp_dir, ignore_errors=True)
"""


def _die_with_parent() -> None:
    # PR_SET_PDEATHSIG (1): SIGTERM this process when the thread that started it exits.
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGHUP, signal.SIGINT})


def start_reaper(group: int, temp_dir: str) -> subprocess.Popen[bytes]:
    """A process that stops Ray's process group and removes its temp dir if the launcher is
    killed (SIGKILL included): Ray's agents would otherwise outlive the job, holding its ports."""
    return subprocess.Popen(
        [sys.executable, "-c", _REAPER, str(group), temp_dir],
        preexec_fn=_die_with_parent,
        stdin=subprocess.DEVNULL,
    )


def kill_processes_mentioning(marker: str) -> int:
    """SIGKILL every process whose command line names ``marker`` (this node's Ray temp dir)."""
    killed = 0
    me = os.getpid()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmdline:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(int(entry.name), signal.SIGKILL)
                killed += 1
    return killed


def wait_for_cluster(
    python: str, address: str, nodes: int, gpus: int, timeout_s: float, log: Log
) -> bool:
    """Block until Ray shows every planned node and GPU (progress in the log), or time out."""
    probe = importlib.resources.files("recipekit.launch").joinpath("ray_probe.py").read_text()
    command = [python, "-c", probe, address, str(nodes), str(gpus), str(timeout_s)]
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    ) as p:
        assert p.stdout is not None
        for line in p.stdout:
            log(line.rstrip())
        return p.wait() == 0
