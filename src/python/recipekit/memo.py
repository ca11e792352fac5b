"""``last_call``: a function a plan calls again and again with one object (the stage's frozen
config, a check context) keeps its result for the last object it was called with.

A plan's checks read the same derived values (the config rendered, a replay, the engine a
framework starts) many times; each is worked out once. The object is held with its result, so
its id cannot become another object's while it is kept.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

R = TypeVar("R")


def last_call(fn: Callable[[Any], R]) -> Callable[[Any], R]:
    """``fn`` of one argument, its result kept for the last argument (by identity)."""
    last: list[tuple[Any, R]] = []

    @functools.wraps(fn)
    def kept(argument: Any) -> R:
        if not last or last[0][0] is not argument:
            last[:] = [(argument, fn(argument))]
        return last[0][1]

    return kept
