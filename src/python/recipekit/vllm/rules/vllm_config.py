"""VllmConfig's checks (vllm/config/vllm.py), which see every other config class at once, and
CacheConfig's (vllm/config/cache.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from recipekit.errors import Issue
from recipekit.vllm.engine import EngineStart, engine_of
from recipekit.vllm.rules import mirrors
from recipekit.vllm.rules.model import decode_context_parallel

PASSES = "compilation_config.pass_config"


@mirrors("vllm.vllm.routed-experts-without-pp")
def routed_experts_without_pipeline_parallel(ctx: Any) -> Iterator[Issue]:
    """VllmConfig.__post_init__: returning routed experts (router replay) needs PP = 1."""
    engine = engine_of(ctx)
    if engine is None or engine.get("enable_return_routed_experts") is not True:
        return
    pp = engine.integer("pipeline_parallel_size", 1)
    if pp is not None and pp > 1:
        yield Issue(
            engine.key("pipeline_parallel_size"),
            "vLLM refuses pipeline parallelism with enable_return_routed_experts"
            + engine.how("enable_return_routed_experts"),
            value=pp,
        )


@mirrors("vllm.vllm.mamba-stochastic-rounding-float16")
def mamba_stochastic_rounding_needs_float16_cache(ctx: Any) -> Iterator[Issue]:
    """VllmConfig.__post_init__: stochastic rounding of the Mamba state needs a float16 SSM
    cache."""
    engine = engine_of(ctx)
    if engine is None or engine.get("enable_mamba_cache_stochastic_rounding") is not True:
        return
    cache = engine.get("mamba_ssm_cache_dtype", "auto")
    if cache != "float16":
        yield Issue(
            engine.key("enable_mamba_cache_stochastic_rounding"),
            f"vLLM refuses it: mamba_ssm_cache_dtype is {cache}, not float16",
            value=True,
        )


@mirrors("vllm.vllm.mamba-block-size-needs-prefix-caching")
def mamba_block_size_needs_prefix_caching(ctx: Any) -> Iterator[Issue]:
    """VllmConfig.validate_mamba_block_size: a Mamba block size other than max_model_len needs
    prefix caching (on by default from Ampere)."""
    engine = engine_of(ctx)
    size = engine.get("mamba_block_size") if engine is not None else None
    if engine is None or not isinstance(size, int) or size == engine.get("max_model_len"):
        return
    if engine.get("enable_prefix_caching") is False:
        yield Issue(
            engine.key("mamba_block_size"),
            f"vLLM refuses it with prefix caching off ({engine.key('enable_prefix_caching')})",
            value=size,
        )


def _sequence_parallel(engine: EngineStart) -> dict[str, Any] | None:
    """compilation_config.pass_config where it asks for sequence parallelism (async TP implies
    it); None otherwise."""
    passes = engine.section("compilation_config").get("pass_config")
    if not isinstance(passes, dict):
        return None
    wanted = passes.get("enable_sp") is True or passes.get("fuse_gemm_comms") is True
    return passes if wanted else None


@mirrors("vllm.vllm.sequence-parallel-needs-tp")
def sequence_parallelism_needs_tensor_parallel(ctx: Any) -> Iterator[Issue]:
    """VllmConfig.__post_init__: a warning; sequence parallelism (pass_config.enable_sp, or
    fuse_gemm_comms which implies it) is switched off at TP = 1."""
    engine = engine_of(ctx)
    passes = _sequence_parallel(engine) if engine is not None else None
    if engine is not None and passes is not None and engine.get("tensor_parallel_size") == 1:
        yield Issue(
            engine.key(PASSES),
            "vLLM warns: sequence parallelism needs tensor_parallel_size > 1 and is turned off",
            value=passes,
        )


@mirrors("vllm.vllm.sequence-parallel-needs-vllm-compile")
def sequence_parallelism_needs_vllm_compile(ctx: Any) -> Iterator[Issue]:
    """VllmConfig.__post_init__: a warning; sequence parallelism is a compile pass, so it does not
    run when enforce_eager (or compilation_config.mode) leaves VLLM_COMPILE."""
    engine = engine_of(ctx)
    passes = _sequence_parallel(engine) if engine is not None else None
    if engine is None or passes is None or engine.get("tensor_parallel_size") == 1:
        return
    mode = engine.section("compilation_config").get("mode")
    other_mode = mode is not None and mode not in (3, "VLLM_COMPILE", "vllm_compile")
    if engine.get("enforce_eager") is True or other_mode:
        yield Issue(
            engine.key(PASSES),
            "vLLM warns: sequence parallelism is on but compilation is not VLLM_COMPILE "
            "(enforce_eager or compilation_config.mode)",
            value=passes,
        )


@mirrors("vllm.vllm.micro-batching-needs-expert-all2all")
def micro_batching_needs_an_expert_all2all(ctx: Any) -> Iterator[Issue]:
    """VllmConfig.__post_init__: dual-batch overlap / micro-batching (enable_dbo, or ubatch_size
    > 1) needs the deepep or nixl_ep all2all backend."""
    engine = engine_of(ctx)
    if engine is None:
        return
    ubatch = engine.integer("ubatch_size", 0)
    if engine.get("enable_dbo") is not True and not (ubatch and ubatch > 1):
        return
    backend = engine.get("all2all_backend", "allgather_reducescatter")
    if backend not in ("deepep_low_latency", "deepep_high_throughput", "nixl_ep"):
        yield Issue(
            engine.key("all2all_backend"),
            "vLLM refuses micro-batching (enable_dbo / ubatch_size) with it: needs "
            "deepep_low_latency, deepep_high_throughput or nixl_ep",
            value=backend,
        )


@mirrors("vllm.vllm.kv-sharing-fast-prefill")
def kv_sharing_fast_prefill_needs_model_support(ctx: Any) -> Iterator[Issue]:
    """VllmConfig.__post_init__: a warning; fast prefill for KV sharing is correct and faster
    only where the model implements it."""
    engine = engine_of(ctx)
    if engine is not None and engine.get("kv_sharing_fast_prefill") is True:
        yield Issue(
            engine.key("kv_sharing_fast_prefill"),
            "vLLM warns: the model must support it to stay correct and gain speed",
            value=True,
        )


@mirrors("vllm.vllm.dcp-interleave-overrides-cp-interleave")
def dcp_interleave_overrides_cp_interleave(ctx: Any) -> Iterator[Issue]:
    """VllmConfig.validate_block_size: a warning; under decode context parallelism a
    dcp_kv_cache_interleave_size above 1 replaces a different cp_kv_cache_interleave_size."""
    engine = engine_of(ctx)
    if engine is None or decode_context_parallel(engine) <= 1:
        return
    dcp_size = engine.integer("dcp_kv_cache_interleave_size", 1)
    cp_size = engine.integer("cp_kv_cache_interleave_size", 1)
    if dcp_size and dcp_size > 1 and cp_size != dcp_size:
        yield Issue(
            engine.key("dcp_kv_cache_interleave_size"),
            f"vLLM warns: it overrides cp_kv_cache_interleave_size ({cp_size})",
            value=dcp_size,
        )


@mirrors("vllm.cache.calculate-kv-scales-deprecated")
def kv_scales_calculation_is_deprecated(ctx: Any) -> Iterator[Issue]:
    """CacheConfig._warn_deprecated_calculate_kv_scales (vllm/config/cache.py): a warning;
    calculate_kv_scales is deprecated (scales come from the checkpoint, else 1.0)."""
    engine = engine_of(ctx)
    if engine is not None and engine.get("calculate_kv_scales") is True:
        yield Issue(
            engine.key("calculate_kv_scales"),
            "vLLM warns: deprecated; KV scales are read from the checkpoint or default to 1.0",
            value=True,
        )
