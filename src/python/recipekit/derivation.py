"""The rule engine behind ``DERIVED``: what YAML interpolation did, computed when a plan is made.

A key whose value is ``DERIVED`` takes the value of its rule, so an override of the source moves
it; a key given a value keeps it. Each framework lists its rules in dependency order
(``nemo_rl/derivations.py``, ``megatron_bridge/derivations.py``, ``nemo_evaluator/derivations.py``);
a source ``hardware.<field>`` reads the stage's hardware.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any, TypeVar

import attrs

from recipekit.errors import RecipeError
from recipekit.hardware import Hardware
from recipekit.keypaths import get_at, replace_at
from recipekit.markers import DERIVED, UNSET, Marker

C = TypeVar("C")


@attrs.frozen
class Derivation:
    target: str
    sources: tuple[str, ...]
    compute: Callable[..., Any]
    formula: str  # what `recipekit explain` shows
    # The target may follow its source to null (``val_top_k: ${.top_k}`` with ``top_k: null``).
    nullable: bool = False


def _same(value: Any) -> Any:
    return value


def same_rule(target: str, source: str, *, nullable: bool = False) -> Derivation:
    return Derivation(target, (source,), _same, source, nullable)


def product_rule(target: str, left: str, right: str) -> Derivation:
    return Derivation(target, (left, right), operator.mul, f"{left} * {right}")


def lookup(config: Any, hardware: Hardware, path: str) -> Any:
    """The value at ``path`` (``UNSET`` when a section on the way is absent)."""
    if path.startswith("hardware."):
        return getattr(hardware, path.removeprefix("hardware."))
    try:
        return get_at(config, path)
    except RecipeError:
        return UNSET


def derive(config: C, hardware: Hardware, rules: tuple[Derivation, ...]) -> tuple[C, list[str]]:
    """``config`` with every ``DERIVED`` key computed; also the keys that were derived."""
    derived: list[str] = []
    for rule in rules:
        if lookup(config, hardware, rule.target) is not DERIVED:
            continue  # explicit, or its section is absent
        sources = [lookup(config, hardware, source) for source in rule.sources]
        try:
            value = rule.compute(*sources)
        except TypeError:
            if not any(isinstance(v, Marker) for v in sources):
                raise
            continue  # a source left out (UNSET) that the rule cannot follow: reported unset
        if isinstance(value, Marker) or (value is None and not rule.nullable):
            continue  # nothing to follow; the plan reports the key as unset
        config = replace_at(config, rule.target, value)
        derived.append(rule.target)
    return config, derived
