"""The values a pinned framework accepts for a string setting it dispatches on (a registry's
keys, an enum, an ``if``/``elif`` chain), as ``tools/generate_allowed_values.py`` reads them
from the pinned source into ``allowed_values.json``. A section field takes them with
``recipekit.validators.upstream_values(NAME)``; the section resolves NAME against the pinned
source its ``upstream`` class names (``sections._with_allowed_values``)."""

from __future__ import annotations

from pathlib import Path

import attrs

from recipekit.generated_tables import sources

TABLE = Path(__file__).with_name("allowed_values.json")


@attrs.frozen
class Allowed:
    """One set at one pinned source, and where that source defines it."""

    values: tuple[str, ...]
    source: str
    file: str
    line: int
    # Other sites whose values the set takes too: (source, file, line).
    also: tuple[tuple[str, str, int], ...] = ()
    # The framework folds the value's case before it compares (``scheme.lower() == "lora"``).
    case_folded: bool = False

    def accepts(self, value: str) -> bool:
        return (value.lower() if self.case_folded else value) in self.values

    def cited(self) -> str:
        return " and ".join(
            f"{file}:{line} @ {source.split('/', 1)[1]}"
            for source, file, line in ((self.source, self.file, self.line), *self.also)
        )


def names() -> frozenset[str]:
    return frozenset(name for table in sources(TABLE).values() for name in table["sets"])


def allowed(name: str, source: str) -> Allowed:
    """The set ``name`` as the pinned ``source`` (a label, ``nemo-rl/super-v3``) has it, or as
    the one source that defines it (a Megatron-Core setting is the same whichever NeMo-RL pin
    passes it on). KeyError where neither holds: the section names a set its pin lacks."""
    tables = sources(TABLE)
    holders = [label for label, table in tables.items() if name in table["sets"]]
    if source not in holders:
        if len(holders) != 1:
            raise KeyError(
                f"allowed value set {name!r} is not read at {source!r} (read at: "
                f"{', '.join(holders) or 'none'}): add it to tools/generate_allowed_values.py SETS"
            )
        source = holders[0]
    entry = tables[source]["sets"][name]
    return Allowed(
        tuple(entry["values"]),
        entry.get("source", source),
        entry["file"],
        entry["line"],
        tuple((s, f, line) for s, f, line in entry.get("also", ())),
        entry.get("case_folded", False),
    )
