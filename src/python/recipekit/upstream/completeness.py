"""Whether a framework's typed sections are its pinned config classes, both ways.

From an entry point's root section down, each section found at a key path is paired with the
upstream classes the framework types that key with (``sections_below``). ``problems`` then says
where a section names no upstream class of that version, names others than the framework uses
there, lacks a key they declare, or states a key they do not declare without a reason
(``undeclared_keys``). The tests of each framework package call it for each of its roots.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import attrs

from recipekit.sections import UNDECLARED_KEYS, UPSTREAM, _union_members, is_section, key_of
from recipekit.upstream.declared import members, table


@attrs.frozen
class Found:
    """A section class at ``path`` of a root of the pinned source ``label``, and the upstream
    classes the framework types that key with there."""

    label: str
    section: type
    path: str
    candidates: tuple[str, ...]


def sections_below(
    label: str, cls: type, candidates: tuple[str, ...], path: str = ""
) -> Iterator[Found]:
    """``cls`` and every section class below it, each with its upstream classes."""
    yield Found(label, cls, path, candidates)
    keys: dict[str, Any] = {}
    for qualified in candidates:
        keys.update(table(label)[qualified].keys)
    for field in attrs.fields(cls):
        key = key_of(cls, field.name)
        spec = keys.get(key)
        if spec is None or not spec.nested:
            continue
        for member in _union_members(field.type):
            if isinstance(member, type) and is_section(member):
                yield from sections_below(label, member, spec.nested, f"{path}.{key}".lstrip("."))


def explained(cls: type) -> dict[str, str]:
    """The undeclared keys ``cls`` and its bases give reasons for."""
    out: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        out.update(klass.__dict__.get(UNDECLARED_KEYS, {}))
    return out


def problems(found: Iterable[Found]) -> list[str]:
    """Each way the sections found are not their upstream classes, one line each."""
    out = []
    for one in found:
        name, where = one.section.__name__, f"{one.path or '<root>'} @ {one.label}"
        # Its own, or inherited from a base of the same version.
        named = members(getattr(one.section, UPSTREAM, None) or ())
        own = [m for m in named if m.source == one.label]
        if not own:
            out.append(f"{name} at {where}: names no upstream class of {one.label}")
            continue
        declared = own[0]
        if set(declared.classes) != set(one.candidates):
            out.append(
                f"{name} at {where}: upstream {declared.classes}, the framework types it with "
                f"{one.candidates}"
            )
        keys = {key_of(one.section, f.name) for f in attrs.fields(one.section)}
        missing = sorted(set(declared.keys) - keys)
        extra = sorted(keys - set(declared.keys) - set(explained(one.section)))
        if missing:
            out.append(f"{name} at {where}: lacks {missing}")
        if extra and not declared.allows_extra:
            out.append(f"{name} at {where}: states undeclared {extra} without a reason")
    return out
