"""``recipekit diff``: compiled plans compared key by key, between revisions or between stages."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from recipekit.review.compiled import compile_files_or_error, document
from recipekit.review.keydiff import Change, diff
from recipekit.review.revision import compile_tree, select, stages_at

ABSENT = "absent"


def working_tree(root: Path, *, show_progress: bool = False) -> dict[str, dict[str, Any]]:
    return compile_tree(root, label="working tree", show_progress=show_progress)


def diff_revision(
    root: Path, rev: str, targets: Sequence[str] = (), *, show_progress: bool = False
) -> dict[str, list[Change]]:
    """Per target: what changed from ``rev`` to the working tree (a new target: all added).
    ``show_progress``: each tree's compile says how far it is (stderr)."""
    before = select(stages_at(root, rev, show_progress=show_progress), targets)
    after = select(working_tree(root, show_progress=show_progress), targets)
    out: dict[str, list[Change]] = {}
    for target in [*before, *(t for t in after if t not in before)]:
        old = document(before[target]["files"]) if target in before else {}
        new = document(after[target]["files"]) if target in after else {}
        out[target] = diff(old, new)
    return out


def diff_stages(a: Any, b: Any) -> list[Change]:
    """What changes from stage ``a``'s compiled plan to stage ``b``'s."""
    return diff(document(compile_files_or_error(a)), document(compile_files_or_error(b)))
