"""Which model and layout wrote a checkpoint directory, and whether a run may resume it.

No framework records this where a plan can read it, and both failures are silent or late:
resuming another model's checkpoint (NeMo-RL #415) and resuming after a TP/PP/EP or DP change
(Megatron-LM #1517, Megatron-Bridge #5637). Megatron-Bridge notices only a (TP, PP) change, and
then drops the RNG state (src/megatron/bridge/training/checkpointing.py:2859 @ 067f987df) and
refuses an optimizer state saved without ``fully_parallel_save`` (:2894); an EP or DP change it
does not see at all.

So the head node writes a stamp (``recipekit-checkpoint.json``: the model card, the parallel
sizes, the stage and its plan hash) into the directory a stage saves to, before the framework
starts, and every version the run publishes records the same stamp in its store marker
(``meta.checkpoint_stamp``). Every later run that resumes or starts from a stamped directory
or version is checked against it, at plan time where it is visible and in the job's preflight
always:

- another model: refused;
- another layout: refused unless the stage says ``run.reshard=true``, and then the plan says
  which sizes change and that the framework's distributed checkpointing reshards them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from recipekit.errors import Issue, RecipeError
from recipekit.lineage.refs import ARTIFACTS_ROOT
from recipekit.lineage.store import (
    read_marker,
    resolve_run,
    resolve_selector,
    run_name,
    stored_input,
    versions,
)
from recipekit.parallelism import ParallelLayout

STAMP_FILE = "recipekit-checkpoint.json"
STAMP_FORMAT = 1

# The plan's layout keys (both frameworks' Layout.as_json) a checkpoint's sharding depends on,
# and how a message names them.
LAYOUT_SIZES: dict[str, str] = ParallelLayout.plan_labels()

RESHARD_KEY = "run.reshard"


class StampError(Exception):
    """A stamp that exists but cannot be read: never treated as no stamp."""


def _sizes(value: Mapping[str, int]) -> dict[str, int]:
    return {name: int(value[name]) for name in LAYOUT_SIZES if name in value}


@attrs.frozen(kw_only=True)
class CheckpointStamp:
    model: str
    layout: Mapping[str, int] = attrs.field(converter=_sizes)
    stage: str
    plan_hash: str

    @classmethod
    def of_plan(cls, plan: Mapping[str, Any]) -> CheckpointStamp:
        """The stamp a run of this plan (``Plan.as_json``) writes."""
        return cls(
            model=str(plan["model"]),
            layout=plan["layout"],
            stage=str(plan["stage"]),
            plan_hash=str(plan["hash"]),
        )

    def as_json(self) -> dict[str, Any]:
        return {"format": STAMP_FORMAT, **attrs.asdict(self)}

    @classmethod
    def from_json(cls, data: Any) -> CheckpointStamp:
        if not isinstance(data, dict) or data.get("format") != STAMP_FORMAT:
            raise ValueError(f"not a format-{STAMP_FORMAT} checkpoint stamp")
        return cls(
            model=data["model"],
            layout=data["layout"],
            stage=data["stage"],
            plan_hash=data["plan_hash"],
        )

    def describe(self) -> str:
        sizes = " ".join(f"{LAYOUT_SIZES[k]} {v}" for k, v in self.layout.items())
        return f"{self.model} ({sizes}), written by {self.stage} plan {self.plan_hash[:12]}"


def read_stamp(directory: Path) -> CheckpointStamp | None:
    """The stamp in ``directory``; None when it has none (a fresh or an unstamped directory)."""
    path = directory / STAMP_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StampError(f"{path}: cannot be read ({exc.strerror})") from None
    try:
        return CheckpointStamp.from_json(json.loads(text))
    except (ValueError, KeyError, TypeError) as exc:
        raise StampError(f"{path}: damaged ({exc})") from None


def write_stamp(directory: Path, stamp: CheckpointStamp) -> None:
    """Write (or replace, after an allowed reshard) the stamp: whole or absent, never half."""
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / STAMP_FILE
    partial = directory / f".{STAMP_FILE}.partial"
    partial.write_text(json.dumps(stamp.as_json(), indent=2, sort_keys=True) + "\n")
    with partial.open("rb") as handle:
        os.fsync(handle.fileno())
    os.replace(partial, target)


def layout_changes(found: CheckpointStamp, now: CheckpointStamp) -> list[str]:
    """``TP 4 -> 8`` for every size that differs (a size one side lacks is not compared)."""
    return [
        f"{LAYOUT_SIZES[name]} {found.layout[name]} -> {now.layout[name]}"
        for name in LAYOUT_SIZES
        if name in found.layout and name in now.layout and found.layout[name] != now.layout[name]
    ]


@attrs.frozen
class ResumeVerdict:
    errors: tuple[Issue, ...] = ()
    # What the run will do that the user should read in the plan (an allowed reshard).
    notes: tuple[Issue, ...] = ()


def resume_verdict(
    key: str,
    path: str,
    found: CheckpointStamp,
    now: CheckpointStamp,
    *,
    reshard: bool,
    whole_state: bool = True,
) -> ResumeVerdict:
    """A run of ``now`` loading the checkpoint ``found`` stamped, read from ``key``'s ``path``:
    its whole training state (``whole_state``), or its weights alone, which every loader
    reshards, so that only another model is wrong."""
    if found.model != now.model:
        return ResumeVerdict(
            errors=(
                Issue(
                    key,
                    f"{path} holds a checkpoint of {found.describe()}; this stage trains "
                    f"{now.model}: resuming another model's checkpoint loads the wrong weights "
                    "or fails on their shapes (NeMo-RL #415)",
                    value=path,
                    hint="give this stage its own checkpoint directory",
                ),
            )
        )
    changes = layout_changes(found, now) if whole_state else []
    if not changes:
        return ResumeVerdict()
    what = ", ".join(changes)
    if not reshard:
        return ResumeVerdict(
            errors=(
                Issue(
                    key,
                    f"{path} was saved by {found.describe()}; this plan changes {what}. "
                    "Resuming under another layout needs its sharded state resharded "
                    "(Megatron-LM #1517, Megatron-Bridge #5637)",
                    value=path,
                    hint=f"--set {RESHARD_KEY}=true to reshard it, or restore the layout",
                ),
            )
        )
    return ResumeVerdict(
        notes=(
            Issue(
                key,
                f"resumes {path} resharded ({what}) by distributed checkpointing "
                f"({RESHARD_KEY}=true); RNG state is not restored across a TP/PP change",
                value=path,
            ),
        )
    )


def _paths(value: Mapping[str, str]) -> dict[str, str]:
    return dict(value)


@attrs.frozen
class CheckpointReads:
    """The checkpoint directories a run loads, by the config key that names each
    (``Framework.checkpoint_reads``)."""

    # Whole training state (weights, optimizer, step): model and layout must agree.
    resumes: Mapping[str, str] = attrs.field(factory=dict, converter=_paths)
    # Weights only, resharded on load (a pretrained or an earlier stage's checkpoint): the
    # model must agree.
    starts: Mapping[str, str] = attrs.field(factory=dict, converter=_paths)

    def as_json(self) -> dict[str, Any]:
        return {"resumes": dict(self.resumes), "starts": dict(self.starts)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> CheckpointReads:
        data = data or {}
        return cls(resumes=data.get("resumes", {}), starts=data.get("starts", {}))


MARKER_KEY = "checkpoint_stamp"


def _stored_stamp(root: Path, artifact: str, selector: str) -> CheckpointStamp | None:
    """The stamp a store version's marker records; None for a version made before stamps, or
    one the store lacks (the inputs check reports that)."""
    try:
        version = resolve_selector(versions(root, artifact), selector)
    except RecipeError:
        return None
    if version is None:
        return None
    marker = read_marker(root / artifact, version.version) or {}
    recorded = (marker.get("meta") or {}).get(MARKER_KEY)
    if recorded is None:
        return None
    try:
        return CheckpointStamp.from_json(recorded)
    except (ValueError, KeyError, TypeError) as exc:
        raise StampError(f"{artifact}:{selector}: its marker's stamp is damaged ({exc})") from None


def find_stamp(path: str, run: str, *, root: Path, visible_only: bool) -> CheckpointStamp | None:
    """The stamp of a checkpoint a plan names: a store version's (``/artifacts/<artifact>/
    <selector>[/...]``) from its marker, a directory's from its stamp file (the run's name in
    place of the run placeholder). ``root``: where the store the plan sees at /artifacts is
    mounted here. ``visible_only``: None where this machine cannot see it."""
    resolved = resolve_run(path, run)
    stored = stored_input(resolved)
    if stored is not None and Path(root, *stored).is_symlink():
        return _stored_stamp(root, *stored)
    inside = resolved.removeprefix(ARTIFACTS_ROOT + "/")
    directory = root / inside if inside != resolved else Path(resolved)
    if visible_only and not directory.is_dir():
        return None
    return read_stamp(directory)


def reads_verdict(
    reads: CheckpointReads,
    now: CheckpointStamp,
    *,
    reshard: bool,
    run: str,
    visible_only: bool,
    root: Path = Path(ARTIFACTS_ROOT),
) -> ResumeVerdict:
    """Every stamped directory ``reads`` names against the run about to start. ``visible_only``
    (plan time): a directory this machine cannot see is left to the job's preflight."""
    errors: list[Issue] = []
    notes: list[Issue] = []
    for whole_state, loads in ((True, reads.resumes), (False, reads.starts)):
        for key, path in loads.items():
            try:
                found = find_stamp(path, run, root=root, visible_only=visible_only)
            except StampError as exc:
                errors.append(Issue(key, str(exc), value=path))
                continue
            if found is None:
                continue
            verdict = resume_verdict(
                key, path, found, now, reshard=reshard, whole_state=whole_state
            )
            errors += verdict.errors
            notes += verdict.notes
    return ResumeVerdict(errors=tuple(errors), notes=tuple(notes))


# The rules the plan, submit and every node's preflight run for any stage whatever its
# framework (the rule catalogue cites them: recipekit.checkpoint.*).
PLAN_RULES = (resume_verdict,)


def planned_run_verdict(
    plan: Mapping[str, Any], *, root: Path = Path(ARTIFACTS_ROOT), visible_only: bool
) -> ResumeVerdict:
    """``reads_verdict`` for a plan as the job and submit read it (``Plan.as_json``)."""
    return reads_verdict(
        CheckpointReads.from_json(plan.get("checkpoints")),
        CheckpointStamp.of_plan(plan),
        reshard=bool(plan.get("lineage", {}).get("reshard")),
        run=run_name(str(plan["stage"]), str(plan["hash"])),
        visible_only=visible_only,
        root=root,
    )


__all__ = [
    "PLAN_RULES",
    "planned_run_verdict",
    "CheckpointReads",
    "MARKER_KEY",
    "find_stamp",
    "reads_verdict",
    "LAYOUT_SIZES",
    "RESHARD_KEY",
    "STAMP_FILE",
    "CheckpointStamp",
    "ResumeVerdict",
    "StampError",
    "layout_changes",
    "read_stamp",
    "resume_verdict",
    "write_stamp",
]
