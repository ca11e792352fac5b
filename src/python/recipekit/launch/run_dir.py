"""The run directory: one per plan on shared storage, holding everything the job reads.

``<runs_dir>/<stage>-<hash12>/`` holds config.yaml, plan.json, profile.json, job.sbatch, the
launcher Pex, job.json (the Slurm job id), provenance.json (what submit knew of the checkout and
images), logs/ and, with tracking, wandb/. Its name is the plan's identity: the same
plan resubmitted (or requeued) finds the same directory and the checkpoints its config names.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import attrs

from recipekit.lineage.store import run_name
from recipekit.shared_files import exclusive, write_whole

PLAN_FILE = "plan.json"
CONFIG_FILE = "config.yaml"
PROFILE_FILE = "profile.json"
JOB_SCRIPT = "job.sbatch"
JOB_RECORD = "job.json"
# Written by the head of an interactive job once its Ray cluster is complete.
INTERACTIVE_RECORD = "interactive.json"
LAUNCHER = "launcher.pex"
# The checkout (git commit, dirty flag) and image digests at submit time: the run's record.
PROVENANCE_FILE = "provenance.json"
# Written by the first node's preflight of a per-GPU job: where rank 0 listens (MASTER_ADDR).
RENDEZVOUS_FILE = "rendezvous.json"
# Written by the head of a Ray job once its GCS answers: which job and attempt it is, so that a
# requeued attempt's workers join their own head, never the previous attempt's still stopping.
RAY_HEAD_FILE = "ray-head.json"
LOGS = "logs"
# One line per node a job lost: "<job id> <unix time> <node>", written by the job script.
LOST_NODES = "lost-nodes"


@attrs.frozen
class RunDir:
    path: Path

    @classmethod
    def for_plan(cls, runs_dir: str, stage_name: str, plan_hash: str) -> RunDir:
        return cls(Path(runs_dir) / run_name(stage_name, plan_hash))

    def file(self, name: str) -> Path:
        return self.path / name

    @property
    def logs(self) -> Path:
        return self.path / LOGS

    def read_json(self, name: str) -> Any:
        return json.loads(self.file(name).read_text())

    def write_text(self, name: str, text: str, mode: int = 0o644) -> Path:
        """Write ``name`` whole or not at all."""
        return write_whole(self.file(name), text, mode)

    def _submitted(self, key: str) -> str | None:
        record = self.file(JOB_RECORD)
        if not record.is_file():
            return None
        value = json.loads(record.read_text()).get(key)
        return str(value) if value else None

    def job_id(self) -> str | None:
        return self._submitted("job_id")

    def lost_nodes(self) -> list[tuple[str, float, str]]:
        """(job id, when, node) of every node the run's jobs lost, oldest first."""
        record = self.file(LOST_NODES)
        if not record.is_file():
            return []
        found = []
        for line in record.read_text().splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[1].isdigit():
                found.append((parts[0], float(parts[1]), parts[2]))
        return found

    def delegated_to(self) -> str | None:
        """The framework's own Slurm client a delegated stage was handed to, if it was."""
        return self._submitted("delegated_to")


# Under runs_dir: one lock file per run, held by `submit` from its duplicate check to sbatch.
LOCKS = ".locks"


@contextmanager
def submit_lock(runs_dir: str, run: RunDir) -> Iterator[None]:
    """Exclusive per plan across processes and hosts sharing ``runs_dir`` (flock): a second
    ``submit`` of the same plan waits, then finds the first one's job."""
    with exclusive(Path(runs_dir) / LOCKS / f"{run.path.name}.lock"):
        yield


def create_whole(run: RunDir, fill: Callable[[RunDir], None]) -> None:
    """Make a new run directory whole or not at all: ``fill`` writes a temporary sibling,
    which is renamed into place. An existing run directory (a resubmission) is filled in place,
    file by file, each file whole."""
    if run.path.is_dir():
        fill(run)
        return
    staging = Path(tempfile.mkdtemp(dir=run.path.parent, prefix=f".{run.path.name}."))
    try:
        fill(RunDir(staging))
        staging.chmod(0o755)
        staging.rename(run.path)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def job_name(stage_name: str, plan_hash: str) -> str:
    """Slurm job name: the same plan always has the same name (singleton and duplicate check)."""
    return f"rk-{stage_name}-{plan_hash[:12]}"
