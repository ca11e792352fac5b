"""A stage: one runnable step of a pipeline, as a frozen value a recipe file defines.

A stage is the framework config plus everything the config alone does not say: the hardware,
the model being trained, the framework version it targets. Variants are ``stage.with_values``
of a shared base; nothing is mutated.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from recipekit.checkouts import CodeCheckout
from recipekit.framework import Framework
from recipekit.hardware import Hardware
from recipekit.keypaths import with_values
from recipekit.lineage.graph import StageLineage
from recipekit.model_card import ModelCard


@attrs.frozen
class Assignment:
    """Where a variant set a key: ``recipekit explain`` reports it (file and line)."""

    key: str  # a framework key path, or a stage field (``hardware``, ``name``, ...)
    file: str
    line: int
    stage: str  # the name of the variant that set it


def _caller(depth: int) -> tuple[str, int]:
    frame = sys._getframe(depth + 1)
    return frame.f_code.co_filename, frame.f_lineno


def _construction_site() -> str:
    # Called by attrs' __init__, called by whoever wrote ``Stage(...)``.
    file, line = _caller(2)
    return f"{file}:{line}"


def _environment(value: Mapping[str, str]) -> dict[str, str]:
    return dict(value)


def _checkouts(value: Iterable[CodeCheckout]) -> tuple[CodeCheckout, ...]:
    return tuple(value)


@attrs.frozen(kw_only=True)
class Stage:
    name: str
    description: str
    hardware: Hardware
    model: ModelCard
    config: Any
    # Required: which framework reads ``config`` is never guessed (a Megatron-Bridge config
    # without it would otherwise plan as NeMo-RL). The plan checks the config is of its type.
    framework: Framework
    # What the stage reads (by role) and publishes; None for a stage outside a pipeline.
    lineage: StageLineage | None = None
    # Environment the framework needs whatever the cluster (the recipe's exports), set in the
    # job before the framework starts. Never a secret: those come from the submitting shell.
    environment: Mapping[str, str] = attrs.field(factory=dict, converter=_environment)
    # Source checkouts the stage's container must have, pinned by commit (the recipe's
    # Megatron-Bridge commit for the Super-VL recipes); the profile says where each lives.
    code: tuple[CodeCheckout, ...] = attrs.field(default=(), converter=_checkouts)
    # Provenance, for explaining a value; never part of a stage's identity (eq=False).
    # origin: file:line of the ``Stage(...)`` of the base; a variant keeps its base's.
    origin: str = attrs.field(factory=_construction_site, eq=False, repr=False)
    # What each ``with_values`` on the way to this stage set, oldest first.
    assignments: tuple[Assignment, ...] = attrs.field(default=(), eq=False, repr=False)

    def with_values(
        self,
        changes: Mapping[str, Any] | None = None,
        *,
        helper_depth: int = 0,
        **stage_fields: Any,
    ) -> Stage:
        """A variant: framework keys by dotted path in ``changes``, stage fields by keyword.

        ``helper_depth``: how many helper functions stand between the recipe line that makes the
        variant and this call; ``explain`` then points at that recipe line.
        """
        config = with_values(self.config, changes or {})
        file, line = _caller(1 + helper_depth)
        name = stage_fields.get("name", self.name)
        recorded = tuple(
            Assignment(key, file, line, name) for key in [*(changes or {}), *stage_fields]
        )
        return attrs.evolve(
            self, config=config, assignments=self.assignments + recorded, **stage_fields
        )
