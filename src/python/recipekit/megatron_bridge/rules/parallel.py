"""Context parallelism: ConfigContainer._validate_cp_comm_type's checks."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import TYPE_CHECKING

from recipekit.errors import Issue
from recipekit.markers import given
from recipekit.megatron_bridge.rules import cite

if TYPE_CHECKING:
    from recipekit.megatron_bridge.checks import CheckContext


def _comm_types(ctx: CheckContext) -> tuple[str, ...]:
    """The CP communication types, one per layer or one for all (p2p where unset)."""
    comm = given(ctx.config.model.cp_comm_type, None)
    return comm if isinstance(comm, tuple) else (comm or "p2p",)


def _hierarchical_sizes(ctx: CheckContext) -> tuple[int, ...] | None:
    sizes: tuple[int, ...] | None = given(
        ctx.config.model.hierarchical_context_parallel_sizes, None
    )
    return sizes


def per_layer_comm_types_cover_every_layer(ctx: CheckContext) -> Iterator[Issue]:
    """config.py, ConfigContainer._validate_cp_comm_type: a per-layer list names one type for
    each of the model's layers (checked where context parallelism is on)."""
    comm = given(ctx.config.model.cp_comm_type, None)
    layers = given(ctx.config.model.num_layers, None) or ctx.model.num_layers
    if isinstance(comm, tuple) and ctx.layout.parallel.cp > 1 and len(comm) != layers:
        yield Issue(
            "model.cp_comm_type",
            f"Megatron-Bridge asserts one type per layer: {len(comm)} given for {layers} layers "
            + cite("megatron-bridge.config.validate-cp-comm-type.per-layer-cp-comm-type-list"),
            value=comm,
            hint=f"give {layers} types, or one string for every layer",
        )


def hierarchical_context_parallel_needs_its_sizes(ctx: CheckContext) -> Iterator[Issue]:
    """config.py, ConfigContainer._validate_cp_comm_type: a2a+p2p communication needs
    hierarchical_context_parallel_sizes (without them CP communication silently does
    nothing)."""
    if any("a2a+p2p" in comm for comm in _comm_types(ctx)) and _hierarchical_sizes(ctx) is None:
        yield Issue(
            "model.cp_comm_type",
            "Megatron-Bridge asserts that a2a+p2p needs model.hierarchical_context_parallel_sizes "
            "(else each rank attends only to its own chunk) "
            + cite(
                "megatron-bridge.config.validate-cp-comm-type.cp-comm-type-a2a-p2p-without-hierarchical"
            ),
            value=ctx.config.model.cp_comm_type,
            hint="set model.hierarchical_context_parallel_sizes (e.g. [8, 2] for CP 16 over "
            "2 nodes of 8 GPUs), or use p2p, a2a or all_gather",
        )


def hierarchical_sizes_multiply_to_the_cp_size(ctx: CheckContext) -> Iterator[Issue]:
    """config.py, ConfigContainer._validate_cp_comm_type: the hierarchical CP groups' sizes
    multiply to the context-parallel size."""
    sizes = _hierarchical_sizes(ctx)
    cp = ctx.layout.parallel.cp
    if sizes is not None and math.prod(sizes) != cp:
        yield Issue(
            "model.hierarchical_context_parallel_sizes",
            f"Megatron-Bridge asserts their product ({' x '.join(map(str, sizes))} = "
            f"{math.prod(sizes)}) is the context-parallel size, {cp} "
            + cite(
                "megatron-bridge.config.validate-cp-comm-type.hierarchical-context-parallel-sizes-whose-product"
            ),
            value=list(sizes),
        )
