"""The artifact store: where every stage's checkpoints land and every input is read from.

The cluster profile names a directory on shared storage (``ClusterProfile.artifact_store``);
every container of every stage sees it at ``ARTIFACTS_ROOT`` (``/artifacts``). Inside it:

    <artifact>/<run>/step_120/          a checkpoint as the framework wrote it (run: the
                                        stage's run directory name, ``<stage>-<hash12>``)
    <artifact>/<run>/kept/step_120/     a hard-linked copy of a step a later stage pins, so that
                                        the framework's keep policy cannot delete it
    <artifact>/v3 -> <run>/step_120     one version per saved checkpoint, numbered as W&B
    <artifact>/step-120 -> ...          numbers them, with W&B's aliases: ``step-N`` and
    <artifact>/latest -> ...            ``latest`` (the newest)
    <artifact>/versions.json            every version: number, step, run, path, kept

A stage reads ``/artifacts/<artifact>/<selector>`` (``refs.artifact_path``), so a pin
(``run.model=super35-rl-rlvr-model:step-120``) is a path that exists exactly when that version
was published. Links are relative, so the same store works at its host path and in containers.

A stage writes its checkpoints to ``/artifacts/<artifact>/${oc.env:RECIPEKIT_RUN}``: NeMo-RL and
Megatron-Bridge resolve OmegaConf's ``oc.env`` when they load the config, and the job exports
``RECIPEKIT_RUN``. A requeued job has the same run name, so it finds its own checkpoints and
resumes from the newest.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Collection, Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import attrs

from recipekit.lineage.refs import ARTIFACTS_ROOT, LATEST
from recipekit.shared_files import exclusive, write_whole

RUN_VARIABLE = "RECIPEKIT_RUN"
RUN_PLACEHOLDER = "${oc.env:" + RUN_VARIABLE + "}"
VERSIONS_FILE = "versions.json"
# In the store's top directory: tells a mounted store from an empty mount point.
STORE_MARKER = ".recipekit-artifact-store"
KEPT = "kept"
# Checkpoint directories by step: NeMo-RL writes step_<N>, Megatron-Bridge iter_<N, 7 digits>.
STEP_DIR = re.compile(r"^(?:step_|iter_)(\d+)$")


def init_store(root: Path) -> None:
    """Make ``root`` an artifact store (its marker tells a mounted store from an empty
    mount point)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / STORE_MARKER).touch()


def is_store(root: Path) -> bool:
    return (root / STORE_MARKER).is_file()


def store_paths(plan: Mapping[str, Any]) -> dict[str, str]:
    """The plan's inputs and outputs (``role -> path``) that are in the artifact store."""
    found = {**plan.get("inputs", {}), **plan.get("outputs", {})}
    return {role: path for role, path in found.items() if stored_artifact(str(path))}


def run_name(stage: str, plan_hash: str) -> str:
    """A run's name: its run directory's, and the folder its checkpoints land in."""
    return f"{stage}-{plan_hash[:12]}"


def output_dir(artifact: str) -> str:
    """The checkpoint directory of a stage publishing ``artifact``, as its config says it."""
    return f"{ARTIFACTS_ROOT}/{artifact}/{RUN_PLACEHOLDER}"


def resolve_run(path: str, run: str) -> str:
    """``path`` with the job's run name where the config names ``RECIPEKIT_RUN``."""
    return path.replace(RUN_PLACEHOLDER, run)


def stored_artifact(path: str) -> str | None:
    """The artifact a path under ``ARTIFACTS_ROOT`` belongs to; None elsewhere."""
    prefix = ARTIFACTS_ROOT + "/"
    if not path.startswith(prefix):
        return None
    return path[len(prefix) :].split("/", 1)[0] or None


def store_output(plan: Mapping[str, Any]) -> tuple[str, str] | None:
    """(artifact, run) when a plan (``plan.json``) writes its checkpoints into the store."""
    # The framework's outputs by role; the first is the checkpoint the stage publishes.
    outputs = list(plan.get("outputs", {}).values())
    artifact = stored_artifact(outputs[0]) if outputs else None
    if artifact is None:
        return None
    return artifact, run_name(str(plan["stage"]), str(plan["hash"]))


def saved_steps(directory: Path) -> dict[int, Path]:
    """The checkpoints a framework saved in ``directory``, by step."""
    if not directory.is_dir():
        return {}
    found = {}
    for entry in directory.iterdir():
        match = STEP_DIR.match(entry.name)
        if match and entry.is_dir():
            found[int(match.group(1))] = entry
    return found


@attrs.frozen
class StoredVersion:
    """One published version of an artifact."""

    version: int
    step: int | None
    run: str
    # Relative to the artifact's directory.
    path: str
    kept: bool = False

    @property
    def aliases(self) -> list[str]:
        return [f"v{self.version}", *([f"step-{self.step}"] if self.step is not None else [])]


def versions(root: Path, artifact: str) -> list[StoredVersion]:
    """Every version of ``artifact`` in the store at ``root``, oldest first."""
    file = root / artifact / VERSIONS_FILE
    if not file.is_file():
        return []
    return [StoredVersion(**entry) for entry in json.loads(file.read_text())["versions"]]


def _locked(directory: Path) -> AbstractContextManager[None]:
    # Two jobs may publish to one artifact at once (a requeued job's last sweep and its
    # successor's first): the lock keeps version numbers unique.
    return exclusive(directory / ".lock")


def _link(directory: Path, alias: str, target: str) -> None:
    tmp = directory / f".{alias}.tmp"
    if tmp.is_symlink() or tmp.exists():
        tmp.unlink()
    tmp.symlink_to(target)
    tmp.replace(directory / alias)


def _keep(source: Path, target: Path) -> None:
    """A copy of ``source`` made of hard links: the framework deleting ``source`` (its keep
    policy) leaves the files, and the copy costs no space."""
    if target.exists():
        return
    tmp = target.with_name(target.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(source, tmp, copy_function=os.link, symlinks=True)
    tmp.replace(target)


def _record(directory: Path, known: list[StoredVersion], added: list[StoredVersion]) -> None:
    """Give each added version its alias links, move ``latest`` to the newest, and write the
    whole list (under the artifact's lock)."""
    if not added:
        return
    for version in added:
        for alias in version.aliases:
            _link(directory, alias, version.path)
    _link(directory, LATEST, added[-1].path)
    everything = [attrs.asdict(v) for v in [*known, *added]]
    write_whole(directory / VERSIONS_FILE, json.dumps({"versions": everything}, indent=1))


def publish(
    root: Path,
    artifact: str,
    run: str,
    *,
    keep_steps: Collection[int] = (),
    finished: bool = False,
) -> list[StoredVersion]:
    """Make every checkpoint ``run`` saved of ``artifact`` a version, newest last, and move
    ``latest``. Steps in ``keep_steps`` are kept (hard-linked) before they are published.
    Publishing again finds what is new; returns the versions this call added.

    A run that saves no checkpoints by step (an export writes one model) is one version, its
    whole directory, once it has ``finished`` well."""
    directory = root / artifact
    with _locked(directory):
        known = versions(root, artifact)
        seen = {(v.run, v.step) for v in known}
        added: list[StoredVersion] = []
        steps = saved_steps(directory / run)
        written = directory / run
        if finished and not steps and (run, None) not in seen and _has_files(written):
            added.append(StoredVersion(len(known), None, run, run))
        for step, saved in sorted(steps.items()):
            if (run, step) in seen:
                continue
            path = f"{run}/{saved.name}"
            kept = step in keep_steps
            if kept:
                _keep(saved, directory / run / KEPT / saved.name)
                path = f"{run}/{KEPT}/{saved.name}"
            added.append(StoredVersion(len(known) + len(added), step, run, path, kept))
        _record(directory, known, added)
        return added


def _has_files(directory: Path) -> bool:
    return directory.is_dir() and any(directory.iterdir())


def import_version(root: Path, artifact: str, source: Path, *, name: str) -> StoredVersion:
    """Register data or a checkpoint from outside the pipeline as the next version of
    ``artifact`` (what ``data import`` / ``model import`` do): copied under ``<name>/``."""
    init_store(root)
    directory = root / artifact
    with _locked(directory):
        known = versions(root, artifact)
        target = directory / name
        if target.exists():
            raise FileExistsError(f"{target} exists: import under another name")
        if source.is_dir():
            shutil.copytree(source, target, symlinks=True)
        else:
            target.mkdir()
            shutil.copy2(source, target / source.name)
        version = StoredVersion(len(known), None, name, name)
        _record(directory, known, [version])
        return version
