"""Key-by-key differences between two nested documents (compiled plans, configs).

Keys are dotted paths (``config.policy.max_total_sequence_length``); list items that are
mappings are walked by index (``...scheduler.1.name``), other lists compare whole.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from typing import Any

import attrs

_MISSING = object()


def flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1}}`` -> ``{"a.b": 1}``; an empty mapping stays a leaf (``{}``)."""
    out: dict[str, Any] = {}
    if not prefix and isinstance(data, Mapping) and not data:
        return out  # nothing at all (a target absent on one side), not one empty key
    if isinstance(data, Mapping) and data:
        for key, value in data.items():
            out.update(flatten(value, f"{prefix}.{key}" if prefix else str(key)))
    elif isinstance(data, list) and data and any(isinstance(v, Mapping) for v in data):
        for index, value in enumerate(data):
            out.update(flatten(value, f"{prefix}.{index}" if prefix else str(index)))
    else:
        out[prefix] = data
    return out


@attrs.frozen
class Change:
    key: str
    kind: str  # "added", "removed" or "changed"
    old: Any = None
    new: Any = None

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"key": self.key, "kind": self.kind}
        if self.kind != "added":
            out["old"] = self.old
        if self.kind != "removed":
            out["new"] = self.new
        return out


def diff(old: Any, new: Any) -> list[Change]:
    """Every key added, removed or changed from ``old`` to ``new``, in key order of appearance."""
    before, after = flatten(old), flatten(new)
    changes = []
    for key in [*before, *(k for k in after if k not in before)]:
        a, b = before.get(key, _MISSING), after.get(key, _MISSING)
        if a is _MISSING:
            changes.append(Change(key, "added", new=b))
        elif b is _MISSING:
            changes.append(Change(key, "removed", old=a))
        elif not _same(a, b):
            changes.append(Change(key, "changed", old=a, new=b))
    return changes


def _same(a: Any, b: Any) -> bool:
    # 1 and 1.0 differ for the framework (an int where a float was), and so do True and 1.
    return type(a) is type(b) and a == b


def _show(value: Any) -> str:
    return json.dumps(value, default=str)


def changes_text(changes: list[Change], indent: str = "  ") -> list[str]:
    lines = []
    for c in changes:
        if c.kind == "added":
            lines.append(f"{indent}+ {c.key} = {_show(c.new)}")
        elif c.kind == "removed":
            lines.append(f"{indent}- {c.key} (was {_show(c.old)})")
        elif _is_text_lines(c.old) and _is_text_lines(c.new):
            lines.append(f"{indent}~ {c.key}:")
            body = difflib.unified_diff(c.old, c.new, lineterm="", n=0)
            lines += [f"{indent}    {line}" for line in list(body)[2:]]
        else:
            lines.append(f"{indent}~ {c.key}: {_show(c.old)} -> {_show(c.new)}")
    return lines


def _is_text_lines(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def report_text(by_target: Mapping[str, list[Change]], *, title: str = "") -> str:
    lines = [title] if title else []
    changed = {t: c for t, c in by_target.items() if c}
    for target, changes in changed.items():
        counts = {
            k: sum(1 for c in changes if c.kind == k) for k in ("added", "removed", "changed")
        }
        summary = ", ".join(f"{n} {k}" for k, n in counts.items() if n)
        lines.append(f"{target}: {summary}")
        lines += changes_text(changes)
    unchanged = [t for t, c in by_target.items() if not c]
    if unchanged:
        lines.append("unchanged: " + ", ".join(unchanged))
    return "\n".join(lines) + "\n"


def report_json(by_target: Mapping[str, list[Change]], **extra: Any) -> str:
    body = {
        **extra,
        "targets": {t: [c.as_json() for c in changes] for t, changes in by_target.items()},
    }
    return json.dumps(body, indent=2, default=str) + "\n"
