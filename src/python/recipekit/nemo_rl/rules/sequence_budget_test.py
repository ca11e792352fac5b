"""The sequence budget against vLLM's max_model_len: the Gym rollouts' warning."""

from __future__ import annotations

from recipekit.nemo_rl.rules.conftest import Plan
from recipes.super35.rl import rlvr

# rlvr's prompts may fill its whole 16384-token budget; shorter ones leave vLLM room to generate.
SHORT_PROMPTS = ("data.max_input_seq_length=4096", "env.nemo_gym.policy_max_input_tokens=4096")


def test_a_policy_cap_above_max_model_len_warns(warned: Plan) -> None:
    warnings = warned(rlvr, *SHORT_PROMPTS, "policy.generation.vllm_cfg.max_model_len=15360")
    assert any(
        w.startswith("policy.max_total_sequence_length") and "rollouts.py:2355 @" in w
        for w in warnings
    ), warnings


def test_rlvr_as_shipped_does_not_warn(warned: Plan) -> None:
    assert not [w for w in warned(rlvr) if "rollouts.py:2355" in w]
