"""Context parallelism: ConfigContainer._validate_cp_comm_type's checks."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from recipekit.errors import Issue
from recipekit.megatron_bridge.rules import cite

if TYPE_CHECKING:
    from recipekit.megatron_bridge.checks import CheckContext


def hierarchical_context_parallel_needs_its_sizes(ctx: CheckContext) -> Iterator[Issue]:
    """config.py, ConfigContainer._validate_cp_comm_type: a2a+p2p communication needs
    hierarchical_context_parallel_sizes, which recipekit has no key for (without them CP
    communication silently does nothing)."""
    if ctx.config.model.cp_comm_type == "a2a+p2p":
        yield Issue(
            "model.cp_comm_type",
            "Megatron-Bridge asserts that a2a+p2p needs hierarchical_context_parallel_sizes "
            "(else each rank attends only to its own chunk), which no stage key sets "
            + cite(
                "megatron-bridge.config.validate-cp-comm-type.cp-comm-type-a2a-p2p-without-hierarchical"
            ),
            value="a2a+p2p",
            hint="use p2p, a2a or allgather",
        )
