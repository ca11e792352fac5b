"""Where each framework's catalogued rules stand in its pinned sources, as data.

``tools/generate_rule_sites.py`` writes one table per framework package,
``recipekit/<package>/generated/rule_sites.json``, from the catalogue's anchors
(``rule_catalogue/<framework>*.toml``) found in the pinned files: rule id -> (source label,
file, line). A check's message cites a rule by its id, so no upstream line is written by hand;
a pin move regenerates the tables and every citation moves with them. The plan reads these
tables, never the catalogue or ``.reference/``.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from pathlib import Path

# (source label, file under that source, line)
Site = tuple[str, str, int]

_PACKAGES = Path(__file__).parent


def table_path(package: str) -> Path:
    """The generated table of ``recipekit.<package>``."""
    return _PACKAGES / package / "generated" / "rule_sites.json"


@functools.cache
def sites(package: str) -> Mapping[str, Site]:
    """Rule id -> where it stands, for the framework package ``package`` (``nemo_rl``)."""
    table = json.loads(table_path(package).read_text(encoding="utf-8"))
    return {rule: (label, file, line) for rule, (label, file, line) in table["sites"].items()}


@functools.cache
def keywords(package: str) -> Mapping[str, frozenset[str]]:
    """Rule id -> the keywords its call passes itself, for each ``keyword`` rule (a call that
    spreads a config's mapping with ``**``) of ``package`` that passes any."""
    table = json.loads(table_path(package).read_text(encoding="utf-8"))
    return {rule: frozenset(names) for rule, names in table.get("keywords", {}).items()}
