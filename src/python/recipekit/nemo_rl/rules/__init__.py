"""NeMo-RL's run-time rules as plan-time checks, by topic, per NeMo-RL version.

Each module mirrors upstream lines (cited in each check's docstring and message) or a rule from
an upstream thread; ``recipekit/rule_catalogue/nemo-rl.toml`` and ``vllm.toml`` list them all.
vLLM's engine checks (``vllm_engine``) are those of vLLM 0.25.1, the version
super-v3.5-posttraining pins, so only the Super 3.5 tuples carry them.
"""

from __future__ import annotations

from recipekit.nemo_rl.checks import Check
from recipekit.nemo_rl.rules import (
    allocator,
    generation,
    loss,
    rollouts,
    sequence_budget,
    storage,
    validation,
    vllm_engine,
    vllm_quantization,
    vllm_worker,
    weight_sync,
)

# What both versions state (at their own lines) and the rules no single line states.
_SHARED_ERRORS: tuple[Check, ...] = (
    *generation.ERROR_CHECKS,
    loss.force_on_policy_ratio_takes_one_batch_per_step,
    loss.skipped_reference_logprobs_need_zero_kl,
    *sequence_budget.ERROR_CHECKS,
    *allocator.ERROR_CHECKS,
    *storage.ERROR_CHECKS,
    *vllm_worker.ERROR_CHECKS,
)

# The generation side's rules (nemo-rl.generation.toml) one version states.
_GENERATION_ERRORS_SUPER_V3: tuple[Check, ...] = rollouts.SUPER_V3_ERROR_CHECKS
_GENERATION_ERRORS_SUPER35: tuple[Check, ...] = (
    *rollouts.SUPER35_ERROR_CHECKS,
    *generation.SUPER35_ERROR_CHECKS,
    *vllm_quantization.ERROR_CHECKS,
    *weight_sync.ERROR_CHECKS,
)

ERROR_CHECKS_SUPER_V3: tuple[Check, ...] = (*_SHARED_ERRORS, *_GENERATION_ERRORS_SUPER_V3)
WARNING_CHECKS_SUPER_V3: tuple[Check, ...] = (*generation.WARNING_CHECKS, *storage.WARNING_CHECKS)

ERROR_CHECKS_SUPER35: tuple[Check, ...] = (
    *_SHARED_ERRORS,
    *validation.ERROR_CHECKS,
    loss.fused_logprobs_without_sequence_packing,
    loss.fused_logprobs_without_sampling_filter,
    loss.kl_in_reward_needs_prev_logprobs,
    loss.distillation_needs_prev_logprobs,
    *vllm_engine.ERROR_CHECKS,
    *_GENERATION_ERRORS_SUPER35,
)
WARNING_CHECKS_SUPER35: tuple[Check, ...] = (
    *generation.WARNING_CHECKS,
    *storage.WARNING_CHECKS,
    *vllm_engine.WARNING_CHECKS,
    *vllm_worker.SUPER35_WARNING_CHECKS,
)

__all__ = [
    "ERROR_CHECKS_SUPER35",
    "ERROR_CHECKS_SUPER_V3",
    "WARNING_CHECKS_SUPER35",
    "WARNING_CHECKS_SUPER_V3",
]
