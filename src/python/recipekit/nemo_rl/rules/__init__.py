"""NeMo-RL's run-time rules as plan-time checks, by topic, per NeMo-RL version.

Each module mirrors upstream lines or a rule from an upstream thread;
``recipekit/rule_catalogue/nemo-rl.toml`` and ``vllm.toml`` list them all. A check of one
catalogued rule says so with ``@mirrors(v3=..., v35=...)`` (``rules/citation.py``): its messages
then end with the rule's ``file:line @ version``, and the catalogue test holds the ids it cites
against the entries that name it.
vLLM's own engine checks (``recipekit.vllm.checks``, on the engine ``rules/vllm_engine.py``
says NeMo-RL starts) are those of vLLM 0.25.1, the version super-v3.5-posttraining pins, so
only the Super 3.5 tuples carry them.
"""

from __future__ import annotations

from recipekit.megatron_core.checks import NEMO_RL_ERROR_CHECKS as MCORE_ERRORS
from recipekit.megatron_core.checks import NEMO_RL_WARNING_CHECKS as MCORE_WARNINGS
from recipekit.nemo_rl import SUPER35_TYPES, SUPER_V3_TYPES
from recipekit.nemo_rl.checks import Check, batch_and_layout, sequence, settings
from recipekit.nemo_rl.checks.key_needs import every_run_check, key_needs_check
from recipekit.nemo_rl.config_guards import config_validators_hold
from recipekit.nemo_rl.rules import (
    allocator,
    async_grpo,
    automodel,
    distillation,
    dtensor_v1,
    generation,
    grpo_setup,
    loss,
    megatron_performance,
    megatron_setup,
    model_support,
    policy_workers,
    rollouts,
    sequence_budget,
    sglang,
    tokenizer,
    torch_optim,
    validation,
    vllm_kwargs,
    vllm_worker,
    weight_sync,
)
from recipekit.vllm.checks import ERROR_CHECKS as VLLM_ERRORS
from recipekit.vllm.checks import WARNING_CHECKS as VLLM_WARNINGS

# Order: every check runs wherever it stands, but a plan lists its errors and warnings in
# the tuples' order (recipekit.checking.run_checks), and the stage snapshots pin it (the warnings
# of plan.yaml; sorting these tuples by module reorders dapo's). So the order is written, by
# topic as the catalogue groups the rules, and a module's own tuple (ERROR_CHECKS, ...) is where
# a new rule of that module goes.

# What both versions state (at their own lines) and the rules no single line states.
_SHARED_ERRORS: tuple[Check, ...] = (
    *generation.ERROR_CHECKS,
    *loss.CLIPPED_PG_ERROR_CHECKS,
    *sequence_budget.ERROR_CHECKS,
    *model_support.ERROR_CHECKS,
    *tokenizer.ERROR_CHECKS,
    *vllm_worker.ERROR_CHECKS,
    *vllm_kwargs.ERROR_CHECKS,
)

# The generation side's rules (nemo-rl.generation.toml) one version states.
_GENERATION_ERRORS_SUPER_V3: tuple[Check, ...] = (
    *rollouts.SUPER_V3_ERROR_CHECKS,
    *sglang.SUPER_V3_ERROR_CHECKS,
)
_GENERATION_ERRORS_SUPER35: tuple[Check, ...] = (
    *rollouts.SUPER35_ERROR_CHECKS,
    *sglang.ERROR_CHECKS,
    *generation.SUPER35_ERROR_CHECKS,
    *weight_sync.ERROR_CHECKS,
)

# The policy's own rules (its class, lm_policy.py; its workers; Megatron-Core's setup), which
# every entry point that trains a policy starts: GRPO's tuples below splice them in where they
# stand, and the POLICY_ tuples at the end give them to the other entry points.
_POLICY_SETUP_ERRORS: tuple[Check, ...] = (
    megatron_setup.precision_aware_optimizer_states_bf16,
    megatron_setup.precision_aware_optimizer_states_fp16,
    megatron_setup.float32_optimizer_takes_no_half_flags,
    megatron_setup.fp8_cfg_names_every_key,
    policy_workers.model_save_format_needs_dtensor_v2,
    policy_workers.hf_config_overrides_not_passed_twice,
)
_POLICY_MEGATRON_SETUP_ERRORS_SUPER35: tuple[Check, ...] = (
    megatron_setup.yarn_rope_scaling_names_every_field,
    megatron_setup.fused_logprobs_without_context_parallel,
)
_POLICY_WORKER_ERRORS_SUPER35: tuple[Check, ...] = (
    *megatron_performance.ERROR_CHECKS,
    *dtensor_v1.ERROR_CHECKS,
    *automodel.ERROR_CHECKS,
    *torch_optim.SUPER35_ERROR_CHECKS,
)
# The v2 DTensor worker's rules super-v3 states at its own lines too.
_POLICY_WORKER_ERRORS_SUPER_V3: tuple[Check, ...] = (
    automodel.lora_triton_needs_one_tensor_parallel_rank,
)
_POLICY_WORKER_WARNINGS_SUPER35: tuple[Check, ...] = (
    *megatron_performance.WARNING_CHECKS,
    *dtensor_v1.WARNING_CHECKS,
    *automodel.WARNING_CHECKS,
)

# The training side's rules (nemo-rl.toml): GRPO setup, async GRPO, Megatron setup, workers.
_TRAINING_ERRORS: tuple[Check, ...] = (
    grpo_setup.checkpoint_metric_names_its_source,
    grpo_setup.dapo_reward_shaping_needs_its_lengths,
    async_grpo.async_grpo_without_dapo_features,
    async_grpo.async_grpo_needs_async_rollouts,
    async_grpo.async_grpo_needs_importance_sampling,
    async_grpo.async_grpo_colocated_generation,
    *_POLICY_SETUP_ERRORS,
)
_TRAINING_ERRORS_SUPER_V3: tuple[Check, ...] = (*_POLICY_WORKER_ERRORS_SUPER_V3,)
_TRAINING_ERRORS_SUPER35: tuple[Check, ...] = (
    grpo_setup.message_penalties_need_nemo_gym,
    grpo_setup.reward_penalties_need_nemo_gym,
    async_grpo.async_grpo_with_one_dataloader,
    async_grpo.async_grpo_backend_has_a_replay_path,
    *_POLICY_MEGATRON_SETUP_ERRORS_SUPER35,
    megatron_setup.colocated_reshard_without_draft,
    megatron_setup.colocated_reshard_without_peft,
    *_POLICY_WORKER_ERRORS_SUPER35,
    *distillation.ERROR_CHECKS,
)
_TRAINING_WARNINGS_SUPER_V3: tuple[Check, ...] = (
    megatron_setup.fp8_param_may_give_nan,
    loss.forced_ratio_with_threshold_still_computes_logprobs,
    *loss.CLIPPED_PG_SUPER_V3_WARNING_CHECKS,
    async_grpo.stale_rollouts_want_in_flight_weight_updates,
    grpo_setup.stop_properly_penalty_ignores_dapo_lengths,
    grpo_setup.checkpoint_saved_without_its_validation_metric,
    grpo_setup.checkpoint_metric_is_one_it_reports,
)
_TRAINING_WARNINGS_SUPER35: tuple[Check, ...] = (
    loss.forced_ratio_with_threshold_still_computes_logprobs,
    async_grpo.stale_rollouts_want_in_flight_weight_updates,
    grpo_setup.stop_properly_penalty_ignores_dapo_lengths,
    grpo_setup.multiple_dataloaders_ignore_max_num_epochs,
    grpo_setup.checkpoint_saved_without_its_validation_metric,
    grpo_setup.checkpoint_metric_is_one_it_reports,
    *_POLICY_WORKER_WARNINGS_SUPER35,
    *distillation.WARNING_CHECKS,
)

ERROR_CHECKS_SUPER_V3: tuple[Check, ...] = (
    *_SHARED_ERRORS,
    *_TRAINING_ERRORS,
    *_TRAINING_ERRORS_SUPER_V3,
    *_GENERATION_ERRORS_SUPER_V3,
    every_run_check(SUPER_V3_TYPES),
)
WARNING_CHECKS_SUPER_V3: tuple[Check, ...] = (
    allocator.memory_switches_not_modelled,
    *generation.WARNING_CHECKS,
    *sequence_budget.SUPER_V3_WARNING_CHECKS,
    *tokenizer.WARNING_CHECKS,
    *vllm_kwargs.WARNING_CHECKS,
    *_TRAINING_WARNINGS_SUPER_V3,
    key_needs_check(SUPER_V3_TYPES),
)

ERROR_CHECKS_SUPER35: tuple[Check, ...] = (
    *_SHARED_ERRORS,
    *validation.ERROR_CHECKS,
    loss.distillation_needs_prev_logprobs,
    *loss.CLIPPED_PG_SUPER35_ERROR_CHECKS,
    *vllm_kwargs.SUPER35_ERROR_CHECKS,
    *VLLM_ERRORS,
    # After the loss rules: where both refuse one key, GRPO setup's reason comes first.
    *_TRAINING_ERRORS,
    *_TRAINING_ERRORS_SUPER35,
    *_GENERATION_ERRORS_SUPER35,
    every_run_check(SUPER35_TYPES),
    config_validators_hold,
)
WARNING_CHECKS_SUPER35: tuple[Check, ...] = (
    allocator.memory_switches_not_modelled,
    *generation.WARNING_CHECKS,
    *sglang.WARNING_CHECKS,
    *generation.SUPER35_WARNING_CHECKS,
    *sequence_budget.SUPER35_WARNING_CHECKS,
    *tokenizer.WARNING_CHECKS,
    *VLLM_WARNINGS,
    *vllm_worker.SUPER35_WARNING_CHECKS,
    *vllm_kwargs.WARNING_CHECKS,
    *_TRAINING_WARNINGS_SUPER35,
    key_needs_check(SUPER35_TYPES),
)

# The policy's own rules for the entry points other than GRPO: the groups above, the checks of
# recipekit.nemo_rl.checks that read only the policy, the model card's, and Megatron-Core's
# own (GRPO's tuples hold each of them: policy_rules_test.py).
_POLICY_CHECKS: tuple[Check, ...] = (
    batch_and_layout.micro_batches_agree_at_large_tp,
    settings.model_overrides_name_no_first_class_key,
    settings.model_overrides_are_provider_fields,
    settings.model_overrides_keep_the_checkpoints_shape,
    sequence.sequence_divisible_for_parallelism,
    *model_support.ERROR_CHECKS,
)
POLICY_ERROR_CHECKS_SUPER35: tuple[Check, ...] = (
    *_POLICY_CHECKS,
    *_POLICY_SETUP_ERRORS,
    *_POLICY_MEGATRON_SETUP_ERRORS_SUPER35,
    *_POLICY_WORKER_ERRORS_SUPER35,
    *MCORE_ERRORS,
)
POLICY_WARNING_CHECKS_SUPER35: tuple[Check, ...] = (
    *_POLICY_WORKER_WARNINGS_SUPER35,
    *tokenizer.WARNING_CHECKS,
    *MCORE_WARNINGS,
)
POLICY_ERROR_CHECKS_SUPER_V3: tuple[Check, ...] = (
    *_POLICY_CHECKS,
    *_POLICY_SETUP_ERRORS,
    *_POLICY_WORKER_ERRORS_SUPER_V3,
    *MCORE_ERRORS,
)
POLICY_WARNING_CHECKS_SUPER_V3: tuple[Check, ...] = (
    megatron_setup.fp8_param_may_give_nan,
    *tokenizer.WARNING_CHECKS,
    *MCORE_WARNINGS,
)

__all__ = [
    "ERROR_CHECKS_SUPER35",
    "ERROR_CHECKS_SUPER_V3",
    "POLICY_ERROR_CHECKS_SUPER35",
    "POLICY_ERROR_CHECKS_SUPER_V3",
    "POLICY_WARNING_CHECKS_SUPER35",
    "POLICY_WARNING_CHECKS_SUPER_V3",
    "WARNING_CHECKS_SUPER35",
    "WARNING_CHECKS_SUPER_V3",
]
