"""Running a pinned function's program (``tools/guard_reader.program``) on a config's values.

A guard of Megatron-Core's ``TransformerConfig.__post_init__`` often reads a value the method
made first (``ffn_hidden_size`` is ``4 * hidden_size`` where none is given). The replay runs the
method's assignments and branches on the values it knows, and reports each guard it reaches
that fails, with the values it read. What it cannot tell (a name with no value, a call it does
not evaluate, a branch it cannot decide) it forgets: a guard that reads a forgotten name is not
evaluated, and a branch it cannot decide forgets whatever either side changes. A branch that
may return leaves the rest of its function undecided: its later guards are not evaluated and
its later assignments forget.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs

from recipekit.upstream import conditions

# What a "forget" step names to forget every value (``tools/guard_reader.program``).
EVERYTHING = "*"


@functools.cache
def pinned_source(table: Path) -> dict[str, Any]:
    """The one pinned source's entry (its ``classes``, and whatever else its generator writes
    beside them) of a generated table of config-class programs (``tools/config_programs.py``),
    read once per process."""
    (source,) = json.loads(table.read_text(encoding="utf-8"))["sources"].values()
    found: dict[str, Any] = source
    return found


def programs(table: Path) -> dict[str, dict[str, Any]]:
    """Class name -> its entry (defaults, program, ...) in a generated table of one pinned
    source's config classes."""
    classes: dict[str, dict[str, Any]] = pinned_source(table)["classes"]
    return classes


@functools.cache
def constant_defaults(table: Path, name: str) -> dict[str, Any]:
    """The defaults of the class ``name`` in ``table`` that are constants, evaluated (shared
    between replays, which never change them)."""
    return conditions.bound(programs(table)[name]["defaults"], {})


@attrs.frozen
class Reached:
    """A guard that fails, or a warning that is issued, and the values when the replay got
    there: ``step`` is the program's located step (``described`` reads it)."""

    step: Sequence[Any]
    values: dict[str, Any]


class _Return(Exception):
    """The function returned."""


@attrs.define
class _Frame:
    """One function's run: ``decided`` turns False once a branch that may have returned could
    not be decided, from when on the rest of the function may not run at all."""

    decided: bool = True


def replay(steps: Sequence[Any], values: dict[str, Any]) -> list[Reached]:
    """Every failing guard and issued warning of ``steps`` on ``values``, in the order the
    function reaches them."""
    state = dict(values)
    found: list[Reached] = []
    _function(steps, state, found)
    return found


def _function(steps: Sequence[Any], state: dict[str, Any], found: list[Reached]) -> None:
    try:
        _run(steps, state, found, _Frame())
    except _Return:
        pass


def _forget(state: dict[str, Any], names: Sequence[str]) -> None:
    if EVERYTHING in names:
        state.clear()
    for name in names:
        state.pop(name, None)


def _run(steps: Sequence[Any], state: dict[str, Any], found: list[Reached], frame: _Frame) -> None:
    for step in steps:
        kind = step[0]
        if kind == "set":
            known, value = (
                (False, None) if step[2] is None else conditions.evaluated(step[2], state)
            )
            if known and frame.decided:
                state[step[1]] = value
            else:
                state.pop(step[1], None)
        elif kind == "forget":
            _forget(state, step[1])
        elif kind == "if":
            _, test, then, orelse, changed, exits = step
            taken = None if test is None or not frame.decided else conditions.holds(test, state)
            if taken is None:
                _forget(state, changed)
                if exits:
                    frame.decided = False
            else:
                _run(then if taken else orelse, state, found, frame)
        elif kind == "guard":
            if frame.decided and step[1] is not None and conditions.holds(step[1], state):
                found.append(Reached(step, dict(state)))
        elif kind == "warn":
            if frame.decided:
                found.append(Reached(step, dict(state)))
        elif kind == "call":
            if frame.decided:
                _function(step[1], state, found)
            else:
                _forget(state, [EVERYTHING])
        elif kind == "return":
            if frame.decided:
                raise _Return


def located(steps: Sequence[Any]) -> Iterator[Sequence[Any]]:
    """Every guard and warning step of ``steps``, in the program's order."""
    for step in steps:
        if step[0] in ("guard", "warn"):
            yield step
        elif step[0] == "if":
            yield from located(step[2])
            yield from located(step[3])
        elif step[0] == "call":
            yield from located(step[1])


def described(step: Sequence[Any]) -> tuple[str, str, bool]:
    """(file:line, the condition on the way, whether a hand-written rule mirrors it) of a
    located guard (``["guard", failing, raised, where, shown, anchor, mirrored, live]``) or
    warning (``["warn", where, shown, anchor, mirrored, live]``): ``tools/config_programs.py``."""
    if step[0] == "guard":
        return step[3], step[4], step[6]
    return step[1], step[2], step[4]
