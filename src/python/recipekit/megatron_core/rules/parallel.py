"""Tensor, sequence and expert parallelism: ModelParallelConfig.__post_init__'s checks that the
parallel layout (``recipekit.parallelism``) does not already hold."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from recipekit.errors import Issue
from recipekit.megatron_core.options import options_of
from recipekit.megatron_core.rules import MODEL_PARALLEL_CONFIG, cite


def expert_and_tensor_parallel_want_sequence_parallel(ctx: Any) -> Iterator[Issue]:
    """model_parallel_config.py:562 (a warning): training with EP and TP wants sequence
    parallelism."""
    o = options_of(ctx)
    if o is None:
        return
    p = o.parallel
    if p.ep > 1 and p.tp > 1 and not p.sp:
        yield Issue(
            o.key("sp"),
            f"Megatron-Core warns: expert parallelism ({p.ep}) with tensor parallelism ({p.tp}) "
            f"must train with sequence parallelism {cite(MODEL_PARALLEL_CONFIG, 562)}",
            value=False,
        )
