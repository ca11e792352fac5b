"""Tensor, sequence and expert parallelism: ModelParallelConfig.__post_init__'s checks that the
parallel layout (``recipekit.parallelism``) does not already hold."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from recipekit.errors import Issue
from recipekit.megatron_core.options import options_of
from recipekit.megatron_core.rules import cite


def expert_and_tensor_parallel_want_sequence_parallel(ctx: Any) -> Iterator[Issue]:
    """model_parallel_config.py, ModelParallelConfig.__post_init__ (a warning): training with EP and
    TP wants sequence parallelism."""
    o = options_of(ctx)
    if o is None:
        return
    p = o.parallel
    if p.ep > 1 and p.tp > 1 and not p.sp:
        yield Issue(
            o.key("sp"),
            f"Megatron-Core warns: expert parallelism ({p.ep}) with tensor parallelism ({p.tp}) "
            "must train with sequence parallelism "
            + cite(
                "megatron-core.model-parallel-config.post-init.ep-tp-should-train-sequence-parallelism"
            ),
            value=False,
        )


def _heads(ctx: Any) -> tuple[int, int]:
    """The model card's attention heads and query groups (key-value heads; a card without them
    has as many as heads, Megatron-Core's default); (0, 0) where the card gives no heads."""
    arch = ctx.model.architecture
    heads = 0 if arch is None else arch.attention_heads
    return heads, (arch.kv_heads or heads) if heads else 0


def tensor_parallel_divides_the_attention_heads(ctx: Any) -> Iterator[Issue]:
    """transformer_config.py, TransformerConfig.__post_init__: TP splits the attention heads, so it
    must divide them."""
    o = options_of(ctx)
    heads, _ = _heads(ctx)
    if o is None or not heads or heads % o.parallel.tp == 0:
        return
    fits = [n for n in range(1, heads + 1) if heads % n == 0]
    yield Issue(
        o.key("tp"),
        f"{ctx.model.name} has {heads} attention heads, which TP = {o.parallel.tp} does not "
        "divide: Megatron-Core's TransformerConfig raises "
        + cite(
            "megatron-core.transformer-config.post-init.num-attention-heads-tensor-model-parallel-size"
        ),
        value=o.parallel.tp,
        hint="one of " + ", ".join(map(str, fits)),
    )


def tensor_parallel_fits_the_query_groups(ctx: Any) -> Iterator[Issue]:
    """transformer_config.py, TransformerConfig.__post_init__: the query groups (key-value heads)
    are split over TP, or replicated across it: one of the two must divide the other."""
    o = options_of(ctx)
    heads, groups = _heads(ctx)
    tp = 0 if o is None else o.parallel.tp
    if o is None or not groups or groups % tp == 0 or tp % groups == 0:
        return
    yield Issue(
        o.key("tp"),
        f"{ctx.model.name} has {groups} query groups, which TP = {tp} neither divides nor is "
        f"a multiple of: Megatron-Core's TransformerConfig raises "
        + cite(
            "megatron-core.transformer-config.post-init.num-query-groups-tensor-model-parallel-size"
        ),
        value=tp,
        hint=f"a divisor or a multiple of {groups}",
    )
