"""The ``${...}`` of NeMo-RL ``main``'s GRPO + Gym configs (``examples/nemo_gym/grpo_nanov3.yaml``
and the Super Omni VL recipes built on it), computed here as ``derivations`` does for super-v3.

Most rules are super-v3's. What differs: the sequence is padded to ``2 * TP * CP`` (context
parallelism splits each sequence into ``2 * CP`` chunks), validation sampling follows training
sampling, and Gym's prompt budget and Megatron generation's token budget follow the sequence.
"""

from __future__ import annotations

from typing import Any

from recipekit.nemo_rl.derivations import (
    RULES,
    SEQ,
    Derivation,
    same_rule,
)


def _sequence_divisor(megatron_enabled: Any, tp: Any, cp: Any, dtensor_tp: Any) -> Any:
    if megatron_enabled is True:
        return 2 * tp * cp if isinstance(tp, int) and isinstance(cp, int) else tp
    return dtensor_tp


_DIVISOR = "policy.make_sequence_length_divisible_by"
GEN = "policy.generation"

RULES_MAIN: tuple[Derivation, ...] = (
    *(rule for rule in RULES if rule.target != _DIVISOR),
    Derivation(
        _DIVISOR,
        (
            "policy.megatron_cfg.enabled",
            "policy.megatron_cfg.tensor_model_parallel_size",
            "policy.megatron_cfg.context_parallel_size",
            "policy.dtensor_cfg.tensor_parallel_size",
        ),
        _sequence_divisor,
        "2 * TP * CP of the Megatron back-end (TP of DTensor)",
    ),
    same_rule(f"{GEN}.val_temperature", f"{GEN}.temperature"),
    same_rule(f"{GEN}.val_top_p", f"{GEN}.top_p"),
    same_rule(f"{GEN}.val_top_k", f"{GEN}.top_k", nullable=True),
    same_rule(f"{GEN}.mcore_generation_config.max_tokens", SEQ),
    same_rule(f"{GEN}.mcore_generation_config.max_model_len", SEQ),
    same_rule("env.nemo_gym.policy_max_input_tokens", SEQ),
)
