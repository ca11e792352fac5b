"""The constraints pydantic enforces on a config value, as recipekit checks them.

A pinned config class constrains a key with ``Field(gt=..., ge=..., lt=..., le=...,
multiple_of=..., min_length=..., max_length=...)``, with the same metadata inside
``Annotated[...]``, or with pydantic's named types (``PositiveInt``, ``NonNegativeFloat``, ...).
The generated tables write each as ``Annotated[<type>, Bounds(...)]``; a section key of that type
refuses a value pydantic would refuse when NeMo-RL builds its config, before the job is queued.
"""

from __future__ import annotations

import functools
import operator
import types
import typing
from collections.abc import Sized
from typing import Annotated, Any, get_args, get_origin

import attrs

# Each constraint's words, in the order messages list them.
_WORDS = {
    "gt": "greater than {}",
    "ge": "at least {}",
    "lt": "less than {}",
    "le": "at most {}",
    "multiple_of": "a multiple of {}",
    "min_length": "at least {} items long",
    "max_length": "at most {} items long",
}
NAMES = tuple(_WORDS)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


@attrs.frozen(repr=False)
class Bounds:
    """What a value must also be besides its type (each constraint unset is None)."""

    gt: float | None = None
    ge: float | None = None
    lt: float | None = None
    le: float | None = None
    multiple_of: float | None = None
    min_length: int | None = None
    max_length: int | None = None

    def given(self) -> dict[str, float]:
        return {n: v for n in NAMES if (v := getattr(self, n)) is not None}

    def holds(self, value: Any) -> bool:
        """Whether ``value`` keeps every constraint that applies to it (numbers take the
        numeric ones, strings, lists and mappings the lengths; pydantic applies no other)."""
        if _number(value):
            return (
                (self.gt is None or value > self.gt)
                and (self.ge is None or value >= self.ge)
                and (self.lt is None or value < self.lt)
                and (self.le is None or value <= self.le)
                and (self.multiple_of is None or value % self.multiple_of == 0)
            )
        if isinstance(value, Sized) and not isinstance(value, bytes):
            return (self.min_length is None or len(value) >= self.min_length) and (
                self.max_length is None or len(value) <= self.max_length
            )
        return True

    def words(self) -> str:
        return " and ".join(_WORDS[n].format(_shown(v)) for n, v in self.given().items())

    def __repr__(self) -> str:
        # The source text the generated tables hold (``Bounds(gt=0)``).
        return "Bounds(" + ", ".join(f"{n}={_shown(v)}" for n, v in self.given().items()) + ")"


def _shown(value: float) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def from_keywords(keywords: dict[str, Any]) -> Bounds | None:
    """The bounds among a ``Field(...)``'s (or ``Interval(...)``'s) literal keyword values."""
    found = {k: v for k, v in keywords.items() if k in NAMES and _number(v)}
    for name in ("min_length", "max_length"):
        if name in found:
            found[name] = int(found[name])
    return Bounds(**found) if found else None


@functools.cache
def unbounded(tp: Any) -> Any:
    """The type ``tp`` without its bounds, at every depth."""
    origin, args = get_origin(tp), get_args(tp)
    if origin is Annotated:
        return unbounded(args[0])
    if origin in (typing.Union, types.UnionType):
        return functools.reduce(operator.or_, (unbounded(a) for a in args))
    if origin is tuple:
        return tuple[tuple(a if a is Ellipsis else unbounded(a) for a in args)]  # type: ignore[misc]
    if origin is dict and len(args) == 2:
        return dict[unbounded(args[0]), unbounded(args[1])]  # type: ignore[misc]
    return tp
