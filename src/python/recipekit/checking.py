"""What every framework's checks share: the context they read, and how a list of them runs.

A check is a function named for what it guards, from a context to the issues it finds
(``Iterator[Issue]``). A framework package lists its error checks and its warning checks; the
plan runs both lists here. Each package subclasses :class:`CheckContext` with the views of its
own config that its checks read (``megatron``, ``adapter``, ...).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Generic, TypeVar

import attrs

from recipekit.errors import Issue
from recipekit.hardware import Hardware
from recipekit.model_card import ModelCard

ConfigT = TypeVar("ConfigT")
LayoutT = TypeVar("LayoutT")
ContextT = TypeVar("ContextT")


@attrs.frozen
class CheckContext(Generic[ConfigT, LayoutT]):
    config: ConfigT
    hardware: Hardware
    model: ModelCard
    layout: LayoutT


def run_checks(
    ctx: ContextT,
    errors: Sequence[Callable[[ContextT], Iterable[Issue]]],
    warnings: Sequence[Callable[[ContextT], Iterable[Issue]]],
) -> tuple[list[Issue], list[Issue]]:
    """The errors that stop the plan and the warnings shown with it."""
    return (
        [issue for check in errors for issue in check(ctx)],
        [issue for check in warnings for issue in check(ctx)],
    )
