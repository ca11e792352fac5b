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
import subprocess
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from recipekit.errors import RecipeError
from recipekit.launch.framework_process import raise_on_termination
from recipekit.launch.oci_bundle import bundle_image
from recipekit.launch.profile import (
    ClusterProfile,
    NoContainer,
    OciBundle,
    Pyxis,
    profile_from_json,
)
from recipekit.launch.run_dir import JOB_SCRIPT, PLAN_FILE, PROFILE_FILE, PROVENANCE_FILE, RunDir
from recipekit.lineage.checkpoint_stamp import MARKER_KEY, CheckpointStamp
from recipekit.lineage.refs import ARTIFACTS_ROOT
from recipekit.lineage.store import (
    StoredVersion,
    completed_meta,
    publish,
    saved_steps,
    store_output,
    versions,
)
from recipekit.lineage.tracking import OutputVersion

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
    if isinstance(profile.container, NoContainer):
        return {}
    images = stage_images(str(plan["framework"]["image"]), profile)
    return {name: image for name, image in images.items() if "@sha256:" in image}


def stage_images(base: str, profile: ClusterProfile, *, delegated: bool = False) -> dict[str, str]:
    """The image a stage on ``base`` runs in on ``profile`` (already ``for_base``), as the
    profile names it: pinned by digest, or a tag (a tag still names what the job pulls, so a
    new tag is a new image); an OCI bundle by the image ``pull_bundle`` unpacked into it, or by
    its path where it records none. Named for the base (or, baked, "stage"); {} without a
    container. The action key covers these (``pipeline.actions``)."""
    container = profile.container
    name = "stage" if profile.shipping == "baked" else base
    if isinstance(container, OciBundle):
        return {name: bundle_image(container.bundle) or f"bundle:{container.bundle}"}
    if isinstance(container, Pyxis):
        return {name: container.image}
    # No container of ours: a delegated framework's client starts the base's image itself.
    image = profile.site_values(base)["{image}"] if delegated else None
    return {name: image} if image else {}


def capture_provenance(plan: Mapping[str, Any], profile: ClusterProfile, cwd: Path) -> str:
    """``provenance.json``'s text."""
    provenance = {**checkout_state(cwd), "images": image_digests(plan, profile)}
    return json.dumps(provenance, indent=2) + "\n"


def publish_checkpoints(
    plan: Mapping[str, Any], log: Log, *, finished: bool = False
) -> list[StoredVersion]:
    """Make the checkpoints the run has saved so far versions of its output artifact (the
    store is at ``/artifacts`` wherever the job runs); keeps the steps later stages pin. A run
    that has ``finished`` well and saved no steps is published whole."""
    found = store_output(plan)
    if found is None:
        return []
    artifact, run_id = found
    keep = plan.get("lineage", {}).get("keep_steps", ())
    root = Path(ARTIFACTS_ROOT)
    # What the versions record of how they were made (the action key, plan hash and the input
    # versions the job read): what `pipeline plan` compares to call a stage up to date.
    action = plan.get("action")
    meta = completed_meta(action, root) if isinstance(action, Mapping) else {}
    # Which model and layout wrote these checkpoints, for the runs that resume or start from
    # them (recipekit.lineage.checkpoint_stamp).
    meta = {**meta, MARKER_KEY: CheckpointStamp.of_plan(plan).as_json()}
    added = publish(root, artifact, run_id, keep_steps=keep, finished=finished, meta=meta)
    for version in added:
        kept = " (kept for a later stage)" if version.kept else ""
        what = f"step-{version.step}" if version.step is not None else "the run's output"
        log(f"published {artifact}:v{version.version} = {what}{kept}")
    return added


class CheckpointPublisher:
    """Publishes the run's checkpoints while the framework runs, so that a step a later stage
    pins is kept before the framework's keep policy deletes it."""

    def __init__(self, plan: Mapping[str, Any], log: Log, interval_s: float) -> None:
        self._plan, self._log, self._interval_s = plan, log, interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="publisher", daemon=True)

    def __enter__(self) -> CheckpointPublisher:
        if store_output(self._plan) is not None:
            self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def _loop(self) -> None:
        while not self._stop.wait(self._interval_s):
            try:
                publish_checkpoints(self._plan, self._log)
            except OSError as exc:  # the next sweep tries again; the last one must succeed
                self._log(f"publishing checkpoints failed for now: {exc}")


def _published_outputs(plan: Mapping[str, Any], profile: ClusterProfile) -> list[OutputVersion]:
    """What W&B records as the output artifact's versions, oldest first: every version the run
    published, those the framework has deleted since (its keep policy) marked so."""
    found = store_output(plan)
    if found is not None and profile.artifact_store is not None:
        artifact, run_id = found
        host, here = Path(profile.artifact_store.path) / artifact, Path(ARTIFACTS_ROOT) / artifact
        return [
            OutputVersion((host / v.path).as_uri(), v.step, deleted=not (here / v.path).exists())
            for v in versions(Path(ARTIFACTS_ROOT), artifact)
            if v.run == run_id
        ]
    outputs = list(plan.get("outputs", {}).values())
    if not outputs:
        return []
    steps = saved_steps(Path(outputs[0]))
    return [OutputVersion(Path(outputs[0]).as_uri(), max(steps) if steps else None)]


def record_finished_run(
    run: RunDir, plan: Mapping[str, Any], profile: ClusterProfile, log: Log
) -> int:
    """Publish the run's last checkpoints, then record the run per the profile's tracking; 0,
    or ``EXIT_NOT_RECORDED`` with the reason."""
    from recipekit.lineage.tracking import lineage_from_json, record_run

    try:
        publish_checkpoints(plan, log, finished=True)
    except OSError as exc:
        log(f"publishing checkpoints failed: {exc}")
        return EXIT_NOT_RECORDED
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
    action = plan.get("action")
    if isinstance(action, Mapping):
        # The same keys the published versions' markers carry, so W&B and the store agree.
        try:
            record["action"] = completed_meta(action, Path(ARTIFACTS_ROOT))
        except RecipeError as exc:  # the store unreadable here: the plan's own record
            log(f"tracking: input versions not resolved ({exc.render()}); recording the plan's")
            record["action"] = dict(action)
    lineage = lineage_from_json(plan["stage"], plan.get("lineage"))
    try:
        recorded = record_run(
            record,
            lineage,
            directory=run.path,
            project=tracking.project,
            entity=tracking.entity,
            mode=tracking.mode,
            outputs=_published_outputs(plan, profile),
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

    from recipekit.launch.continuation import finish_attempt

    # The framework's step ended well (else the script stopped before this step): done, or
    # stopped at its save deadline short of its step budget (the job continues).
    verdict = finish_attempt(run, plan, 0, log)
    if verdict is not None:
        return verdict
    return record_finished_run(run, plan, profile, log)
