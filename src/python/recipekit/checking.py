"""What every framework's checks share: the context they read, and how a list of them runs.

A check is a function named for what it guards, from a context to the issues it finds
(``Iterator[Issue]``). A framework package lists its error checks and its warning checks; the
plan runs both lists here. Each package subclasses :class:`CheckContext` with the views of its
own config that its checks read (``megatron``, ``adapter``, ...).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Container, Iterable, Iterator, Sequence
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


# The attribute of a check that ``cites`` made: the catalogue ids of the rules it mirrors.
MIRRORED = "mirrored_rules"


def cites(
    citation: Callable[[ContextT], str], rules: Sequence[str], placed: Container[str]
) -> Callable[[Callable[[ContextT], Iterable[Issue]]], Callable[[ContextT], Iterator[Issue]]]:
    """A check that mirrors one upstream rule: each Issue it finds ends with ``(citation)``, the
    words that say where the rule stands (``citation(ctx)``, from the rule's catalogue id), so
    the check's own message says only what is wrong. The ids are kept on the check (``MIRRORED``)
    for the catalogue to hold against the ``check`` it names for each. Each id must be one the
    generated rule-site table ``placed`` holds: one a pin move dropped stops the import, not the
    plan that would first cite it."""
    unplaced = [rule for rule in rules if rule and rule not in placed]
    if unplaced:
        raise KeyError(f"not in the generated rule-site table: {', '.join(unplaced)}")

    def wrap(check: Callable[[ContextT], Iterable[Issue]]) -> Callable[[ContextT], Iterator[Issue]]:
        @functools.wraps(check)
        def cited(ctx: ContextT) -> Iterator[Issue]:
            for issue in check(ctx):
                yield attrs.evolve(issue, message=f"{issue.message} ({citation(ctx)})")

        setattr(cited, MIRRORED, tuple(rule for rule in rules if rule))
        return cited

    return wrap
