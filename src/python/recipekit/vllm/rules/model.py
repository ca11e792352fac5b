"""ModelConfig's checks (vllm/config/model.py): the model against the parallel layout and the
context length."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from recipekit.errors import Issue
from recipekit.vllm.engine import EngineStart, engine_of
from recipekit.vllm.rules import mirrors


@mirrors("vllm.model.attention-heads-divide-tp")
def attention_heads_split_over_tensor_parallel(ctx: Any) -> Iterator[Issue]:
    """ModelConfig.verify_with_parallel_config: attention heads divide evenly over vLLM's TP
    ranks."""
    engine, arch = engine_of(ctx), ctx.model.architecture
    heads = arch.attention_heads if arch is not None else 0
    tp = engine.integer("tensor_parallel_size", 1) if engine is not None else None
    if engine is not None and tp and heads and heads % tp:
        yield Issue(
            engine.key("tensor_parallel_size"),
            f"vLLM refuses it: {ctx.model.name}'s {heads} attention heads do not split over "
            f"TP={tp}",
            value=tp,
        )


def _beyond_positions(ctx: Any, engine: EngineStart) -> tuple[int, int, bool] | None:
    """(max_model_len, the model's positions, whether VLLM_ALLOW_LONG_MAX_MODEL_LEN is set)
    where max_model_len exceeds the positions the card gives; None otherwise."""
    arch = ctx.model.architecture
    positions = arch.max_positions if arch is not None else 0
    length = engine.get("max_model_len")
    if not positions or not isinstance(length, int) or length <= positions:
        return None
    return length, positions, bool(engine.environment.get("VLLM_ALLOW_LONG_MAX_MODEL_LEN"))


@mirrors("vllm.model.max-model-len-within-positions")
def max_model_len_within_the_model(ctx: Any) -> Iterator[Issue]:
    """_get_and_verify_max_len: a context longer than the model's positions is refused unless
    VLLM_ALLOW_LONG_MAX_MODEL_LEN is set."""
    engine = engine_of(ctx)
    beyond = _beyond_positions(ctx, engine) if engine is not None else None
    if engine is not None and beyond is not None and not beyond[2]:
        length, positions, _ = beyond
        yield Issue(
            engine.key("max_model_len"),
            f"vLLM refuses it: {ctx.model.name} is configured for {positions} positions",
            value=length,
            hint=f"at most {positions}",
        )


@mirrors("vllm.model.long-max-model-len-allowed")
def long_max_model_len_allowed_by_its_variable(ctx: Any) -> Iterator[Issue]:
    """_get_and_verify_max_len: a warning; VLLM_ALLOW_LONG_MAX_MODEL_LEN lets max_model_len pass
    the model's positions, which may give NaNs (RoPE) or out-of-bounds reads."""
    engine = engine_of(ctx)
    beyond = _beyond_positions(ctx, engine) if engine is not None else None
    if engine is not None and beyond is not None and beyond[2]:
        length, positions, _ = beyond
        yield Issue(
            engine.key("max_model_len"),
            f"vLLM warns: past {ctx.model.name}'s {positions} positions, allowed only by "
            f"VLLM_ALLOW_LONG_MAX_MODEL_LEN; positions beyond them can give NaNs",
            value=length,
        )


@mirrors("vllm.model.expert-parallel-needs-moe")
def expert_parallel_needs_moe(ctx: Any) -> Iterator[Issue]:
    """ModelConfig._verify_with_expert_parallelism: expert parallelism needs a model with
    experts. Data-parallel replicas of a dense model stop vLLM earlier, at
    vllm.parallel.external-dp-needs-moe."""
    engine = engine_of(ctx)
    if engine is None or not ctx.model.is_dense or engine.get("enable_expert_parallel") is not True:
        return
    if (engine.integer("data_parallel_size", 1) or 1) <= 1:
        yield Issue(
            engine.key("enable_expert_parallel"),
            f"vLLM refuses expert parallelism{engine.how('enable_expert_parallel')}: "
            f"{ctx.model.name} has no experts to split",
            value=engine.value("enable_expert_parallel"),
        )


def _kv_heads(ctx: Any) -> tuple[int, int]:
    """(attention heads, KV heads) of a grouped-query model card; (0, 0) when unknown or when
    the card gives as many KV heads as heads (vLLM skips these asserts for MLA models, which a
    card does not mark, so only GQA/MQA cards are read)."""
    arch = ctx.model.architecture
    if arch is None or not arch.attention_heads or not 0 < arch.kv_heads < arch.attention_heads:
        return 0, 0
    return arch.attention_heads, arch.kv_heads


def decode_context_parallel(engine: EngineStart) -> int:
    dcp = engine.integer("decode_context_parallel_size", 1)
    return dcp if dcp is not None else 1


def _dcp_on_gqa(ctx: Any) -> tuple[EngineStart, int, int, int, int] | None:
    """(the engine, TP, DCP, attention heads, KV heads) where vLLM reaches its head checks of
    decode context parallelism: DCP above 1 dividing TP (vllm.parallel.dcp-divides-tp refuses
    the rest first) on a grouped-query card; None otherwise."""
    engine = engine_of(ctx)
    if engine is None:
        return None
    tp, dcp = engine.integer("tensor_parallel_size", 1), decode_context_parallel(engine)
    heads, kv = _kv_heads(ctx)
    if not tp or dcp <= 1 or not kv or tp % dcp:
        return None
    return engine, tp, dcp, heads, kv


@mirrors("vllm.model.dcp-tp-above-kv-heads")
def dcp_tensor_parallel_above_kv_heads(ctx: Any) -> Iterator[Issue]:
    """ModelConfig.verify_with_parallel_config: with decode context parallelism on a GQA model,
    TP exceeds the KV heads (DCP reuses the ranks that would hold KV-head copies)."""
    found = _dcp_on_gqa(ctx)
    if found is None:
        return
    engine, tp, dcp, _, kv = found
    if tp <= kv:
        yield Issue(
            engine.key("decode_context_parallel_size"),
            f"vLLM refuses it: needs tensor_parallel_size above {ctx.model.name}'s {kv} KV "
            f"heads, not {tp}",
            value=dcp,
        )


@mirrors("vllm.model.dcp-within-tp-per-kv-head")
def dcp_within_tensor_parallel_per_kv_head(ctx: Any) -> Iterator[Issue]:
    """ModelConfig.verify_with_parallel_config: the DCP size is at most TP // KV heads."""
    found = _dcp_on_gqa(ctx)
    if found is None:
        return
    engine, tp, dcp, _, kv = found
    most = tp // kv
    if tp > kv and dcp > most:
        yield Issue(
            engine.key("decode_context_parallel_size"),
            f"vLLM refuses it: at most TP // KV heads = {tp} // {kv}",
            value=dcp,
            hint=f"at most {most}",
        )


@mirrors("vllm.model.dcp-divides-queries-per-kv-head")
def dcp_divides_queries_per_kv_head(ctx: Any) -> Iterator[Issue]:
    """ModelConfig.verify_with_parallel_config: the DCP size divides the query heads per KV
    head."""
    found = _dcp_on_gqa(ctx)
    if found is None:
        return
    engine, tp, dcp, heads, kv = found
    per_kv = heads // kv
    if tp > kv and dcp <= tp // kv and per_kv % dcp:
        yield Issue(
            engine.key("decode_context_parallel_size"),
            f"vLLM refuses it: does not divide {ctx.model.name}'s {per_kv} query heads per KV "
            f"head",
            value=dcp,
        )


@mirrors("vllm.model.attention-dtype-override-needs-rocm")
def attention_dtype_override_needs_rocm(ctx: Any) -> Iterator[Issue]:
    """ModelConfig.__post_init__: a warning; override_attention_dtype acts on ROCm only."""
    engine = engine_of(ctx)
    dtype = engine.get("override_attention_dtype") if engine is not None else None
    if engine is not None and dtype is not None:
        yield Issue(
            engine.key("override_attention_dtype"),
            "vLLM warns: only ROCm honours it; NVIDIA GPUs ignore it",
            value=dtype,
        )
