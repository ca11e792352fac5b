"""Megatron-Core's mirrored rules as the check tuples of the frameworks that run it.

The same functions serve NeMo-RL (``policy.megatron_cfg``) and Megatron-Bridge (``model.*``):
each reads the framework's options through ``options_of`` and names that framework's key. A
rule whose key the framework does not expose still runs: it then reads the model provider's
value, and names the key the user can change.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from recipekit.errors import Issue
from recipekit.megatron_core.guards import post_init_guards_hold, post_init_warnings
from recipekit.megatron_core.rules import (
    fusion,
    moe,
    offload,
    optimizer,
    parallel,
    recompute,
    scheduler,
)

Check = Callable[[Any], Iterator[Issue]]

ERROR_CHECKS: tuple[Check, ...] = (
    parallel.tensor_parallel_divides_the_attention_heads,
    parallel.tensor_parallel_fits_the_query_groups,
    recompute.full_recompute_names_a_method,
    recompute.full_recompute_names_its_layer_count,
    recompute.selective_recompute_takes_no_layer_count,
    recompute.recompute_modules_are_known,
    recompute.moe_act_recompute_needs_grouped_gemm,
    recompute.mla_up_proj_recompute_needs_mla,
    recompute.shared_experts_recompute_excludes_overlap,
    recompute.delayed_fp8_recompute_excludes_moe_act_and_layernorm,
    moe.deepep_needs_flex_dispatcher,
    moe.shared_expert_overlap_needs_alltoall_or_flex,
    fusion.bias_activation_fusion_needs_gelu_or_silu,
    offload.cpu_offloading_layers_fit_the_model,
    offload.cpu_offloading_excludes_pipeline_parallelism,
    offload.cpu_offloading_excludes_recompute,
    optimizer.precision_aware_optimizer_needs_adam,
    optimizer.precision_aware_optimizer_needs_distributed_optimizer,
    scheduler.lr_at_least_min_lr,
    scheduler.warmup_starts_at_most_lr,
    scheduler.weight_decay_does_not_fall,
    scheduler.wsd_has_its_decay_length,
    # Last: every guard of the config classes the rules above do not mirror.
    post_init_guards_hold,
)
WARNING_CHECKS: tuple[Check, ...] = (
    parallel.expert_and_tensor_parallel_want_sequence_parallel,
    recompute.core_attn_recompute_may_be_fused,
    moe.deepep_flag_is_deprecated,
    moe.many_experts_route_in_fp32,
    scheduler.warmup_ends_before_the_decay,
    # Last: every warning of the config classes the rules above do not mirror.
    post_init_warnings,
)

# Per framework: both run every rule (each names the framework's own keys).
NEMO_RL_ERROR_CHECKS = ERROR_CHECKS
NEMO_RL_WARNING_CHECKS = WARNING_CHECKS
MEGATRON_BRIDGE_ERROR_CHECKS = ERROR_CHECKS
MEGATRON_BRIDGE_WARNING_CHECKS = WARNING_CHECKS
