"""Activation offloading and CUDA graphs (examples-schema keys of policy.megatron_cfg)."""

# The catalogued checks these tests break, which the rule catalogue's meta-test finds by
# name (recorded from the checks that produced an issue while these tests ran):
# activation_offloading_names_its_modules, experts_split_evenly,
# full_iteration_cuda_graph_skips_nan_check, moe_only_offload_modules_need_moe_model.

from __future__ import annotations

import attrs

from recipekit.model_card import QWEN3_1_7B
from recipekit.nemo_rl.rule_lines import where
from recipekit.nemo_rl.rules.conftest import Plan
from recipekit.stage import Stage

M = "policy.megatron_cfg"
OFFLOAD_ON = f"{M}.fine_grained_activation_offloading=true"


def test_offloading_without_modules_is_refused(gym_examples: Stage, refused: Plan) -> None:
    for modules in ((), (f"{M}.offload_modules=[]",)):
        errors = refused(gym_examples, OFFLOAD_ON, *modules)
        found = [e for e in errors if e.startswith(f"{M}.offload_modules")]
        assert (
            found
            and where(
                "nemo-rl.models.megatron.setup.apply-performance-config.fine-grained-activation-offloading-lists-modules"
            )
            in found[0]
        ), errors


def test_expert_modules_on_a_dense_model_are_refused(gym_examples: Stage, refused: Plan) -> None:
    dense = attrs.evolve(gym_examples, model=QWEN3_1_7B)
    errors = refused(dense, OFFLOAD_ON, f"{M}.offload_modules=[core_attn, moe_act]")
    found = [e for e in errors if e.startswith(f"{M}.offload_modules")]
    assert found and "refuses moe_act on Qwen3-1.7B" in found[0], errors
    assert (
        where(
            "nemo-rl.models.megatron.setup.apply-performance-config.moe-only-offload-module-needs-moe"
        )
        in found[0]
    )


def test_expert_modules_on_the_moe_model_plan(gym_examples: Stage, errors: Plan) -> None:
    assert not errors(gym_examples, OFFLOAD_ON, f"{M}.offload_modules=[expert_fc1, moe_act]")
    # Off: NeMo-RL ignores the list, even an empty one.
    assert not errors(gym_examples, f"{M}.offload_modules=[]")


def test_full_iteration_cuda_graphs_warn_of_the_nan_check(
    gym_examples: Stage, warned: Plan
) -> None:
    key = f"{M}.cuda_graph_impl"

    def nan_check(value: str) -> list[str]:
        # (any CUDA-graph setting also warns that the memory estimate does not model it)
        found = warned(gym_examples, f"{key}={value}")
        return [w for w in found if w.startswith(key) and "NaN" in w]

    found = nan_check("full_iteration")
    assert (
        found
        and where(
            "nemo-rl.models.policy.workers.megatron-policy-worker.init.full-iteration-cuda-graphs-turn-nan"
        )
        in found[0]
    )
    assert not nan_check("local")
