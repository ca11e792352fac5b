"""A real multi-node Slurm (Debian's 22.05) on this host, inside a loopback-only network namespace.

``local_slurm(root)`` starts, in a network namespace of its own that has nothing but ``lo``:

- ``munged`` (as user ``munge``) with a key and socket of its own,
- ``slurmctld`` at ``127.0.1.254``,
- one ``slurmd`` per fake node ``n1..nN`` at ``127.0.1.1..127.0.1.N`` (ports 17001..), each with
  ``gpus_per_node`` fake GPUs declared as ``gres/gpu`` (character devices under the state dir), in
  one partition (``gpu``, the default),

and stops all of it again (by PID), then deletes the namespace. Everything a job runs lives in that
namespace, so nothing a test starts can send a packet off this machine: any address outside
``127.0.0.0/8`` fails with ``ENETUNREACH``.

Facts this relies on (Slurm 22.05, measured here; see shared/notes/slurm-ray-local.md):

- Enter the namespace with ``nsenter --net=/run/netns/NAME`` (``ip netns exec`` remounts ``/sys``
  and ``slurmd`` then finds no cgroup filesystem). ``nsenter`` execs the program, so the PID of
  the ``Popen`` *is* the daemon's PID.
- Several ``slurmd`` on one host: one ``NodeName`` line per node with its own ``NodeAddr`` and
  ``Port``, ``%n`` in the spool/PID/log paths, ``SlurmdParameters=config_overrides`` (the fake
  nodes claim more CPUs than the host has).
- No slurmdbd: ``JobCompType=jobcomp/filetxt`` records every finished job in ``jobcomp_path``
  (``sacct -c`` reads it).
- ``proctrack/linuxproc`` tracks a job's processes by parentage: a process that daemonizes (for
  example ``ray start`` without ``--block``) escapes it and outlives its job. ``node_processes``
  finds those too (it looks at the namespace, not at the process tree).
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import pwd
import re
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Every namespace this module creates is called NETNS_PREFIX-<creator pid>-<random>, so that a
# later run can find (and remove) one whose creator died without tearing it down.
NETNS_PREFIX = "rkslurm"
NETNS_DIR = Path("/run/netns")
# Not tempfile.gettempdir(): Unix socket paths (munge's, Ray's) must stay under 108 bytes.
SHORT_TMP = Path("/tmp")
CONTROLLER_ADDRESS = "127.0.1.254"
SLURMCTLD_PORT = 6817
SLURMD_PORT_BASE = 17000  # node k (1-based) listens on SLURMD_PORT_BASE + k
# States after which a job is over for good (scontrol's names; sacct says "CANCELLED by 0").
TERMINAL_STATES = frozenset(
    {
        "COMPLETED",
        "FAILED",
        "CANCELLED",
        "TIMEOUT",
        "NODE_FAIL",
        "PREEMPTED",
        "BOOT_FAIL",
        "DEADLINE",
        "OUT_OF_MEMORY",
    }
)
# Standard directories appended to PATH (a test sandbox may pass no PATH, or one without sbin).
_SYSTEM_PATH = ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"]
_DAEMON_NAMES = ("munged", "slurmctld", "slurmd")


class LocalSlurmError(RuntimeError):
    """The local cluster could not be started (the message has the daemons' log tails)."""


def clean_environ() -> dict[str, str]:
    """``os.environ`` without what the test runner's PEX and venv leak into child processes."""
    return {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PEX_", "__PEX", "PYTEST_"))
        and k not in ("PEX", "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")
    }


def _search_path(environ: Mapping[str, str] | None = None) -> str:
    environ = os.environ if environ is None else environ
    parts = [p for p in environ.get("PATH", "").split(os.pathsep) if p]
    parts += [p for p in _SYSTEM_PATH if p not in parts]
    return os.pathsep.join(parts)


def _which(name: str) -> str:
    found = shutil.which(name, path=_search_path())
    if found is None:
        raise LocalSlurmError(
            f"`{name}` is not installed (searched {_search_path()}); run tools/install-system-deps"
        )
    return found


def _tail(path: Path, lines: int = 40) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError as exc:
        return f"(cannot read {path}: {exc.strerror})"
    return "\n".join(text.splitlines()[-lines:]) or "(empty)"


def _netns_id(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def _pids_in_netns(ns_id: tuple[int, int]) -> list[int]:
    """PIDs of every process whose network namespace is ``ns_id``."""
    pids = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            st = os.stat(f"/proc/{entry.name}/ns/net")
        except OSError:  # gone, or a kernel thread
            continue
        if (st.st_dev, st.st_ino) == ns_id:
            pids.append(int(entry.name))
    return pids


def _cmdline(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ""
    return raw.rstrip(b"\0").replace(b"\0", b" ").decode(errors="replace")


def _ppid(pid: int) -> int:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0
    # "pid (comm) state ppid ...": comm may contain spaces and parentheses.
    return int(stat.rsplit(")", 1)[1].split()[1])


def _environ_value(pid: int, name: str) -> str | None:
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return None
    prefix = name.encode() + b"="
    for item in raw.split(b"\0"):
        if item.startswith(prefix):
            return item[len(prefix) :].decode(errors="replace")
    return None


def _kill_netns_processes(ns_id: tuple[int, int], *, deadline: float) -> list[int]:
    """SIGKILL every process in the namespace until none is left; returns the PIDs seen."""
    seen: list[int] = []
    while True:
        pids = [p for p in _pids_in_netns(ns_id) if p != os.getpid()]
        if not pids:
            return seen
        for pid in pids:
            if pid not in seen:
                seen.append(pid)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if time.monotonic() > deadline:
            return seen
        time.sleep(0.05)


def _delete_netns(netns: str) -> None:
    subprocess.run(
        [_which("ip"), "netns", "delete", netns],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
        timeout=30,
    )


def remove_stale_namespaces() -> list[str]:
    """Removes namespaces of this module whose creating process is gone (e.g. a SIGKILLed pytest).

    Kills every process left in them (all of them were started by a ``LocalSlurm``), deletes the
    namespace and its ``/tmp/<netns>`` directory. Returns the names removed.
    """
    removed: list[str] = []
    if not NETNS_DIR.is_dir():
        return removed
    for entry in sorted(NETNS_DIR.iterdir()):
        m = re.fullmatch(rf"{NETNS_PREFIX}-(\d+)-[0-9a-f]+", entry.name)
        if not m or Path(f"/proc/{m.group(1)}").exists():
            continue
        ns_id = _netns_id(entry)
        if ns_id is not None:
            _kill_netns_processes(ns_id, deadline=time.monotonic() + 10)
        _delete_netns(entry.name)
        shutil.rmtree(SHORT_TMP / entry.name, ignore_errors=True)
        removed.append(entry.name)
    return removed


@dataclass(frozen=True)
class NodeProcess:
    """A process in the cluster's namespace (see ``LocalSlurm.node_process_info``)."""

    pid: int
    ppid: int
    # $SLURMD_NODENAME of the process (set in every job step), or None (a daemon, or a process
    # started with LocalSlurm.run/popen outside any job).
    node: str | None
    cmdline: str

    def __str__(self) -> str:
        return f"{self.pid} {self.cmdline}"


@dataclass
class LocalSlurm:
    """A running local cluster. Build it with ``local_slurm(root)``; see the module docstring."""

    name: str
    netns: str
    nodes: list[str]
    node_addresses: dict[str, str]
    controller_address: str
    partition: str
    gpus_per_node: int
    cpus_per_node: int
    root: Path
    state_dir: Path
    conf_path: Path
    log_dir: Path
    # Default working directory of run/popen, so of sbatch: job output files land here.
    job_dir: Path
    # Short, per-cluster directory under /tmp (Unix socket paths must stay under 108 bytes): the
    # munge socket, and Ray's temp dir (RAY_TMPDIR in env()). Removed at teardown.
    tmp_dir: Path
    jobcomp_path: Path
    munge_socket: Path
    _daemons: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    _closed: bool = False

    # -- running things in the namespace -------------------------------------------------------

    @property
    def netns_path(self) -> Path:
        return NETNS_DIR / self.netns

    def nsenter_prefix(self) -> list[str]:
        """``argv`` prefix that runs a command in the cluster's network namespace."""
        return [_which("nsenter"), f"--net={self.netns_path}", "--"]

    def env(self) -> dict[str, str]:
        """``os.environ`` plus what Slurm clients and jobs need (sbatch passes it to the job).

        ``SLURM_CONF`` points at this cluster; ``PATH`` gains the standard (s)bin directories;
        ``RAY_TMPDIR`` puts Ray's session directory under ``tmp_dir`` (short socket paths, and
        nothing shared with other runs under /tmp/ray). What the test runner's own PEX and venv
        set (``PEX_*``, ``__PEX_EXTRA_SYS_PATH__``, ``VIRTUAL_ENV``, ``PYTHONPATH``...) is
        dropped: a job sees a plain environment, as on a real cluster.
        """
        env = clean_environ()
        env["PATH"] = _search_path(env)
        env["SLURM_CONF"] = str(self.conf_path)
        env["RAY_TMPDIR"] = str(self.tmp_dir)
        # Whatever the caller's shell had, these would point the clients elsewhere.
        for var in ("SLURM_CONFIG_DIR", "SLURM_CLUSTERS", "SQUEUE_FORMAT", "SINFO_FORMAT"):
            env.pop(var, None)
        return env

    def run(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        timeout: float = 60,
        check: bool = False,
        input: str | None = None,
        cwd: Path | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Runs ``argv`` in the namespace (text mode, output captured).

        ``env`` defaults to ``self.env()``; ``cwd`` to ``job_dir``. On ``timeout`` the process is
        killed and ``subprocess.TimeoutExpired`` raised; with ``check``, a non-zero exit raises
        ``subprocess.CalledProcessError`` whose message includes stdout and stderr.
        """
        proc = subprocess.run(
            [*self.nsenter_prefix(), *argv],
            env=dict(env) if env is not None else self.env(),
            cwd=cwd or self.job_dir,
            input=input,
            stdin=None if input is not None else subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if check and proc.returncode != 0:
            raise _CalledProcessError(proc.returncode, list(argv), proc.stdout, proc.stderr)
        return proc

    def popen(self, argv: Sequence[str], **kwargs: Any) -> subprocess.Popen[Any]:
        """Starts ``argv`` in the namespace in the background (``subprocess.Popen`` keywords).

        ``env`` defaults to ``self.env()``, ``cwd`` to ``job_dir``, stdin to /dev/null. The
        returned PID is the program's own (``nsenter`` execs it): stop it with ``terminate()``.
        """
        kwargs.setdefault("env", self.env())
        kwargs.setdefault("cwd", self.job_dir)
        kwargs.setdefault("stdin", subprocess.DEVNULL)
        return subprocess.Popen([*self.nsenter_prefix(), *argv], **kwargs)

    # -- jobs -----------------------------------------------------------------------------------

    def sbatch(self, script: str, args: Sequence[str] = (), *, timeout: float = 30) -> str:
        """Submits ``script`` (its text, ``#SBATCH`` lines allowed) with ``sbatch --parsable``.

        Returns the job ID. Output goes to ``job_dir`` unless ``args`` say otherwise.
        """
        proc = self.run(["sbatch", "--parsable", *args], input=script, timeout=timeout, check=True)
        return proc.stdout.strip().split(";")[0]

    def job_info(self, job_id: str) -> dict[str, str] | None:
        """``scontrol show job -o`` as a dict, or None once slurmctld has forgotten the job
        (MinJobAge after it ended)."""
        proc = self.run(["scontrol", "show", "job", "-o", job_id], timeout=30)
        if proc.returncode != 0:
            if "Invalid job id" in proc.stderr:
                return None
            raise _CalledProcessError(proc.returncode, ["scontrol"], proc.stdout, proc.stderr)
        return _parse_key_values(proc.stdout.splitlines()[0] if proc.stdout else "")

    def job_state(self, job_id: str) -> str | None:
        """The job's state: from slurmctld while it knows the job, else its last jobcomp record.

        ``COMPLETING`` is reported as such (the job's processes may still be running).
        None if neither knows the job.
        """
        info = self.job_info(job_id)
        if info is not None:
            return info.get("JobState")
        records = self.jobcomp_records(job_id)
        return records[-1]["JobState"] if records else None

    def wait_for_job(self, job_id: str, timeout: float) -> str:
        """Waits until the job is over for good and returns its final state (e.g. ``COMPLETED``,
        ``FAILED``, ``CANCELLED``, ``TIMEOUT``, ``NODE_FAIL``).

        A requeued job is not over (it goes back to PENDING). Returns only after the job left
        COMPLETING, i.e. once Slurm has reaped the job's tracked processes. Raises TimeoutError
        (with the job's record and the slurmctld log tail) after ``timeout`` seconds.
        """
        deadline = time.monotonic() + timeout
        state: str | None = None
        while True:
            state = self.job_state(job_id)
            if state is not None:
                base = state.split()[0]
                if base in TERMINAL_STATES:
                    return base
            if time.monotonic() > deadline:
                info = self.job_info(job_id)
                raise TimeoutError(
                    f"job {job_id} not finished after {timeout:.0f} s (state {state}); "
                    f"scontrol: {info}\n--- slurmctld log ---\n{self.log_tail('slurmctld')}"
                )
            time.sleep(0.2)

    def jobcomp_records(self, job_id: str | None = None) -> list[dict[str, str]]:
        """The jobcomp file's records (``JobId``, ``JobState``, ``NodeList``, ``ExitCode``, ...),
        oldest first: one per run of a job. A run that ended by requeue is recorded with
        ``JobState=PENDING``; the last record of a job is its final state."""
        try:
            lines = self.jobcomp_path.read_text(errors="replace").splitlines()
        except FileNotFoundError:
            return []
        records = [_parse_key_values(line) for line in lines if line.strip()]
        if job_id is not None:
            records = [r for r in records if r.get("JobId") == job_id]
        return records

    def cancel_all(self, *, timeout: float = 30) -> None:
        """``scancel`` every job and waits until the queue is empty."""
        self.run(["scancel", "--user=root"], timeout=30)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            proc = self.run(["squeue", "-h", "-o", "%i %T"], timeout=30)
            if proc.returncode == 0 and not proc.stdout.strip():
                return
            time.sleep(0.2)

    # -- processes ------------------------------------------------------------------------------

    def daemon_pids(self) -> dict[str, int]:
        """PIDs of the daemons this cluster runs: ``munged``, ``slurmctld``, ``slurmd-n1``, ..."""
        return {name: p.pid for name, p in self._daemons.items() if p.poll() is None}

    def node_process_info(self, pattern: str = "") -> list[NodeProcess]:
        """Every process in the cluster's namespace except the daemons themselves (munged,
        slurmctld, the slurmds), whose command line matches the regex ``pattern`` (``re.search``).

        That is what runs on the fake nodes: ``slurmstepd`` and everything under it, plus anything
        that escaped its job (a daemonized process is reparented out of the job's process tree, and
        Slurm's ``proctrack/linuxproc`` no longer sees it), plus whatever ``run``/``popen`` started.
        The process asking is never listed.
        """
        daemons = self.daemon_pids()
        # slurmctld's helper (slurmscriptd) and munged's children belong to them; a slurmd's
        # children are job steps (slurmstepd) and are listed.
        helpers_of = {pid for name, pid in daemons.items() if not name.startswith("slurmd-")}
        rx = re.compile(pattern)
        ns_id = _netns_id(self.netns_path)
        if ns_id is None:
            return []
        found = []
        for pid in _pids_in_netns(ns_id):
            if pid in daemons.values() or pid == os.getpid() or _ppid(pid) in helpers_of:
                continue
            cmdline = _cmdline(pid)
            if not cmdline or not rx.search(cmdline):  # no cmdline: a zombie or already gone
                continue
            found.append(
                NodeProcess(pid, _ppid(pid), _environ_value(pid, "SLURMD_NODENAME"), cmdline)
            )
        return found

    def kill_node(self, node: str) -> list[int]:
        """What a node's power failing looks like to the rest of the cluster: its slurmd and
        every process of its jobs killed at once (SIGKILL). A job step's slurmstepd is known by
        its working directory (the node's SlurmdSpoolDir), the processes under it by their
        parents or their SLURMD_NODENAME. Returns the PIDs killed."""
        daemon = self._daemons.get(f"slurmd-{node}")
        if daemon is None or daemon.poll() is not None:
            raise LocalSlurmError(f"{node} has no running slurmd")
        spool = self.state_dir / "spool" / node
        processes = self.node_process_info()
        children: dict[int, list[int]] = {}
        for process in processes:
            children.setdefault(process.ppid, []).append(process.pid)
        todo = [daemon.pid]
        for process in processes:
            with contextlib.suppress(OSError):
                if process.node == node or Path(f"/proc/{process.pid}/cwd").resolve() == spool:
                    todo.append(process.pid)
        doomed: set[int] = set()
        while todo:
            pid = todo.pop()
            if pid not in doomed:
                doomed.add(pid)
                todo += children.get(pid, [])
        for pid in doomed:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        daemon.wait(timeout=10)
        return sorted(doomed)

    def node_processes(self, pattern: str = "") -> list[str]:
        """``"PID CMDLINE"`` for each process of ``node_process_info(pattern)``."""
        return [str(p) for p in self.node_process_info(pattern)]

    def wait_for_no_node_processes(self, pattern: str = "", timeout: float = 15) -> list[str]:
        """Polls ``node_processes(pattern)`` until it is empty or ``timeout``; returns the last."""
        deadline = time.monotonic() + timeout
        while True:
            left = self.node_processes(pattern)
            if not left or time.monotonic() > deadline:
                return left
            time.sleep(0.2)

    # -- diagnostics ----------------------------------------------------------------------------

    def log_path(self, daemon: str) -> Path:
        """``slurmctld``, ``slurmd-n1``..., or ``munged``."""
        return self.log_dir / f"{daemon}.log"

    def log_tail(self, daemon: str, lines: int = 40) -> str:
        """The last lines of the daemon's log file, or of its stdout/stderr if the log file is
        empty (a daemon that dies before opening its log only writes to stderr)."""
        log = self.log_path(daemon)
        if log.exists() and log.stat().st_size:
            return _tail(log, lines)
        return _tail(self.log_dir / f"{daemon}.out", lines)

    def describe(self) -> str:
        """sinfo, squeue and the daemons' log tails, for failure messages."""
        parts = []
        for argv in (["sinfo", "-N", "-o", "%N %T %G %E"], ["squeue", "-o", "%i %j %T %R"]):
            try:
                proc = self.run(argv, timeout=15)
                parts.append(f"$ {' '.join(argv)}\n{proc.stdout}{proc.stderr}")
            except subprocess.TimeoutExpired:
                parts.append(f"$ {' '.join(argv)}\n(timed out)")
        for name in self._daemons:
            state = "running" if self._daemons[name].poll() is None else "EXITED"
            parts.append(f"--- {name} ({state}) log tail ---\n{self.log_tail(name, 20)}")
        return "\n".join(parts)

    # -- teardown -------------------------------------------------------------------------------

    def close(self) -> None:
        """Cancels all jobs, stops every daemon by PID, kills whatever is left in the namespace,
        deletes the namespace and ``tmp_dir``. Idempotent; also registered with atexit."""
        if self._closed:
            return
        self._closed = True
        atexit.unregister(self.close)
        if "slurmctld" in self.daemon_pids():
            with contextlib.suppress(subprocess.TimeoutExpired, OSError):
                self.cancel_all(timeout=15)
        # slurmds first (they stop their job steps), then slurmctld, then munged.
        order = sorted(self._daemons, key=lambda n: (not n.startswith("slurmd"), n != "slurmctld"))
        for name in order:
            proc = self._daemons[name]
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=10)
        ns_id = _netns_id(self.netns_path)
        if ns_id is not None:
            _kill_netns_processes(ns_id, deadline=time.monotonic() + 10)
        _delete_netns(self.netns)
        shutil.rmtree(self.tmp_dir, ignore_errors=True)


class _CalledProcessError(subprocess.CalledProcessError):
    def __str__(self) -> str:
        return f"{super().__str__()}\nstdout:\n{self.stdout}\nstderr:\n{self.stderr}"


def _parse_key_values(line: str) -> dict[str, str]:
    """``Key=Value Key2=Value two ...`` (scontrol -o, jobcomp/filetxt) as a dict.

    A value runs until the next `` Word=``, so values with spaces survive (``Reason=...``)."""
    out: dict[str, str] = {}
    for m in re.finditer(r"(\w[\w:/.-]*)=(.*?)(?=\s+\w[\w:/.-]*=|\s*$)", line.strip()):
        out[m.group(1)] = m.group(2)
    return out


def _slurm_conf(
    cluster: LocalSlurm, *, hostname: str, munge_socket: Path, extra_conf: str = ""
) -> str:
    s = cluster.state_dir
    lines = [
        f"ClusterName={cluster.name}",
        f"SlurmctldHost={hostname}({cluster.controller_address})",
        f"SlurmctldPort={SLURMCTLD_PORT}",
        "SlurmUser=root",
        "SlurmdUser=root",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        # cred_expire also delays a requeued job's restart (by cred_expire + 1 s; default 120).
        f"AuthInfo=socket={munge_socket},cred_expire=5",
        f"StateSaveLocation={s}/ctld",
        f"SlurmdSpoolDir={s}/spool/%n",
        f"SlurmctldPidFile={s}/run/slurmctld.pid",
        f"SlurmdPidFile={s}/run/slurmd-%n.pid",
        f"SlurmctldLogFile={cluster.log_dir}/slurmctld.log",
        f"SlurmdLogFile={cluster.log_dir}/slurmd-%n.log",
        "SlurmctldDebug=info",
        "SlurmdDebug=info",
        # Fake nodes may claim more CPUs and memory than the host has.
        "SlurmdParameters=config_overrides",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "SwitchType=switch/none",
        "MpiDefault=none",
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none",
        "JobCompType=jobcomp/filetxt",
        f"JobCompLoc={cluster.jobcomp_path}",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core",
        "GresTypes=gpu",
        "ReturnToService=2",
        "JobRequeue=1",
        "KillWait=5",
        "InactiveLimit=0",
        "MinJobAge=600",
        "PropagateResourceLimits=NONE",
        "MailProg=/bin/true",
        # Schedule at once on every event (submission, a job's end, a dependency met).
        "SchedulerType=sched/backfill",
        "SchedulerParameters=sched_interval=2,bf_interval=1,sched_min_interval=0",
    ]
    for i, node in enumerate(cluster.nodes, start=1):
        lines.append(
            f"NodeName={node} NodeHostname={hostname} NodeAddr={cluster.node_addresses[node]} "
            f"Port={SLURMD_PORT_BASE + i} CPUs={cluster.cpus_per_node} RealMemory=16000 "
            f"Gres=gpu:{cluster.gpus_per_node} State=UNKNOWN"
        )
    lines.append(
        f"PartitionName={cluster.partition} Nodes={','.join(cluster.nodes)} Default=YES "
        "MaxTime=INFINITE State=UP OverSubscribe=NO"
    )
    # Later lines win in slurm.conf: extra_conf can override any of the above.
    lines += [line.strip() for line in extra_conf.splitlines() if line.strip()]
    return "\n".join(lines) + "\n"


def _die_with_parent() -> None:
    """In the child before exec: SIGKILL me when the test process dies (even by SIGKILL), so no
    daemon outlives a killed test run. (munged loses this when nsenter switches to user munge;
    a later run's remove_stale_namespaces() gets it.)"""
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _start_daemon(
    cluster: LocalSlurm, name: str, argv: list[str], *, prefix: list[str] | None = None
) -> None:
    out = open(cluster.log_dir / f"{name}.out", "wb")  # noqa: SIM115 (the daemon keeps it)
    try:
        cluster._daemons[name] = subprocess.Popen(
            [*(prefix or cluster.nsenter_prefix()), *argv],
            env=cluster.env(),
            cwd=cluster.state_dir,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # a Ctrl-C of the test run must not kill it before teardown
            preexec_fn=_die_with_parent,
        )
    finally:
        out.close()


def _wait(
    cluster: LocalSlurm, what: str, ready: Any, watch: Sequence[str], timeout: float
) -> None:
    """Polls ``ready()`` until true; raises with log tails if a watched daemon exits or on
    timeout."""
    deadline = time.monotonic() + timeout
    while True:
        for name in watch:
            code = cluster._daemons[name].poll()
            if code is not None:
                raise LocalSlurmError(
                    f"local Slurm: {name} exited with status {code} while waiting for {what}\n"
                    f"--- {name} log tail ---\n{cluster.log_tail(name)}"
                )
        if ready():
            return
        if time.monotonic() > deadline:
            raise LocalSlurmError(
                f"local Slurm: {what} not ready after {timeout:.0f} s\n{cluster.describe()}"
            )
        time.sleep(0.1)


def mount_prefix(node_mounts: dict[str, Path]) -> list[str]:
    """A prefix that gives the program (a slurmd, so every job step it starts) its own mount
    namespace with each host folder bind-mounted where a real node mounts shared storage.
    ``unshare`` and ``sh`` exec, so the daemon keeps the PID of the Popen."""
    if not node_mounts:
        return []
    binds = " && ".join(
        f'mkdir -p {shlex.quote(target)} && mount --bind "${i + 1}" {shlex.quote(target)}'
        for i, target in enumerate(node_mounts)
    )
    script = f'{binds} && shift {len(node_mounts)} && exec "$@"'
    sources = [str(path) for path in node_mounts.values()]
    return [_which("unshare"), "--mount", "--propagation", "private", "sh", "-c", script, "sh",
            *sources]


def _start(
    cluster: LocalSlurm,
    hostname: str,
    start_timeout: float,
    extra_conf: str,
    node_mounts: dict[str, Path],
) -> None:
    ip = _which("ip")
    for d in (cluster.state_dir, cluster.log_dir, cluster.job_dir):
        d.mkdir(parents=True, exist_ok=True)
    for sub in ("ctld", "run", "dev", *(f"spool/{node}" for node in cluster.nodes)):
        (cluster.state_dir / sub).mkdir(parents=True)

    # 1. The namespace: only lo, with the controller's and the nodes' addresses.
    subprocess.run([ip, "netns", "add", cluster.netns], check=True, capture_output=True, timeout=30)
    subprocess.run(
        [ip, "-n", cluster.netns, "link", "set", "lo", "up"],
        check=True,
        capture_output=True,
        timeout=30,
    )
    for address in [cluster.controller_address, *cluster.node_addresses.values()]:
        subprocess.run(
            [ip, "-n", cluster.netns, "addr", "add", f"{address}/32", "dev", "lo"],
            check=True,
            capture_output=True,
            timeout=30,
        )

    # 2. munged, as user munge, with a key of its own. munged wants the socket's directory owned
    # by munge and searchable by all (clients connect as any user), the key readable by munge only.
    munge = pwd.getpwnam("munge")
    munge_dir = cluster.munge_socket.parent
    munge_dir.mkdir()
    munge_dir.chmod(0o755)
    key = munge_dir / "munge.key"
    key.write_bytes(secrets.token_bytes(1024))
    key.chmod(0o400)
    for path in (munge_dir, key):
        os.chown(path, munge.pw_uid, munge.pw_gid)
    munge_log = cluster.log_path("munged")
    munge_log.touch()
    os.chown(munge_log, munge.pw_uid, munge.pw_gid)
    _start_daemon(
        cluster,
        "munged",
        [
            _which("munged"),
            "--foreground",
            f"--socket={cluster.munge_socket}",
            f"--key-file={key}",
            f"--pid-file={munge_dir}/munged.pid",
            f"--seed-file={munge_dir}/munged.seed",
            f"--log-file={munge_log}",
        ],
        prefix=[
            _which("nsenter"),
            f"--net={cluster.netns_path}",
            f"--setuid={munge.pw_uid}",
            f"--setgid={munge.pw_gid}",
            "--",
        ],
    )
    _wait(cluster, "munged's socket", cluster.munge_socket.exists, ["munged"], start_timeout)

    # 3. Configuration and the fake GPUs (character devices: gres rejects plain files).
    devices = []
    for i in range(cluster.gpus_per_node):
        dev = cluster.state_dir / "dev" / f"nvidia{i}"
        os.mknod(dev, 0o666 | 0o020000, os.makedev(1, 3))  # S_IFCHR, like /dev/null
        devices.append(dev)
    cluster.conf_path.write_text(
        _slurm_conf(
            cluster, hostname=hostname, munge_socket=cluster.munge_socket, extra_conf=extra_conf
        )
    )
    files = f"{devices[0].parent}/nvidia[0-{cluster.gpus_per_node - 1}]"
    (cluster.conf_path.parent / "gres.conf").write_text(
        f"AutoDetect=off\nNodeName={','.join(cluster.nodes)} Name=gpu File={files}\n"
    )

    # 4. slurmctld, then one slurmd per node (all in the foreground: the Popen PID is theirs).
    conf = str(cluster.conf_path)
    _start_daemon(cluster, "slurmctld", [_which("slurmctld"), "-D", "-i", "-f", conf])

    def controller_up() -> bool:
        proc = cluster.run(["scontrol", "ping"], timeout=15)
        return proc.returncode == 0 and "is UP" in proc.stdout

    _wait(cluster, "slurmctld (scontrol ping)", controller_up, ["slurmctld"], start_timeout)
    for node in cluster.nodes:
        slurmd = [_which("slurmd"), "-D", "-f", conf, "-N", node]
        _start_daemon(cluster, f"slurmd-{node}", [*mount_prefix(node_mounts), *slurmd])

    want = {node: ("idle", f"gpu:{cluster.gpus_per_node}") for node in cluster.nodes}

    def nodes_idle() -> bool:
        proc = cluster.run(["sinfo", "-h", "-N", "-o", "%N %t %G"], timeout=15)
        got = {}
        for line in proc.stdout.splitlines():
            parts = line.split()
            if len(parts) == 3:
                got[parts[0]] = (parts[1], parts[2])
        return proc.returncode == 0 and got == want

    _wait(
        cluster,
        f"{len(cluster.nodes)} nodes idle with gres gpu:{cluster.gpus_per_node}",
        nodes_idle,
        ["slurmctld", *(f"slurmd-{n}" for n in cluster.nodes)],
        start_timeout,
    )


@contextlib.contextmanager
def local_slurm(
    root: Path,
    *,
    nodes: int = 3,
    gpus_per_node: int = 4,
    cpus_per_node: int = 8,
    partition: str = "gpu",
    name: str | None = None,
    extra_conf: str = "",
    start_timeout: float = 60,
    node_mounts: dict[str, Path] | None = None,
) -> Iterator[LocalSlurm]:
    """Starts a local cluster under ``root`` (state, config, logs, job output) and stops it.

    ``name`` becomes the Slurm ClusterName (default ``rk`` + random). ``extra_conf``: lines
    appended to slurm.conf (a later line overrides an earlier one). ``node_mounts``: container
    path -> host folder, bind-mounted for every node's slurmd and its jobs only (as a real node
    mounts shared storage at ``/artifacts``), in a mount namespace of their own. Raises
    LocalSlurmError, with the daemons' log tails, if a daemon dies or the nodes do not register
    within ``start_timeout`` seconds.
    """
    if not 1 <= nodes <= 200:
        raise ValueError(f"nodes={nodes}: expected 1..200")
    if os.geteuid() != 0:
        raise LocalSlurmError("local Slurm needs root (network namespaces, slurmd, munge)")
    remove_stale_namespaces()
    token = secrets.token_hex(3)
    netns = f"{NETNS_PREFIX}-{os.getpid()}-{token}"
    root = Path(root).resolve()
    state_dir = root / "state"
    if state_dir.exists():
        shutil.rmtree(state_dir)
    tmp_dir = SHORT_TMP / netns
    tmp_dir.mkdir(mode=0o755)
    node_names = [f"n{i}" for i in range(1, nodes + 1)]
    cluster = LocalSlurm(
        name=(name or f"rk{token}").lower(),
        netns=netns,
        nodes=node_names,
        node_addresses={n: f"127.0.1.{i}" for i, n in enumerate(node_names, start=1)},
        controller_address=CONTROLLER_ADDRESS,
        partition=partition,
        gpus_per_node=gpus_per_node,
        cpus_per_node=cpus_per_node,
        root=root,
        state_dir=state_dir,
        conf_path=state_dir / "etc" / "slurm.conf",
        log_dir=root / "log",
        job_dir=root / "jobs",
        tmp_dir=tmp_dir,
        jobcomp_path=state_dir / "jobcomp.txt",
        munge_socket=tmp_dir / "munge" / "munge.socket",
    )
    atexit.register(cluster.close)
    try:
        (state_dir / "etc").mkdir(parents=True)
        _start(
            cluster,
            socket.gethostname().split(".")[0],
            start_timeout,
            extra_conf,
            node_mounts or {},
        )
        yield cluster
    finally:
        cluster.close()
