"""Real-quantised rollouts: how the quantised policy reaches vLLM."""

# The catalogued checks these tests break, which the rule catalogue's meta-test finds by
# name (recorded from the checks that produced an issue while these tests ran):
# runner_refusals (configure_generation_config, replayed in the runner).

from __future__ import annotations

from recipekit.nemo_rl.rule_lines import where
from recipekit.nemo_rl.rules.conftest import Plan
from recipekit.stage import Stage

GEN = "policy.generation"


def test_real_quant_states_its_export_offload(gym_examples: Stage, refused: Plan) -> None:
    found = [
        e
        for e in refused(gym_examples, f"{GEN}.real_quant=true")
        if e.startswith(f"{GEN}.real_quant_export_cpu_offload")
    ]
    assert (
        found
        and where(
            "nemo-rl.models.generation.--init--.configure-generation-config.real-quantisation-states-whether-export-goes"
        )
        in found[0]
    )


def test_a_gpu_export_needs_colocated_ipc_refit(gym_examples: Stage, refused: Plan) -> None:
    # The stage generates on GPUs of its own (colocated.enabled false).
    found = [
        e
        for e in refused(
            gym_examples, f"{GEN}.real_quant=true", f"{GEN}.real_quant_export_cpu_offload=false"
        )
        if e.startswith(f"{GEN}.real_quant_export_cpu_offload")
    ]
    assert (
        found
        and where(
            "nemo-rl.models.generation.--init--.configure-generation-config.real-quantised-export-without-cpu-offload"
        )
        in found[0]
    )


def test_a_cpu_export_plans(gym_examples: Stage, errors: Plan) -> None:
    assert not errors(
        gym_examples, f"{GEN}.real_quant=true", f"{GEN}.real_quant_export_cpu_offload=true"
    )
