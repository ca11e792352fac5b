"""A reviewer's decisions on an upgrade, kept in the checkout so that a second run is clean.

``3rdparty/reference/upgrades/<label>@<commit>.toml`` (the label's ``/`` as ``@``) holds one
``[[decision]]`` per item the report asked about: its ``subject`` as the report prints it (or
an ``fnmatch`` pattern such as ``rule vanished nemo-rl.*``, one decision for a family of
items), and a ``note`` saying what was decided and why. An item a recorded subject matches is
shown as decided and needs nothing more.
"""

from __future__ import annotations

import fnmatch
import tomllib
from pathlib import Path

from recipekit.errors import Issue, RecipeError

FOLDER = Path("3rdparty/reference/upgrades")


def path_of(checkout: Path, label: str, commit: str) -> Path:
    return checkout / FOLDER / f"{label.replace('/', '@')}@{commit[:12]}.toml"


def recorded(checkout: Path, label: str, commit: str) -> dict[str, str]:
    """subject -> note for every decision recorded for this upgrade."""
    path = path_of(checkout, label, commit)
    if not path.is_file():
        return {}
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise RecipeError([Issue(str(path), f"not valid TOML: {exc}")]) from exc
    out: dict[str, str] = {}
    for index, entry in enumerate(data.get("decision", [])):
        subject, note = entry.get("subject"), entry.get("note")
        if not isinstance(subject, str) or not isinstance(note, str) or not note.strip():
            raise RecipeError(
                [Issue(f"{path}: decision {index + 1}", "needs a subject and a non-empty note")]
            )
        out[subject] = note
    return out


def note_for(recorded_decisions: dict[str, str], subject: str) -> str | None:
    """The note of the recorded decision on ``subject``: exact first, then a pattern."""
    if subject in recorded_decisions:
        return recorded_decisions[subject]
    return next(
        (
            note
            for pattern, note in recorded_decisions.items()
            if fnmatch.fnmatchcase(subject, pattern)
        ),
        None,
    )
