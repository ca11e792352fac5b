"""What ``pipeline submit`` did, stage by stage: the record ``pipeline status`` reads.

Status cannot work out from a fresh plan which job a stage was submitted as. Planning again
after the jobs ran sees a different store: a stage that read an input its producer had not yet
made is now pinned to that version, and a stage whose key already has a run gets a new attempt,
so its plan (and run directory) is no longer the one submitted. And a stage the submission
found up to date has only the old job that made its version, which is not this chain's work.
So submit records, per stage, the run directory and job it submitted, or that it found the
stage up to date. The record lives beside the runs (``<runs_dir>/.pipelines/<pipeline>.json``),
merged stage by stage, so ``--from``/``--until`` submissions of one pipeline add up.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from recipekit.errors import RecipeError
from recipekit.shared_files import exclusive, write_whole

SUBMISSIONS = ".pipelines"


@attrs.frozen
class StageRecord:
    """One stage as the last submission that covered it left it."""

    # The action the submission decided on: runs, reason, and (up to date) the version.
    action: Mapping[str, Any]
    # The run directory it was submitted in (its job.json names the job, or the framework's
    # client it was handed to); None when it was up to date and not submitted.
    run: str | None = None
    # When the submission recorded it, for a reader of the file.
    at: str = ""

    @property
    def submitted(self) -> bool:
        return self.run is not None

    def as_json(self) -> dict[str, Any]:
        return attrs.asdict(self)


def record_file(runs_dir: str | Path, pipeline: str) -> Path:
    return Path(runs_dir) / SUBMISSIONS / f"{pipeline}.json"


def record_submission(
    runs_dir: str | Path, pipeline: str, stages: Mapping[str, StageRecord]
) -> Path:
    """Merge ``stages`` into the pipeline's record, one writer at a time, written whole."""
    target = record_file(runs_dir, pipeline)
    target.parent.mkdir(parents=True, exist_ok=True)
    with exclusive(target.with_suffix(".lock")):
        merged = {name: s.as_json() for name, s in last_submission(runs_dir, pipeline).items()}
        merged.update({name: s.as_json() for name, s in stages.items()})
        write_whole(target, json.dumps({"stages": merged}, indent=2, sort_keys=True) + "\n")
    return target


def last_submission(runs_dir: str | Path, pipeline: str) -> dict[str, StageRecord]:
    """Each stage's last submission; empty when the pipeline was never submitted here (or the
    record cannot be read: status then plans as it did before records existed)."""
    target = record_file(runs_dir, pipeline)
    from recipekit.yaml_limits import file_source, load_json

    try:
        # Within the shared limits: a record nested 10,000 deep is a RecursionError to json.
        stages = load_json(target.read_text(), file_source(target))["stages"]
        return {name: StageRecord(**fields) for name, fields in stages.items()}
    except (OSError, ValueError, KeyError, TypeError, RecipeError):
        return {}
