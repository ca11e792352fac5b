"""Where a stage of a running chain stands, as the lineage drawing shows it.

``recipekit.pipeline.status`` reads it from the same records as ``pipeline status`` (the run
directory's job id, Slurm's job state, the artifact store's versions); the drawing colours each
stage by its :class:`StageState` and prints the rest on the stage's box.
"""

from __future__ import annotations

import enum

import attrs


class StageState(enum.Enum):
    UP_TO_DATE = "up to date"  # not submitted now; the store holds its output
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    REQUEUED = "lost node, requeued"  # a node failed and Slurm requeued the job (not finished)
    BLOCKED = "blocked"
    SKIPPED = "skipped"  # outside --from/--until, no recipe, or not submitted


@attrs.frozen(kw_only=True)
class StageStatus:
    state: StageState = attrs.field(validator=attrs.validators.instance_of(StageState))
    job: str | None = None
    # Slurm's RunTime (``1-02:03:04``, ``00:12:30``), "" when it never started.
    elapsed: str = ""
    # The newest step the store holds of the stage's output, and the run's last step.
    step: int | None = None
    total_steps: int | None = None
    # The newest version of the output in the store (``v3``), "" when it holds none.
    version: str = ""
    # What else the state needs said: the Slurm state, restarts and lost nodes, a hand-off.
    note: str = ""

    def lines(self) -> list[str]:
        """The lines the stage's box shows under its name."""
        head = [self.state.value.upper()]
        if self.job:
            head.append(f"job {self.job}")
        if self.elapsed:
            head.append(self.elapsed)
        lines = [" · ".join(head)]
        saved = []
        if self.step is not None or self.total_steps is not None:
            done = "-" if self.step is None else str(self.step)
            total = "?" if self.total_steps is None else str(self.total_steps)
            saved.append(f"step {done} / {total}")
        if self.version:
            saved.append(f"store {self.version}")
        if saved:
            lines.append(" · ".join(saved))
        if self.note:
            lines.append(self.note)
        return lines
