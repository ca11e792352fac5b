"""A stage: one runnable step of a pipeline, as a frozen value a recipe file defines.

A stage is the framework config plus everything the config alone does not say: the hardware,
the model being trained, the framework version it targets. Variants are ``stage.with_values``
of a shared base; nothing is mutated.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from recipekit.hardware import Hardware
from recipekit.keypaths import with_values
from recipekit.model_card import ModelCard
from recipekit.nemo_rl.grpo import NEMO_RL_GRPO, NemoRLGrpo


@attrs.frozen(kw_only=True)
class Stage:
    name: str
    description: str
    hardware: Hardware
    model: ModelCard
    config: Any
    framework: NemoRLGrpo = NEMO_RL_GRPO

    def with_values(self, changes: Mapping[str, Any] | None = None, **stage_fields: Any) -> Stage:
        """A variant: framework keys by dotted path in ``changes``, stage fields by keyword."""
        config = with_values(self.config, changes or {})
        return attrs.evolve(self, config=config, **stage_fields)
