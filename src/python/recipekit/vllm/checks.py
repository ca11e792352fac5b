"""vLLM's mirrored rules as the check tuples of the frameworks that start its engine: each
reads the framework's engine arguments through ``engine_of`` (``recipekit.vllm.engine``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from recipekit.errors import Issue
from recipekit.vllm.engine import engine_of
from recipekit.vllm.guards import reached
from recipekit.vllm.rules import Check, arguments, model, parallel, scheduler, vllm_config


def engine_config_guards_hold(ctx: Any) -> Iterator[Issue]:
    """vllm/config/*.py (``recipekit.vllm.guards``): the checks of the config classes the
    engine builds from its arguments on every start (ParallelConfig, ObservabilityConfig, ...),
    read from the wheel and replayed on the arguments the plan can tell, where no rule of
    ``recipekit.vllm.rules`` mirrors them. Each is refused at the first argument it reads that
    the user gave among the others, else the first."""
    engine = engine_of(ctx)
    if engine is None:
        return
    given = {k: v for k, v in engine.arguments.items() if k not in engine.undetermined}
    for broken in reached(given, engine.undetermined):
        if not broken.warns:
            argument = next((a for a in broken.read if a not in engine.settings), broken.read[0])
            yield Issue(
                engine.key(argument),
                broken.message(),
                value=engine.value(argument),
                hint=broken.hint,
            )


ERROR_CHECKS: tuple[Check, ...] = (
    arguments.given_arguments_are_engine_arguments,
    arguments.given_config_mappings_hold_their_fields,
    model.attention_heads_split_over_tensor_parallel,
    model.max_model_len_within_the_model,
    vllm_config.routed_experts_without_pipeline_parallel,
    scheduler.batched_tokens_hold_a_sequence,
    scheduler.batched_tokens_cover_the_sequences,
    model.expert_parallel_needs_moe,
    parallel.external_data_parallel_needs_moe,
    model.dcp_tensor_parallel_above_kv_heads,
    model.dcp_within_tensor_parallel_per_kv_head,
    model.dcp_divides_queries_per_kv_head,
    scheduler.partial_prefills_need_chunked_prefill,
    scheduler.long_prefill_threshold_within_max_model_len,
    scheduler.long_partial_prefills_within_partial_prefills,
    parallel.async_eplb_communicator_is_not_nccl,
    parallel.redundant_experts_need_eplb,
    parallel.nsight_workers_need_ray,
    vllm_config.mamba_stochastic_rounding_needs_float16_cache,
    vllm_config.mamba_block_size_needs_prefix_caching,
    vllm_config.micro_batching_needs_an_expert_all2all,
    # Last: every check of the config classes the rules above do not mirror.
    engine_config_guards_hold,
)
WARNING_CHECKS: tuple[Check, ...] = (
    scheduler.batched_tokens_beyond_what_sequences_use,
    model.long_max_model_len_allowed_by_its_variable,
    scheduler.custom_scheduler_class_is_not_public,
    parallel.removed_all2all_backend_falls_back,
    parallel.parallel_loading_workers_are_ignored,
    model.attention_dtype_override_needs_rocm,
    vllm_config.kv_scales_calculation_is_deprecated,
    vllm_config.sequence_parallelism_needs_tensor_parallel,
    vllm_config.sequence_parallelism_needs_vllm_compile,
    vllm_config.kv_sharing_fast_prefill_needs_model_support,
    vllm_config.dcp_interleave_overrides_cp_interleave,
)
