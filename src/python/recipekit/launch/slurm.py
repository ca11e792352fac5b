"""The Slurm command line, in its machine-readable forms, each call bounded by a timeout.

With slurmctld down, Slurm clients retry for minutes; every call here gives up after
``SLURM_TIMEOUT_S`` and says which command did not answer.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from recipekit.errors import Issue, RecipeError
from recipekit.launch.hostlist import expand_hostlist

SLURM_TIMEOUT_S = 30
ACTIVE_STATES = {
    "PENDING",
    "RUNNING",
    "CONFIGURING",
    "COMPLETING",
    "REQUEUED",
    "RESIZING",
    "SUSPENDED",
}


def _run(argv: list[str], *, env: dict[str, str] | None = None) -> str:
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=SLURM_TIMEOUT_S, env=env, check=False
        )
    except FileNotFoundError:
        raise RecipeError([Issue(argv[0], "Slurm command not found on this host")]) from None
    except subprocess.TimeoutExpired:
        raise RecipeError(
            [Issue(argv[0], f"no answer from Slurm within {SLURM_TIMEOUT_S} s (is slurmctld up?)")]
        ) from None
    if done.returncode != 0:
        raise RecipeError(
            [Issue(" ".join(argv[:2]), done.stderr.strip() or f"exit {done.returncode}")]
        )
    return done.stdout


def submit(script: Path, *, export: str = "ALL", after: Sequence[str] = ()) -> str:
    """``sbatch --parsable``: the job id. ``after``: jobs that must end well first (afterok);
    the script's own ``--dependency=singleton`` still holds (a command-line ``--dependency``
    replaces the script's, so both are given here)."""
    flags = [f"--dependency=singleton,afterok:{':'.join(after)}"] if after else []
    out = _run(["sbatch", "--parsable", f"--export={export}", *flags, str(script)])
    return out.strip().split(";")[0]


def active_jobs_named(name: str) -> list[tuple[str, str]]:
    """(job id, state) of this user's jobs with this name that are not finished."""
    out = _run(["squeue", "--noheader", f"--name={name}", "--format=%i %T"])
    jobs = [tuple(line.split()[:2]) for line in out.splitlines() if line.strip()]
    return [(j, s) for j, s in jobs if s in ACTIVE_STATES]


def job_state(job_id: str) -> str:
    """The job's state from the controller, e.g. RUNNING, COMPLETED, FAILED, CANCELLED."""
    out = _run(["scontrol", "show", "job", "--oneliner", job_id])
    for field in out.split():
        if field.startswith("JobState="):
            return field.removeprefix("JobState=")
    return "UNKNOWN"


def job_details(job_id: str) -> dict[str, str]:
    out = _run(["scontrol", "show", "job", "--oneliner", job_id])
    fields = {}
    for item in out.split():
        key, sep, value = item.partition("=")
        if sep:
            fields[key] = value
    return fields


def cancel(job_id: str) -> None:
    _run(["scancel", job_id])


def hostnames(nodelist: str) -> list[str]:
    # A job step in a container image (pyxis, an OCI bundle) usually has no Slurm clients.
    if shutil.which("scontrol") is None:
        return expand_hostlist(nodelist)
    return _run(["scontrol", "show", "hostnames", nodelist]).split()


# Set by the job script from one ``scontrol show node`` over the allocation: "NAME=ADDR ...".
NODE_ADDRESSES_VARIABLE = "RECIPEKIT_NODE_ADDRESSES"


def node_addresses(environ: Mapping[str, str]) -> dict[str, str]:
    """Each node's NodeAddr as the job script read it for every step at once (empty where it
    did not: a job script of before, or the controller did not answer)."""
    pairs = (item.partition("=") for item in environ.get(NODE_ADDRESSES_VARIABLE, "").split())
    return {name: address for name, sep, address in pairs if sep and name and address}


def node_address(node: str, environ: Mapping[str, str] | None = None) -> str:
    """The node's address as Slurm knows it (NodeAddr), which nodes use to reach each other.

    From the job script's one call for every node (``NODE_ADDRESSES_VARIABLE``) where it made
    it: a call per node and step would make Slurm's load grow with the node count. Else from
    ``scontrol``; without it (in a container image), the node's name: DNS resolves it on most
    clusters, as it does when Slurm knows no NodeAddr.
    """
    known = node_addresses(os.environ if environ is None else environ)
    if node in known:
        return known[node]
    if shutil.which("scontrol") is None:
        return node
    out = _run(["scontrol", "show", "node", "--oneliner", node])
    for field in out.split():
        if field.startswith("NodeAddr="):
            return field.removeprefix("NodeAddr=")
    return node
