"""Generation setup rules: speculative decoding's weights, the TRT-LLM backend, and the
sampling vLLM generation takes."""

# The catalogued checks these tests break, which the rule catalogue's meta-test finds by
# name (recorded from the checks that produced an issue while these tests ran):
# runner_refusals, runner_warnings, trtllm_needs_its_async_engine.

# The catalogued checks these tests break (by the upstream line each cites), which the
# rule catalogue's meta-test finds by name:
# gym_ports_stay_in_their_range.

from __future__ import annotations

import pytest

from recipekit.nemo_rl.rule_lines import where
from recipekit.nemo_rl.rules.conftest import Plan, RefusedAt
from recipekit.stage import Stage
from recipes.super3.dapo import dapo_h100
from recipes.super35.rl import rlvr

SPEC = "policy.generation.vllm_kwargs.speculative_config"


def _speculation_warnings(warned: Plan, stage: Stage, method: str) -> list[str]:
    override = f"{SPEC}={{method: {method}, num_speculative_tokens: 3}}"
    return [w for w in warned(stage, override) if w.startswith(SPEC)]


def test_a_drafter_no_refit_updates_is_loaded_from_the_checkpoint(warned: Plan) -> None:
    found = _speculation_warnings(warned, rlvr, "eagle3")
    assert (
        found
        and where(
            "nemo-rl.models.generation.--init--.configure-generation-config.non-mtp-drafter-no-refit-updates"
        )
        in found[0]
    )


def test_super35_mtp_heads_come_with_the_policy(warned: Plan) -> None:
    assert _speculation_warnings(warned, rlvr, "mtp") == []


def test_super_v3_warns_for_any_speculative_config(warned: Plan) -> None:
    found = _speculation_warnings(warned, dapo_h100, "mtp")
    assert (
        found
        and where(
            "nemo-rl.v3.models.generation.--init--.configure-generation-config.speculative-decoding-makes-vllm-load-full"
        )
        in found[0]
    )


def test_the_shipped_stages_have_no_speculation_warning(warned: Plan) -> None:
    assert not [w for w in warned(rlvr) + warned(dapo_h100) if w.startswith(SPEC)]


def test_trtllm_is_refused_without_its_async_engine(gym_examples: Stage, refused: Plan) -> None:
    found = [
        e
        for e in refused(gym_examples, "policy.generation.backend=trtllm")
        if e.startswith("policy.generation.backend")
    ]
    assert any(
        where(
            "nemo-rl.models.generation.interfaces.should-use-async-rollouts.trt-llm-generation-needs-async-engine"
        )
        in e
        for e in found
    ), found


def test_trtllm_with_its_async_engine_is_not_refused_for_it(
    gym_examples: Stage, errors: Plan
) -> None:
    # trtllm_cfg is no section recipekit states: the version's table declares it (and its
    # NotRequired moe sizes take the null its own example writes), and the rule reads it.
    found = errors(
        gym_examples,
        "policy.generation.backend=trtllm",
        "policy.generation.trtllm_cfg={tensor_parallel_size: 1, async_engine: true,"
        " moe_tensor_parallel_size: null}",
    )
    assert not [e for e in found if e.startswith("policy.generation.backend")], found


def test_vllm_is_not_trtllm(gym_examples: Stage, errors: Plan) -> None:
    assert errors(gym_examples) == []


# The catalogue ids of VllmGeneration's sampling rules at each version share these prefixes.
V3_VLLM = "nemo-rl.v3.models.generation.vllm.vllm-generation.init.vllm-generation-takes-"
V35_VLLM = "nemo-rl.models.generation.vllm.vllm-generation.init.vllm-generation-takes-"


@pytest.mark.parametrize(
    ("stage", "override", "key", "reason"),
    [
        (
            dapo_h100,
            "policy.generation.top_k=50",
            "policy.generation.top_k",
            where(f"{V3_VLLM}top-k-null"),
        ),
        (
            dapo_h100,
            "policy.generation.top_p=0.9",
            "policy.generation.top_p",
            where(f"{V3_VLLM}top-p"),
        ),
        (
            rlvr,
            "policy.generation.top_k=0",
            "policy.generation.top_k",
            where(f"{V35_VLLM}top-k-null"),
        ),
        (rlvr, "policy.generation.top_p=0.0", "policy.generation.top_p", where(f"{V35_VLLM}top-p")),
    ],
)
def test_vllm_refuses_sampling_it_cannot_return_logprobs_for(
    refused_at: RefusedAt, stage: Stage, override: str, key: str, reason: str
) -> None:
    refused_at(stage, (override,), key, reason)


def test_super_v3_takes_top_k_from_8000_as_no_filtering(errors: Plan) -> None:
    assert not [e for e in errors(dapo_h100, "policy.generation.top_k=8000") if "top_k" in e]


def test_gym_ports_outside_their_range_warn(warned: Plan) -> None:
    warnings = warned(rlvr, "env.nemo_gym.port_range_high=7000")
    assert any(
        w.startswith("env.nemo_gym.port_range_high")
        and where("nemo-rl.environments.nemo-gym.spinup.gym-ports-stay-inside") in w
        for w in warnings
    ), warnings
