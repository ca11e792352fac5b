"""vLLM 0.25.1's engine checks on what NeMo-RL hands it: a value that breaks each is refused (or
warned), naming the key. rules_test covers max_num_batched_tokens < max_num_seqs and EPLB."""

# The catalogued checks these tests break, which the rule catalogue's meta-test finds by
# name (recorded from the checks that produced an issue while these tests ran):
# vllm_fits_generation_gpus.

from __future__ import annotations

import pytest

from recipekit.nemo_rl.rules.conftest import Plan, RefusedAt
from recipekit.nemo_rl.rules.vllm_engine import (
    attention_heads_split_over_tensor_parallel,
    batched_tokens_hold_a_sequence,
    max_model_len_within_the_model,
    routed_experts_without_pipeline_parallel,
)
from recipes.super35.rl import rlvr

VLLM = "policy.generation.vllm_cfg"
KWARGS = "policy.generation.vllm_kwargs"


@pytest.mark.parametrize(
    ("check", "overrides", "key", "reason"),
    [
        (
            attention_heads_split_over_tensor_parallel,
            (f"{VLLM}.tensor_parallel_size=3",),
            f"{VLLM}.tensor_parallel_size",
            "model.py:1213",
        ),
        (
            max_model_len_within_the_model,
            (f"{VLLM}.max_model_len=524288", "policy.max_total_sequence_length=524288"),
            f"{VLLM}.max_model_len",
            "model.py:2276",
        ),
        (
            routed_experts_without_pipeline_parallel,
            (f"{VLLM}.enable_return_routed_experts=true", f"{VLLM}.pipeline_parallel_size=2"),
            f"{VLLM}.pipeline_parallel_size",
            "vllm.py:891",
        ),
        (
            batched_tokens_hold_a_sequence,
            (
                f"{KWARGS}={{enable_chunked_prefill: false, max_num_batched_tokens: 8192, "
                "max_num_seqs: 32}",
            ),
            f"{KWARGS}.max_num_batched_tokens",
            "scheduler.py:277",
        ),
    ],
    ids=lambda value: getattr(value, "__name__", None),
)
def test_vllm_refuses(
    refused_at: RefusedAt, check: object, overrides: tuple[str, ...], key: str, reason: str
) -> None:
    refused_at(rlvr, overrides, key, reason)


def test_a_long_context_allowed_by_its_variable_plans_past_the_models_positions(
    errors: Plan,
) -> None:
    found = errors(
        rlvr,
        f"{VLLM}.max_model_len=524288",
        "policy.max_total_sequence_length=524288",
        "policy.megatron_cfg.env_vars={VLLM_ALLOW_LONG_MAX_MODEL_LEN: '1'}",
    )
    assert not [e for e in found if "model.py:2276" in e]


def test_more_batched_tokens_than_sequences_use_warns(warned: Plan) -> None:
    """batched_tokens_beyond_what_sequences_use: scheduler.py:294 only warns."""
    found = [
        w
        for w in warned(rlvr, f"{KWARGS}={{max_num_batched_tokens: 32768, max_num_seqs: 1}}")
        if w.startswith(f"{KWARGS}.max_num_batched_tokens")
    ]
    assert found and "scheduler.py:294" in found[0]
