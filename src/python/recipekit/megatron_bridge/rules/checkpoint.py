"""What a stage loads: ConfigContainer.validate's checks on the checkpoint keys."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from recipekit.errors import Issue
from recipekit.markers import UNSET
from recipekit.megatron_bridge.rules import cite

if TYPE_CHECKING:
    from recipekit.megatron_bridge.checks import CheckContext


def adapter_trains_over_pretrained_weights(ctx: CheckContext) -> Iterator[Issue]:
    """config.py, ConfigContainer.validate: with a peft adapter (the stage's, or a PEFT recipe's
    own) the pretrained checkpoint must be set."""
    cfg = ctx.config
    has_adapter = ctx.adapter is not None or (cfg.recipe.mode == "peft" and cfg.peft is UNSET)
    if has_adapter and not isinstance(cfg.checkpoint.pretrained_checkpoint, str):
        yield Issue(
            "checkpoint.pretrained_checkpoint",
            "Megatron-Bridge asserts that PEFT trains adapters over a pretrained checkpoint: "
            "name the checkpoint to load "
            + cite(
                "megatron-bridge.config.config-container-validate.peft-adapter-without-checkpoint-pretrained-checkpoint"
            ),
            value=cfg.checkpoint.pretrained_checkpoint,
        )
