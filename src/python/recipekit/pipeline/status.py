"""Each stage's :class:`StageStatus` from the rows ``pipeline status`` prints (``chain_status``).

The drawing and the text read the same records: the run directory's job id and lost nodes,
Slurm's job state, restarts and run time, and the artifact store's versions of the output.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from recipekit.lineage.status import StageState, StageStatus
from recipekit.pipeline.chain import Chain, PlannedStage

# Slurm's job states (squeue(1), "JOB STATE CODES") by what the drawing shows.
QUEUED = frozenset(
    {"PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "CONFIGURING", "SUSPENDED"}
)
RUNNING = frozenset({"RUNNING", "COMPLETING", "STAGE_OUT", "SIGNALING", "RESIZING"})
DONE = frozenset({"COMPLETED"})
FAILED = frozenset(
    {
        "FAILED",
        "CANCELLED",
        "TIMEOUT",
        "NODE_FAIL",
        "OUT_OF_MEMORY",
        "BOOT_FAIL",
        "DEADLINE",
        "PREEMPTED",
        "SPECIAL_EXIT",
        "REVOKED",
    }
)


def stage_state(row: Mapping[str, Any], *, blocked: bool) -> tuple[StageState, str]:
    """A ``chain_status`` row's state and what else the box should say about it."""
    if blocked:
        return StageState.BLOCKED, ""
    versions = row.get("versions") or []
    state = str(row.get("state", ""))
    if row.get("job") is None:
        if state.startswith("handed to"):
            return StageState.QUEUED, state
        # Up to date is the action key's word, not the store's: a version made from other
        # inputs or another recipe is not this stage's output (pipeline plan runs it).
        action = row.get("action")
        if action is not None and not action.get("runs"):
            held = f" ({action['version']})" if action.get("version") else ""
            made_by = row.get("made_by")
            by = f", made by job {made_by['job']}" if made_by else ""
            return StageState.UP_TO_DATE, f"not submitted; the store holds its output{held}{by}"
        if action is not None:
            return StageState.SKIPPED, f"not submitted; it runs: {action.get('reason')}"
        if versions:
            return StageState.SKIPPED, "not submitted; no action key read for its versions"
        return StageState.SKIPPED, state
    notes = []
    restarts = row.get("restarts") or 0
    if restarts:
        notes.append(f"requeued {restarts}x")
    if row.get("lost_nodes"):
        notes.append("lost " + ", ".join(row["lost_nodes"]))
    if row.get("continued"):  # "continued 2x (attempt 1: steps 0-6, ...)"
        notes.append(str(row["continued"]))
    slurm_state = state.split()[0] if state else ""
    if slurm_state in QUEUED | RUNNING and notes:
        return StageState.REQUEUED, f"{slurm_state}; " + "; ".join(notes)
    for states, shown in (
        (QUEUED, StageState.QUEUED),
        (RUNNING, StageState.RUNNING),
        (DONE, StageState.DONE),
        (FAILED, StageState.FAILED),
    ):
        if slurm_state in states:
            # How it failed, where Slurm says more than "failed" (TIMEOUT, OUT_OF_MEMORY).
            extra = slurm_state if shown is StageState.FAILED and slurm_state != "FAILED" else ""
            return shown, "; ".join([n for n in (extra, *notes) if n])
    # The controller forgot the job (it ended long ago): the store says whether it published.
    if versions:
        return StageState.UP_TO_DATE, "job no longer known to Slurm; the store holds its output"
    return StageState.FAILED, "job no longer known to Slurm and nothing in the store"


def _total_steps(entry: PlannedStage) -> int | None:
    if entry.plan is None:
        return None
    policy = entry.plan.stage.framework.save_policy(entry.plan.config)
    return None if policy is None else policy.last


def _number(version: str) -> int:
    return int(version.removeprefix("v"))


def stage_statuses(
    chain: Chain, planned: Sequence[PlannedStage], rows: Sequence[Mapping[str, Any]]
) -> dict[str, StageStatus]:
    """Every stage of the pipeline: the planned ones from their rows, the rest skipped."""
    by_name = {row["stage"]: row for row in rows}
    entries = {entry.name: entry for entry in planned}
    out: dict[str, StageStatus] = {}
    for name in chain.order():
        lineage = chain.stages[name].lineage
        if name not in entries:
            blocked = StageState.BLOCKED if lineage.blocked else StageState.SKIPPED
            note = "" if lineage.blocked else "outside --from/--until"
            out[name] = StageStatus(state=blocked, note=note)
            continue
        entry, row = entries[name], by_name.get(name, {})
        state, note = stage_state(row, blocked=bool(entry.lineage.blocked))
        if entry.plan is None and state is StageState.SKIPPED:
            note = "no recipe"
        versions = row.get("versions") or []
        steps = [v["step"] for v in versions if v.get("step") is not None]
        out[name] = StageStatus(
            state=state,
            job=row.get("job"),
            elapsed=str(row.get("elapsed") or ""),
            step=max(steps) if steps else None,
            total_steps=_total_steps(entry),
            version=max((str(v["version"]) for v in versions), key=_number, default=""),
            note=note,
        )
    return out


def status_svg(
    chain: Chain, planned: Sequence[PlannedStage], rows: Sequence[Mapping[str, Any]]
) -> str:
    """The pipeline's lineage with each stage coloured by where it stands."""
    from recipekit.lineage.drawing import draw_svg

    statuses = stage_statuses(chain, planned, rows)
    return draw_svg(chain.pipeline, status=statuses, title=f"{chain.pipeline.name}: status")
