"""The longest prompt the data admits leaves vLLM room to generate (NVIDIA-NeMo/RL#796), on
each version's side of the boundary: super-v3's processors keep a prompt of exactly
max_input_seq_length tokens, super-v3.5-posttraining's cut it; and the Gym rollouts' warning
for a policy cap above vLLM's max_model_len."""

# The catalogued checks these tests break, which the rule catalogue's meta-test finds by
# name (recorded from the checks that produced an issue while these tests ran):
# prompts_leave_room_to_generate, full_context_prompts_get_empty_responses.

# The catalogued checks these tests break (by the upstream line each cites), which the
# rule catalogue's meta-test finds by name:
# policy_cap_above_max_model_len.

from __future__ import annotations

from recipekit.nemo_rl import NEMO_RL_VERSION, SUPER35_BRANCH
from recipekit.nemo_rl.rule_lines import where
from recipekit.nemo_rl.rules.conftest import Plan, RefusedAt
from recipekit.nemo_rl.rules.sequence_budget import PROMPT_CUT
from recipes.super3.dapo import dapo_h100
from recipes.super35.rl import rlvr

KEY = "data.max_input_seq_length"


def test_super_v3_warns_of_a_prompt_budget_equal_to_max_model_len(
    errors: Plan, warned: Plan
) -> None:
    # dapo-h100 as the guide writes it: max_model_len = max_total_sequence_length = 1024, and
    # prompts of 1024 tokens get an empty response on super-v3; nothing fails.
    assert not [e for e in errors(dapo_h100) if e.startswith(KEY)]
    found = [w for w in warned(dapo_h100) if w.startswith(KEY)]
    assert len(found) == 1 and PROMPT_CUT[NEMO_RL_VERSION] in found[0], found
    assert "RL#796" in found[0] and "at most 1023" in found[0] and "empty response" in found[0]


def test_super_v3_takes_one_token_less_without_a_warning(warned: Plan) -> None:
    assert not [w for w in warned(dapo_h100, f"{KEY}=1023") if w.startswith(KEY)]


def test_super35_takes_a_prompt_budget_equal_to_max_model_len(errors: Plan) -> None:
    # rlvr sits there (16384 = 16384): its processors cut a prompt of 16384 tokens.
    assert not [e for e in errors(rlvr) if e.startswith(KEY)]


def test_super35_refuses_a_prompt_budget_past_max_model_len(refused_at: RefusedAt) -> None:
    found = refused_at(
        rlvr,
        ("policy.generation.vllm_cfg.max_model_len=16383",),
        KEY,
        where("nemo-rl.vllm-worker.prompt-leaves-room"),
    )
    assert PROMPT_CUT[SUPER35_BRANCH] in found[0] and "at most 16383" in found[0]


def test_a_gym_prompt_budget_past_max_model_len_is_refused(refused_at: RefusedAt) -> None:
    # NeMo-RL sets policy_max_input_tokens to max_model_len itself; only a larger one breaks.
    refused_at(
        rlvr,
        ("policy.generation.vllm_cfg.max_model_len=16383",),
        "env.nemo_gym.policy_max_input_tokens",
        "RL#796",
    )


# rlvr's prompts may fill its whole 16384-token budget; shorter ones leave vLLM room to generate.
SHORT_PROMPTS = ("data.max_input_seq_length=4096", "env.nemo_gym.policy_max_input_tokens=4096")


def test_a_policy_cap_above_max_model_len_warns(warned: Plan) -> None:
    warnings = warned(rlvr, *SHORT_PROMPTS, "policy.generation.vllm_cfg.max_model_len=15360")
    assert any(
        w.startswith("policy.max_total_sequence_length")
        and where(
            "nemo-rl.experience.rollouts.tensorize-nemo-gym-result.gym-rollouts-policy-sequence-cap-most"
        )
        in w
        for w in warnings
    ), warnings


def test_rlvr_as_shipped_does_not_warn(warned: Plan) -> None:
    assert not [
        w
        for w in warned(rlvr)
        if where(
            "nemo-rl.experience.rollouts.tensorize-nemo-gym-result.gym-rollouts-policy-sequence-cap-most"
        )
        in w
    ]
