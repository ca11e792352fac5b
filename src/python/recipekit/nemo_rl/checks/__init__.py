"""Plan-time checks of a NeMo-RL GRPO stage that need more than one key, by topic.

Each check is a small function named for what it guards; it yields an Issue naming the key, the
value and the arithmetic. ``ERROR_CHECKS`` stop the plan, ``WARNING_CHECKS`` are printed with it
(settings NeMo-RL silently ignores, or that look inherited by mistake). The mirrors of NeMo-RL's
own run-time rules are ``recipekit.nemo_rl.rules``, in the same shape.
"""

from __future__ import annotations

from recipekit.markers import Marker
from recipekit.nemo_rl.checks import (
    batch_and_layout,
    distillation,
    inherited,
    resources,
    sequence,
    settings,
)
from recipekit.nemo_rl.checks.context import MEGATRON, RESOURCES, SEQ, VLLM, Check, CheckContext

ERROR_CHECKS: tuple[Check, ...] = (
    resources.cluster_matches_hardware,
    resources.nemo_gym_nodes_leave_the_policy_nodes,
    resources.generation_resources_fit,
    batch_and_layout.parallel_layout_holds,
    batch_and_layout.batch_divides_data_parallel,
    batch_and_layout.micro_batches_agree_at_large_tp,
    resources.vllm_fits_generation_gpus,
    settings.math_verifier_is_set,
    settings.math_verifier_type_is_known,
    settings.model_overrides_name_no_first_class_key,
    settings.model_overrides_are_provider_fields,
    settings.model_overrides_keep_the_checkpoints_shape,
    sequence.response_budget_fits,
    sequence.sequence_divisible_for_parallelism,
    distillation.default_teacher_is_routed,
    distillation.distillation_teachers_fit,
)

WARNING_CHECKS: tuple[Check, ...] = (
    resources.vllm_tensor_parallel_inside_nvlink,
    sequence.token_budgets_below_the_sequence_length,
    inherited.megatron_keys_never_read,
    inherited.leave_one_out_shadowed_by_adv_estimator,
    inherited.dense_settings_on_moe_model,
    inherited.tracking_names_mention_other_hardware,
)

# super-v3's own traps (keys it never reads, the shadowed baseline) are not main's.
# main's Gym configs inherit from grpo_nanov3.yaml, a MoE model: its router settings are meant.
WARNING_CHECKS_MAIN: tuple[Check, ...] = (
    resources.vllm_tensor_parallel_inside_nvlink,
    sequence.token_budgets_below_the_sequence_length,
    inherited.tracking_names_mention_other_hardware,
)

__all__ = [
    "ERROR_CHECKS",
    "MEGATRON",
    "RESOURCES",
    "SEQ",
    "VLLM",
    "WARNING_CHECKS",
    "WARNING_CHECKS_MAIN",
    "Check",
    "CheckContext",
    "Marker",
]
