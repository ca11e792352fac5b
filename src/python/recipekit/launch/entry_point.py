"""One task of the framework step of a "per-gpu" or "head" stage (``launcher.pex entry-point RUN``).

It starts only once preflight has passed on every node (the job script's previous step).

- "per-gpu": srun starts one task per GPU on every node; each runs the entry point with the
  environment torch.distributed reads, taken from Slurm's task layout: ``RANK`` (SLURM_PROCID),
  ``LOCAL_RANK`` (SLURM_LOCALID), ``NODE_RANK`` (SLURM_NODEID), ``WORLD_SIZE`` (SLURM_NTASKS),
  ``LOCAL_WORLD_SIZE``, and ``MASTER_ADDR``/``MASTER_PORT``: the first node, as its preflight
  wrote it to the run directory (one ``scontrol`` call per job, not one per rank), and the
  profile's port. Every rank sees all of its node's GPUs and picks its own by ``LOCAL_RANK``, as
  under NeMo-Run's Slurm executor.
- "head": the entry point once, on the first node, with no cluster runtime.

A rank that Slurm stops (``--kill-on-bad-exit`` after another rank failed, ``scancel``, the time
limit) stops its entry point and exits with ``EXIT_STOPPED``; srun reports the highest status of
its tasks, so the job's status is that of the rank that failed, not of the ranks stopped for it.
"""

from __future__ import annotations

import json
import os
import signal
import socket
from collections.abc import Callable, Mapping
from pathlib import Path
from types import FrameType
from typing import Any

from recipekit.launch.continuation import time_limit_signalled
from recipekit.launch.framework_process import Terminated, entry_point_command, run_framework
from recipekit.launch.profile import profile_from_json
from recipekit.launch.run_dir import PLAN_FILE, PROFILE_FILE, RENDEZVOUS_FILE, RunDir

# Lower than any failure's status, so a failing rank's status stands (see the docstring).
EXIT_STOPPED = 1
EXIT_NO_RENDEZVOUS = 5
# A stopped entry point gets this long between SIGTERM and SIGKILL: less than Slurm's KillWait,
# after which Slurm kills the task and srun would report the signal instead of EXIT_STOPPED.
STOP_GRACE_S = 3.0


class RendezvousError(Exception):
    """The task cannot tell where rank 0 listens, or is not the task the plan expects."""


def write_rendezvous(run: RunDir, job_id: str, master_addr: str) -> None:
    """By the first node's preflight: where rank 0 will listen, for this job."""
    run.write_text(RENDEZVOUS_FILE, json.dumps({"job_id": job_id, "master_addr": master_addr}))


def read_rendezvous(run: RunDir, job_id: str) -> str:
    try:
        record = run.read_json(RENDEZVOUS_FILE)
    except (OSError, ValueError) as exc:
        raise RendezvousError(f"cannot read {run.file(RENDEZVOUS_FILE)} ({exc})") from None
    if record.get("job_id") != job_id:
        # A previous job's: this job's preflight step did not run on the first node.
        raise RendezvousError(
            f"{run.file(RENDEZVOUS_FILE)} is job {record.get('job_id')}'s, this is job {job_id}"
        )
    return str(record["master_addr"])


def distributed_environment(
    slurm_env: Mapping[str, str], plan: Mapping[str, Any], master_addr: str, master_port: int
) -> dict[str, str]:
    """torch.distributed's environment for this task, from Slurm's task layout."""
    hw = plan["hardware"]
    try:
        world = int(slurm_env["SLURM_NTASKS"])
        rank, local_rank = int(slurm_env["SLURM_PROCID"]), int(slurm_env["SLURM_LOCALID"])
        node_rank = int(slurm_env["SLURM_NODEID"])
    except KeyError as missing:
        raise RendezvousError(f"{missing} is not set: not a task of a Slurm job step") from None
    planned = hw["num_nodes"] * hw["gpus_per_node"]
    if world != planned:
        raise RendezvousError(
            f"the job step has {world} tasks, the plan {planned} GPUs "
            f"({hw['num_nodes']} nodes x {hw['gpus_per_node']}): one task per GPU is needed"
        )
    return {
        "MASTER_ADDR": master_addr,
        "MASTER_PORT": str(master_port),
        "WORLD_SIZE": str(world),
        "RANK": str(rank),
        "LOCAL_RANK": str(local_rank),
        "LOCAL_WORLD_SIZE": str(hw["gpus_per_node"]),
        "NODE_RANK": str(node_rank),
    }


def _exit_stopped(signum: int, _: FrameType | None) -> None:
    # Before the entry point starts or after it ended there is nothing to stop: leave at once,
    # with the status of a stopped rank (never by the signal: srun would report 128 + 15).
    os.write(1, f"stopped ({signal.Signals(signum).name}) outside the entry point\n".encode())
    os._exit(EXIT_STOPPED)


def _saving(run: RunDir, plan: Mapping[str, Any]) -> Callable[[int], bool] | None:
    """Whether a signal is the job script's time-limit request to save and stop (the framework
    saves on it: Megatron-Bridge's exit signal handler), rather than a cancel or a failure."""
    budget = plan.get("time_budget") or {}
    name = budget.get("save_signal")
    if not name:
        return None
    wanted = getattr(signal, str(name), None)
    return lambda signum: signum == wanted and time_limit_signalled(run)


def run_entry_point(run_path: str) -> int:
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, _exit_stopped)
    run = RunDir(Path(run_path))
    plan = run.read_json(PLAN_FILE)
    profile = profile_from_json(run.read_json(PROFILE_FILE))
    node = os.environ.get("SLURMD_NODENAME") or socket.gethostname()
    env = {**os.environ, "RECIPEKIT_RUN_DIR": str(run.path)}
    who = "head"
    if plan["framework"]["launch"] == "per-gpu":
        try:
            master_addr = read_rendezvous(run, os.environ.get("SLURM_JOB_ID", "local"))
            env.update(distributed_environment(os.environ, plan, master_addr, profile.master_port))
        except RendezvousError as why:
            print(f"[{node}] cannot start the rank: {why}", flush=True)
            return EXIT_NO_RENDEZVOUS
        who = f"rank {env['RANK']}/{env['WORLD_SIZE']}"

    def log(message: str) -> None:
        print(f"[{node} {who}] {message}", flush=True)

    command = entry_point_command(plan, profile, run)
    if env.get("RANK", "0") == "0":
        log(f"cd {profile.framework_root} && " + " ".join(command))
    try:
        status = run_framework(
            command,
            profile.framework_root,
            env,
            grace_s=STOP_GRACE_S,
            saving=_saving(run, plan),
            log=log,
        )
    except Terminated as why:
        log(f"stopped ({why})")
        return EXIT_STOPPED
    finally:
        # Nothing is left to stop. A signal from now on must not become this task's status
        # (Python's exit restores the default action of its own handlers: death by SIGTERM).
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, signal.SIG_IGN)
    log(f"entry point exited with status {status}")
    return status
