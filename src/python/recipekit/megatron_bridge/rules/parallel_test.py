"""Context parallelism's rules on the Super 3.5 stages."""

# The catalogued checks these tests break, which the rule catalogue's meta-test finds by
# name (recorded from the checks that produced an issue while these tests ran):
# hierarchical_context_parallel_needs_its_sizes.

from __future__ import annotations

import pytest

from recipekit.errors import RecipeError
from recipekit.megatron_bridge.rules import cite
from recipekit.plan import make_plan
from recipes.super35.sft import sft_long_context


def test_a2a_p2p_needs_hierarchical_sizes_no_stage_key_sets() -> None:
    with pytest.raises(RecipeError) as exc:
        make_plan(sft_long_context, ["model.cp_comm_type=a2a+p2p"])
    assert [i.render() for i in exc.value.issues] == [
        "model.cp_comm_type = 'a2a+p2p': Megatron-Bridge asserts that a2a+p2p needs "
        "hierarchical_context_parallel_sizes (else each rank attends only to its own chunk), "
        "which no stage key sets "
        + cite(
            "megatron-bridge.config.validate-cp-comm-type.cp-comm-type-a2a-p2p-without-hierarchical"
        )
        + " (use p2p, a2a or allgather)"
    ]


def test_the_other_cp_communication_types_plan() -> None:
    for comm in ("p2p", "a2a", "allgather"):
        make_plan(sft_long_context, [f"model.cp_comm_type={comm}"])
