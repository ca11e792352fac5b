"""Counting a job's calls to Slurm's clients, by phase, on the local Slurm.

``install_wrappers(dir, log)`` writes a wrapper for each Slurm client (srun, scontrol, ...) that
appends one line to ``log`` -- when, the job, the step, the node, the command -- and execs the
real client. Put ``dir`` first on the PATH that ``submit`` runs with: sbatch passes it to the
batch script (``--export=ALL``), and each job step inherits it, so every client call of the
submit host, the batch script and every node's steps is logged. ``read_calls`` reads the log;
``phases`` sorts its calls into submit, batch script and each step by the launcher command it
ran. ``rpc_counts`` reads slurmctld's own counters (``sdiag``), the controller's side of it.
"""

from __future__ import annotations

import re
import shlex
import shutil
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from tests.integration.support.local_slurm import LocalSlurm, _search_path

CLIENTS = ("srun", "scontrol", "sbatch", "squeue", "scancel", "sinfo", "sacct")


@dataclass(frozen=True)
class Call:
    when: float
    job: str  # "" on the submit host
    step: str  # "" outside a job step (the batch script, the submit host)
    node: str
    argv: tuple[str, ...]

    @property
    def client(self) -> str:
        return self.argv[0]


def install_wrappers(directory: Path, log: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name in CLIENTS:
        real = shutil.which(name, path=_search_path())
        if real is None:
            raise RuntimeError(f"`{name}` is not installed; run tools/install-system-deps")
        wrapper = directory / name
        # One write per call (O_APPEND, well under PIPE_BUF): lines of concurrent calls do not mix.
        wrapper.write_text(
            "#!/bin/bash\n"
            f'line="$(date +%s.%N)\t${{SLURM_JOB_ID:-}}\t${{SLURM_STEP_ID:-}}\t'
            f'${{SLURMD_NODENAME:-}}\t{name}$(printf \' %q\' "$@")"\n'
            f'echo "$line" >> {shlex.quote(str(log))}\n'
            f'exec {shlex.quote(real)} "$@"\n'
        )
        wrapper.chmod(0o755)
    return directory


def read_calls(log: Path) -> list[Call]:
    calls: list[Call] = []
    if not log.exists():
        return calls
    for line in log.read_text().splitlines():
        when, job, step, node, command = line.split("\t", 4)
        calls.append(Call(float(when), job, step, node, tuple(shlex.split(command))))
    return calls


def step_names(job_script: str) -> list[str]:
    """The launcher command of each srun step of a job script, in order (step 0 first)."""
    names = []
    for line in job_script.replace("\\\n", " ").splitlines():
        words = shlex.split(line) if line.startswith("srun ") else []
        after = [b for a, b in zip(words, words[1:], strict=False) if a.endswith("launcher.pex")]
        if after:
            names.append(after[0])
    return names


def phases(calls: list[Call], job_id: str, steps: list[str]) -> Counter[str]:
    """Calls by phase: "submit" (the submit host), "batch script", then each step by name."""
    counted: Counter[str] = Counter()
    for call in calls:
        if not call.job:
            counted["submit"] += 1
        elif call.job != job_id:
            continue
        elif not call.step or call.step == "batch":
            counted["batch script"] += 1
        else:
            index = int(call.step) if call.step.isdigit() else -1
            counted[steps[index] if 0 <= index < len(steps) else f"step {call.step}"] += 1
    return counted


def rpc_counts(cluster: LocalSlurm) -> Counter[str]:
    """slurmctld's RPCs since it started (or ``sdiag --reset``), by message type (``sdiag``)."""
    done = cluster.run(["sdiag"], timeout=30, check=True)
    section = done.stdout.partition("Remote Procedure Call statistics by message type")[2]
    section = section.partition("Remote Procedure Call statistics by user")[0]
    counts: Counter[str] = Counter()
    for name, count in re.findall(r"^\s*(\w+)\s+\(\s*\d+\)\s+count:(\d+)", section, re.MULTILINE):
        counts[name] = int(count)
    return counts
