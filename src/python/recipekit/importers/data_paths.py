"""Key paths in plain framework data (dicts and lists from YAML or a rendered config), as the
importers, the data checks and the time budget walk them.

``recipekit.keypaths`` walks typed sections; these walk what a YAML loader returns.
"""

from __future__ import annotations

import re
from typing import Any

from recipekit.markers import UNSET

_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def parts_of(path: str) -> list[str | int]:
    """``"data.train[0].seed"`` -> ``["data", "train", 0, "seed"]``."""
    return [int(index) if index else key for key, index in _PART.findall(path)]


def path_of(parts: list[str | int]) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


def resolved_at(data: Any, key: str) -> Any:
    for part in key.split("."):
        if isinstance(data, list) and part.isdigit() and int(part) < len(data):
            data = data[int(part)]
        elif isinstance(data, dict) and part in data:
            data = data[part]
        else:
            return UNSET
    return data
