"""The JSON tables ``tools/`` writes from the pinned sources
(``tools/generated_modules.json_table``): ``{"generated_by", "note", "sources": {label: table}}``,
each read once a process by the checks that look things up in it."""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any


@functools.cache
def sources(path: Path) -> Mapping[str, Any]:
    """The table at ``path``, by the pinned source it was read from."""
    loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))["sources"]
    return loaded
