"""Context parallelism's rules on the Super 3.5 stages (the long-context SFT runs CP 32)."""

# The catalogued checks these tests break, which the rule catalogue's meta-test finds by
# name (recorded from the checks that produced an issue while these tests ran):
# hierarchical_context_parallel_needs_its_sizes, hierarchical_sizes_multiply_to_the_cp_size,
# per_layer_comm_types_cover_every_layer.

from __future__ import annotations

import pytest

from recipekit.errors import RecipeError
from recipekit.megatron_bridge.rules import cite
from recipekit.plan import make_plan
from recipes.super35.sft import sft_long_context

RULE = "megatron-bridge.config.validate-cp-comm-type."


def _errors(*overrides: str) -> list[str]:
    with pytest.raises(RecipeError) as exc:
        make_plan(sft_long_context, list(overrides))
    return [i.render() for i in exc.value.issues]


def test_a2a_p2p_needs_hierarchical_sizes() -> None:
    (error,) = _errors("model.cp_comm_type=a2a+p2p")
    assert error.startswith("model.cp_comm_type = 'a2a+p2p': Megatron-Bridge asserts")
    assert cite(RULE + "cp-comm-type-a2a-p2p-without-hierarchical") in error
    assert "set model.hierarchical_context_parallel_sizes" in error
    make_plan(
        sft_long_context,
        ["model.cp_comm_type=a2a+p2p", "model.hierarchical_context_parallel_sizes=[8, 4]"],
    )


def test_hierarchical_sizes_multiply_to_the_cp_size() -> None:
    (error,) = _errors(
        "model.cp_comm_type=a2a+p2p", "model.hierarchical_context_parallel_sizes=[8, 2]"
    )
    assert "their product (8 x 2 = 16) is the context-parallel size, 32" in error
    assert cite(RULE + "hierarchical-context-parallel-sizes-whose-product") in error


def test_a_per_layer_list_names_every_layer() -> None:
    # Megatron-Core's TransformerConfig asserts it too (megatron_core.guards): both name the key.
    found = _errors("model.cp_comm_type=[p2p, a2a]")
    assert all(e.startswith("model.cp_comm_type") for e in found), found
    (error,) = (e for e in found if "Megatron-Bridge" in e)
    assert "one type per layer: 2 given for 88 layers" in error
    assert cite(RULE + "per-layer-cp-comm-type-list") in error
    make_plan(sft_long_context, ["model.cp_comm_type=[" + ", ".join(["a2a"] * 88) + "]"])


def test_the_communication_types_are_megatron_cores() -> None:
    for comm in ("p2p", "a2a", "all_gather"):
        make_plan(sft_long_context, [f"model.cp_comm_type={comm}"])
    # Transformer Engine spells it all_gather (transformer_config.py's docstring lists them).
    (error,) = _errors("model.cp_comm_type=allgather")
    assert "did you mean 'all_gather'" in error
