"""The W&B record of a run: what ``submit`` captures, and what the head records at the end.

At submit time, ``provenance.json`` in the run directory takes what only the submitting host
knows: the git commit of the checkout ``submit`` runs in and whether it had changes, and the
container image's digest. When the framework has finished well, the first node records the run
with :func:`recipekit.lineage.tracking.record_run`: plan hash, config, job script, provenance,
the stage's input artifacts and its output as a reference artifact. ``WANDB_API_KEY`` reaches
the job as environment (Slurm's ``--export``) and is read from there by ``wandb`` alone.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from recipekit.errors import RecipeError
from recipekit.launch.framework_process import raise_on_termination
from recipekit.launch.oci_bundle import bundle_image
from recipekit.launch.profile import ClusterProfile, OciBundle, Pyxis, profile_from_json
from recipekit.launch.run_dir import JOB_SCRIPT, PLAN_FILE, PROFILE_FILE, PROVENANCE_FILE, RunDir

Log = Callable[[str], None]

# The framework ran well but its run is not in W&B: the job fails so that somebody looks.
EXIT_NOT_RECORDED = 6
GIT_TIMEOUT_S = 30


def _git(cwd: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=GIT_TIMEOUT_S
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def checkout_state(cwd: Path) -> dict[str, Any]:
    """``git_commit`` and ``git_dirty`` of the checkout at ``cwd``; None for both outside one."""
    commit = _git(cwd, "rev-parse", "HEAD")
    # Untracked files count: a recipe file not yet added changes what runs.
    status = _git(cwd, "status", "--porcelain") if commit else None
    if commit is None or status is None:
        return {"git_commit": None, "git_dirty": None}
    return {"git_commit": commit.strip(), "git_dirty": bool(status.strip())}


def image_digests(plan: Mapping[str, Any], profile: ClusterProfile) -> dict[str, str]:
    """The container the job runs in, by digest, named for the base it is (or, baked, "stage")."""
    container = profile.container
    name = "stage" if profile.shipping == "baked" else str(plan["framework"]["image"])
    if isinstance(container, OciBundle):
        image = bundle_image(container.bundle)
        return {name: image} if image is not None and "@sha256:" in image else {}
    if not isinstance(container, Pyxis) or "@sha256:" not in container.image:
        return {}
    return {name: container.image}


def capture_provenance(plan: Mapping[str, Any], profile: ClusterProfile, cwd: Path) -> str:
    """``provenance.json``'s text."""
    provenance = {**checkout_state(cwd), "images": image_digests(plan, profile)}
    return json.dumps(provenance, indent=2) + "\n"


# Checkpoint directories by step: NeMo-RL writes step_<N>, Megatron-Bridge iter_<N, 7 digits>.
_STEP_DIR = re.compile(r"^(?:step_|iter_)(\d+)$")


def last_step(plan: Mapping[str, Any]) -> int | None:
    """The last step the run saved a checkpoint for: its output artifact gets the alias
    ``step-N``, so a later stage can pin it (``run.model=super35-rl-rlvr-model:step-120``)."""
    outputs = list(plan.get("outputs", {}).values())
    if not outputs or not Path(outputs[0]).is_dir():
        return None
    steps = [int(m.group(1)) for p in Path(outputs[0]).iterdir() if (m := _STEP_DIR.match(p.name))]
    return max(steps) if steps else None


def _output_uri(plan: Mapping[str, Any]) -> str | None:
    # The framework's outputs by role; the first is the checkpoint the stage publishes.
    outputs = list(plan.get("outputs", {}).values())
    return Path(outputs[0]).as_uri() if outputs else None


def record_finished_run(
    run: RunDir, plan: Mapping[str, Any], profile: ClusterProfile, log: Log
) -> int:
    """Record the run per the profile's tracking; 0, or ``EXIT_NOT_RECORDED`` with the reason."""
    from recipekit.lineage.tracking import lineage_from_json, record_run

    tracking = profile.tracking
    if tracking.mode == "off":
        return 0
    provenance_file = run.file(PROVENANCE_FILE)
    provenance = json.loads(provenance_file.read_text()) if provenance_file.is_file() else {}
    record = {
        "stage": plan["stage"],
        "hash": plan["hash"],
        "config": plan["config"],
        "job_script": run.file(JOB_SCRIPT).read_text(),
        **provenance,
    }
    lineage = lineage_from_json(plan["stage"], plan.get("lineage"))
    try:
        recorded = record_run(
            record,
            lineage,
            directory=run.path,
            project=tracking.project,
            entity=tracking.entity,
            mode=tracking.mode,
            output_uri=_output_uri(plan),
            output_step=last_step(plan),
        )
    except RecipeError as exc:
        log(f"tracking: the run is NOT recorded: {exc.render()}")
        return EXIT_NOT_RECORDED
    except Exception as exc:  # whatever wandb raised: the job's log must say it
        log(f"tracking: the run is NOT recorded: wandb failed: {type(exc).__name__}: {exc}")
        return EXIT_NOT_RECORDED
    where = f"; upload it with `wandb sync {recorded}`" if tracking.mode == "offline" else ""
    log(f"tracking: recorded the run in W&B project {tracking.project} ({tracking.mode}){where}")
    return 0


def run_record_step(run_path: str) -> int:
    """``launcher.pex record RUN``: the job step that records a per-GPU or head-only run."""
    raise_on_termination()
    run = RunDir(Path(run_path))
    plan = run.read_json(PLAN_FILE)
    profile = profile_from_json(run.read_json(PROFILE_FILE))
    node = os.environ.get("SLURMD_NODENAME", "?")

    def log(message: str) -> None:
        print(f"[{node}] {message}", flush=True)

    return record_finished_run(run, plan, profile, log)
