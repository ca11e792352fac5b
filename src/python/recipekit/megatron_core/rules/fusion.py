"""Kernel fusions: TransformerConfig.__post_init__'s checks on bias_activation_fusion."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from recipekit.errors import Issue
from recipekit.megatron_core.options import activation_of, options_of
from recipekit.megatron_core.rules import cite


def bias_activation_fusion_needs_gelu_or_silu(ctx: Any) -> Iterator[Issue]:
    """transformer_config.py, TransformerConfig.__post_init__: the fused bias-activation kernels
    exist for GeLU, SwiGLU and quick-GeGLU only."""
    o = options_of(ctx)
    if o is None or not o.bias_activation_fusion:
        return
    activation = activation_of(ctx.model)
    if activation not in ("gelu", "silu"):
        yield Issue(
            o.key("bias_activation_fusion"),
            f"Megatron-Core fuses the bias and activation only for gelu, swiglu or quick_geglu; "
            f"{ctx.model.name}'s MLP uses {activation} "
            + cite(
                "megatron-core.transformer-config.post-init.bias-activation-fusion-exists-gelu-swiglu"
            ),
            value=True,
        )
