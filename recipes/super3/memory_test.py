"""The guide on memory: B200/GB200 "HBM is not sufficient for full-weight co-located RL
training", so the guide runs generation on its own node there, and colocates on 32 H100s with
the optimizer state on the host. The plan must agree, with numbers."""

from __future__ import annotations

import attrs
import pytest

from recipekit.errors import RecipeError
from recipekit.keypaths import parse_assignment, replace_at
from recipekit.layout_search import search
from recipekit.plan import make_plan
from recipekit.stage import Stage
from recipes.super3.dapo import dapo_b200, dapo_gb200, dapo_h100

COLOCATED = "policy.generation.colocated.enabled=true"
MEGATRON = "policy.megatron_cfg"


def _colocated(stage: Stage) -> Stage:
    path, value = parse_assignment(stage.config, COLOCATED)
    return attrs.evolve(stage, config=replace_at(stage.config, path, value))


@pytest.mark.parametrize("stage", [dapo_gb200, dapo_b200, dapo_h100], ids=lambda s: s.name)
def test_the_guides_layouts_fit(stage: Stage) -> None:
    memory = make_plan(stage).memory
    assert memory is not None
    assert all(phase.fraction <= 1 for phase in memory.phases)
    assert not [w for w in make_plan(stage).warnings if w.path.startswith("memory.")]


@pytest.mark.parametrize("stage", [dapo_gb200, dapo_b200], ids=lambda s: s.name)
def test_no_colocated_layout_of_the_guides_nodes_fits(stage: Stage) -> None:
    # Every TP/PP/CP/EP/ETP and vLLM TP Megatron-Core accepts on 20 GB200s or 24 B200s: the
    # experts cannot spread over more than 4 (GB200) or 8 (B200) GPUs, so the policy's
    # weights and gradients and vLLM's share cannot share a GPU.
    result = search(_colocated(stage))
    assert result.tried > 100
    assert result.fitting == 0 and result.candidates == ()


def test_a_colocated_b200_plan_says_why_with_numbers() -> None:
    with pytest.raises(RecipeError) as caught:
        make_plan(
            dapo_b200,
            [
                COLOCATED,
                f"{MEGATRON}.tensor_model_parallel_size=8",
                f"{MEGATRON}.context_parallel_size=3",
                f"{MEGATRON}.expert_model_parallel_size=8",
                f"{MEGATRON}.expert_tensor_parallel_size=1",
                "policy.max_total_sequence_length=1056",
            ],
        )
    text = caught.value.render()
    assert "memory.generation (colocated): does not fit" in text
    assert "of 180.0 GiB (HBM) per GPU" in text
    assert "vLLM (its whole budget) 135.0 GiB" in text
    assert "policy.generation.vllm_cfg.gpu_memory_utilization" in text


def test_colocated_h100_holds_vllms_half_and_the_policy_without_its_optimizer() -> None:
    memory = make_plan(dapo_h100).memory
    assert memory is not None
    phases = {phase.name: phase for phase in memory.phases}
    generation = {t.name: t.gib for t in phases["generation (colocated)"].terms}
    assert generation["vLLM (its whole budget)"] == pytest.approx(40.0)
    assert "optimizer state (Adam)" not in generation
    training = {t.name: t.gib for t in phases["training (colocated)"].terms}
    # optimizer_offload_fraction 1.0: Adam's state lives on the host.
    assert training.get("optimizer state (Adam)", 0.0) == pytest.approx(0.0)
