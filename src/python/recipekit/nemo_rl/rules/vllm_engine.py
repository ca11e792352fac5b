"""vLLM 0.25.1's own engine checks on the settings NeMo-RL hands it.

NeMo-RL's vLLM worker builds ``vllm.LLM(...)`` from ``policy.generation.vllm_cfg`` (tensor and
pipeline parallel sizes, ``enable_expert_parallel = expert_parallel_size > 1``,
``max_model_len``, ...) plus ``policy.generation.vllm_kwargs`` passed through as they are
(nemo_rl/models/generation/vllm/vllm_worker.py, BaseVllmGenerationWorker._load_model @
super-v3.5-posttraining). vLLM checks them
when the engine starts; each check below mirrors one of its lines (vllm/... @ 0.25.1).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from recipekit.checking import cites
from recipekit.errors import Issue
from recipekit.nemo_rl.checks import Check, CheckContext
from recipekit.nemo_rl.keys import value_of
from recipekit.nemo_rl.rules.allocator import env_var_sections
from recipekit.rule_sites import sites

SITES = sites("vllm")

VLLM = "policy.generation.vllm_cfg"
KWARGS = "policy.generation.vllm_kwargs"
AT = "@ vLLM 0.25.1"


def cite(rule: str) -> str:
    """``vllm/config/...py:line @ vLLM 0.25.1`` of a catalogued rule (rule_catalogue/vllm.toml)."""
    _, file, line = SITES[rule]
    return f"{file}:{line} {AT}"


def mirrors(rule: str) -> Callable[[Check], Check]:
    """A check of the catalogued vLLM rule ``rule``: each Issue it finds ends with its line."""
    return cites(lambda _ctx: cite(rule), (rule,), SITES)


def _kwargs(ctx: CheckContext) -> dict[str, Any]:
    kwargs = value_of(ctx.generation, "vllm_kwargs")
    return kwargs if isinstance(kwargs, dict) else {}


@mirrors("vllm.model.attention-heads-divide-tp")
def attention_heads_split_over_tensor_parallel(ctx: CheckContext) -> Iterator[Issue]:
    """vllm/config/model.py, ModelConfig.verify_with_parallel_config: attention heads divide evenly
    over vLLM's TP ranks."""
    vllm, arch = ctx.vllm, ctx.model.architecture
    heads = arch.attention_heads if arch is not None else 0
    if vllm is not None and heads and heads % vllm.tensor_parallel_size:
        yield Issue(
            f"{VLLM}.tensor_parallel_size",
            f"vLLM refuses it: {ctx.model.name}'s {heads} attention heads do not split over "
            f"TP={vllm.tensor_parallel_size}",
            value=vllm.tensor_parallel_size,
        )


def _beyond_positions(ctx: CheckContext) -> tuple[int, int, bool] | None:
    """(max_model_len, the model's positions, whether VLLM_ALLOW_LONG_MAX_MODEL_LEN is set)
    where max_model_len exceeds the positions the card gives; None otherwise."""
    vllm, arch = ctx.vllm, ctx.model.architecture
    positions = arch.max_positions if arch is not None else 0
    if vllm is None or not positions or not isinstance(vllm.max_model_len, int):
        return None
    if vllm.max_model_len <= positions:
        return None
    allowed = any(env.get("VLLM_ALLOW_LONG_MAX_MODEL_LEN") for _, env in env_var_sections(ctx))
    return vllm.max_model_len, positions, allowed


@mirrors("vllm.model.max-model-len-within-positions")
def max_model_len_within_the_model(ctx: CheckContext) -> Iterator[Issue]:
    """vllm/config/model.py, _get_and_verify_max_len: a context longer than the model's positions is
    refused unless VLLM_ALLOW_LONG_MAX_MODEL_LEN is set."""
    beyond = _beyond_positions(ctx)
    if beyond is not None and not beyond[2]:
        length, positions, _ = beyond
        yield Issue(
            f"{VLLM}.max_model_len",
            f"vLLM refuses it: {ctx.model.name} is configured for {positions} positions",
            value=length,
            hint=f"at most {positions}",
        )


@mirrors("vllm.vllm.routed-experts-without-pp")
def routed_experts_without_pipeline_parallel(ctx: CheckContext) -> Iterator[Issue]:
    """vllm/config/vllm.py, VllmConfig.__post_init__: returning routed experts (router replay) needs
    PP = 1."""
    vllm = ctx.vllm
    routed = value_of(vllm, "enable_return_routed_experts") is True
    if vllm is not None and routed and vllm.pipeline_parallel_size > 1:
        yield Issue(
            f"{VLLM}.pipeline_parallel_size",
            "vLLM refuses pipeline parallelism with enable_return_routed_experts",
            value=vllm.pipeline_parallel_size,
        )


@mirrors("vllm.scheduler.batched-tokens-hold-a-sequence")
def batched_tokens_hold_a_sequence(ctx: CheckContext) -> Iterator[Issue]:
    """vllm/config/scheduler.py, SchedulerConfig.verify_max_model_len: without chunked prefill a
    step's token budget holds the longest sequence. vLLM turns chunked prefill on for generation
    unless it is set off."""
    vllm, kwargs = ctx.vllm, _kwargs(ctx)
    budget = kwargs.get("max_num_batched_tokens")
    if (
        vllm is None
        or not isinstance(budget, int)
        or kwargs.get("enable_chunked_prefill") is not False
    ):
        return
    if isinstance(vllm.max_model_len, int) and budget < vllm.max_model_len:
        yield Issue(
            f"{KWARGS}.max_num_batched_tokens",
            f"vLLM refuses it with chunked prefill off: smaller than max_model_len "
            f"({vllm.max_model_len})",
            value=budget,
        )


@mirrors("vllm.scheduler.batched-tokens-cover-sequences")
def batched_tokens_cover_the_sequences(ctx: CheckContext) -> Iterator[Issue]:
    """vllm/config/scheduler.py, SchedulerConfig.verify_max_model_len: a step schedules at least one
    token per sequence."""
    kwargs = _kwargs(ctx)
    budget, seqs = kwargs.get("max_num_batched_tokens"), kwargs.get("max_num_seqs")
    if isinstance(budget, int) and isinstance(seqs, int) and budget < seqs:
        yield Issue(
            f"{KWARGS}.max_num_batched_tokens",
            f"vLLM refuses it: smaller than max_num_seqs ({seqs})",
            value=budget,
        )


@mirrors("vllm.scheduler.batched-tokens-beyond-sequences")
def batched_tokens_beyond_what_sequences_use(ctx: CheckContext) -> Iterator[Issue]:
    """vllm/config/scheduler.py, SchedulerConfig.verify_max_model_len: a warning; the budget exceeds
    max_num_seqs x max_model_len."""
    vllm, kwargs = ctx.vllm, _kwargs(ctx)
    budget, seqs = kwargs.get("max_num_batched_tokens"), kwargs.get("max_num_seqs")
    if vllm is None or not isinstance(budget, int) or not isinstance(seqs, int):
        return
    if isinstance(vllm.max_model_len, int) and budget > seqs * vllm.max_model_len:
        yield Issue(
            f"{KWARGS}.max_num_batched_tokens",
            f"vLLM warns: more than max_num_seqs x max_model_len = {seqs * vllm.max_model_len}",
            value=budget,
        )


@mirrors("vllm.parallel.eplb-needs-expert-parallel")
def expert_load_balancing_needs_expert_parallel(ctx: CheckContext) -> Iterator[Issue]:
    """vllm/config/parallel.py, ParallelConfig._validate_parallel_config: EPLB balances experts only
    under expert parallelism."""
    vllm = ctx.vllm
    if (
        vllm is not None
        and _kwargs(ctx).get("enable_eplb") is True
        and vllm.expert_parallel_size <= 1
    ):
        yield Issue(
            f"{KWARGS}.enable_eplb",
            "vLLM refuses it without expert parallelism (NeMo-RL enables it only for "
            "vllm_cfg.expert_parallel_size > 1)",
            value=True,
        )


def _sub(kwargs: dict[str, Any], name: str) -> dict[str, Any]:
    """A nested vllm_kwargs section (``eplb_config``, ``compilation_config``), {} if absent."""
    value = kwargs.get(name)
    return value if isinstance(value, dict) else {}


def _int(value: object, default: int) -> int | None:
    """An integer kwarg, its vLLM default when absent, None when it is not an integer."""
    if value is None:
        return default
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _sequence_parallel(kwargs: dict[str, Any]) -> bool:
    """compilation_config.pass_config asks for sequence parallelism (async TP implies it)."""
    passes = _sub(_sub(kwargs, "compilation_config"), "pass_config")
    return passes.get("enable_sp") is True or passes.get("fuse_gemm_comms") is True


def _decode_context_parallel(ctx: CheckContext) -> int:
    dcp = _int(_kwargs(ctx).get("decode_context_parallel_size"), 1)
    return dcp if dcp is not None else 1


def _kv_heads(ctx: CheckContext) -> tuple[int, int]:
    """(attention heads, KV heads) of a grouped-query model card; (0, 0) when unknown or when
    the card gives as many KV heads as heads (vLLM skips these asserts for MLA models, which a
    card does not mark, so only GQA/MQA cards are read)."""
    arch = ctx.model.architecture
    if arch is None or not arch.attention_heads or not 0 < arch.kv_heads < arch.attention_heads:
        return 0, 0
    return arch.attention_heads, arch.kv_heads


@mirrors("vllm.model.long-max-model-len-allowed")
def long_max_model_len_allowed_by_its_variable(ctx: CheckContext) -> Iterator[Issue]:
    """vllm/config/model.py, _get_and_verify_max_len: a warning; VLLM_ALLOW_LONG_MAX_MODEL_LEN lets
    max_model_len pass the model's positions, which may give NaNs (RoPE) or out-of-bounds reads."""
    beyond = _beyond_positions(ctx)
    if beyond is not None and beyond[2]:
        length, positions, _ = beyond
        yield Issue(
            f"{VLLM}.max_model_len",
            f"vLLM warns: past {ctx.model.name}'s {positions} positions, allowed only by "
            f"VLLM_ALLOW_LONG_MAX_MODEL_LEN; positions beyond them can give NaNs",
            value=length,
        )


@mirrors("vllm.model.expert-parallel-needs-moe")
def expert_parallel_needs_moe(ctx: CheckContext) -> Iterator[Issue]:
    """vllm/config/model.py, ModelConfig._verify_with_expert_parallelism: expert parallelism
    (NeMo-RL turns it on for expert_parallel_size > 1) needs a model with experts. With
    expert_parallel_size above tensor_parallel_size vLLM stops earlier, at
    vllm.parallel.external-dp-needs-moe."""
    vllm = ctx.vllm
    if vllm is None or not ctx.model.is_dense or vllm.expert_parallel_size <= 1:
        return
    if vllm.expert_parallel_size <= vllm.tensor_parallel_size:
        yield Issue(
            f"{VLLM}.expert_parallel_size",
            f"vLLM refuses it: {ctx.model.name} has no experts to split",
            value=vllm.expert_parallel_size,
        )


@mirrors("vllm.parallel.external-dp-needs-moe")
def external_data_parallel_needs_moe(ctx: CheckContext) -> Iterator[Issue]:
    """vllm/config/parallel.py, ParallelConfig.__post_init__: NeMo-RL runs vLLM data-parallel
    (VLLM_DP_SIZE = expert_parallel_size / tensor_parallel_size) when EP exceeds TP, which vLLM
    refuses for a dense model."""
    vllm = ctx.vllm
    if vllm is None or not ctx.model.is_dense:
        return
    if vllm.expert_parallel_size > vllm.tensor_parallel_size:
        yield Issue(
            f"{VLLM}.expert_parallel_size",
            f"vLLM refuses it: above tensor_parallel_size it makes NeMo-RL start vLLM "
            f"data-parallel, which {ctx.model.name} (no experts) cannot use",
            value=vllm.expert_parallel_size,
        )


@mirrors("vllm.parallel.dcp-divides-tp")
def decode_context_parallel_divides_tensor_parallel(ctx: CheckContext) -> Iterator[Issue]:
    """vllm/config/parallel.py, ParallelConfig._validate_parallel_config: decode context parallelism
    splits each TP group, so its size divides tensor_parallel_size."""
    vllm, dcp = ctx.vllm, _decode_context_parallel(ctx)
    if vllm is not None and dcp > 1 and vllm.tensor_parallel_size % dcp:
        yield Issue(
            f"{KWARGS}.decode_context_parallel_size",
            f"vLLM refuses it: does not divide tensor_parallel_size "
            f"({vllm.tensor_parallel_size})",
            value=dcp,
        )


def _dcp_on_gqa(ctx: CheckContext) -> tuple[int, int, int, int] | None:
    """(TP, DCP, attention heads, KV heads) where vLLM reaches its head checks of decode
    context parallelism: DCP above 1 dividing TP (vllm.parallel.dcp-divides-tp refuses the rest
    first) on a
    grouped-query card; None otherwise."""
    vllm, dcp = ctx.vllm, _decode_context_parallel(ctx)
    heads, kv = _kv_heads(ctx)
    if vllm is None or dcp <= 1 or not kv or vllm.tensor_parallel_size % dcp:
        return None
    return vllm.tensor_parallel_size, dcp, heads, kv


@mirrors("vllm.model.dcp-tp-above-kv-heads")
def dcp_tensor_parallel_above_kv_heads(ctx: CheckContext) -> Iterator[Issue]:
    """vllm/config/model.py, ModelConfig.verify_with_parallel_config: with decode context
    parallelism on a GQA model, TP exceeds the KV heads (DCP reuses the ranks that would hold
    KV-head copies)."""
    found = _dcp_on_gqa(ctx)
    if found is None:
        return
    tp, dcp, _, kv = found
    if tp <= kv:
        yield Issue(
            f"{KWARGS}.decode_context_parallel_size",
            f"vLLM refuses it: needs tensor_parallel_size above {ctx.model.name}'s {kv} KV "
            f"heads, not {tp}",
            value=dcp,
        )


@mirrors("vllm.model.dcp-within-tp-per-kv-head")
def dcp_within_tensor_parallel_per_kv_head(ctx: CheckContext) -> Iterator[Issue]:
    """vllm/config/model.py, ModelConfig.verify_with_parallel_config: the DCP size is at most
    tensor_parallel_size // KV heads."""
    found = _dcp_on_gqa(ctx)
    if found is None:
        return
    tp, dcp, _, kv = found
    most = tp // kv
    if tp > kv and dcp > most:
        yield Issue(
            f"{KWARGS}.decode_context_parallel_size",
            f"vLLM refuses it: at most TP // KV heads = {tp} // {kv}",
            value=dcp,
            hint=f"at most {most}",
        )


@mirrors("vllm.model.dcp-divides-queries-per-kv-head")
def dcp_divides_queries_per_kv_head(ctx: CheckContext) -> Iterator[Issue]:
    """vllm/config/model.py, ModelConfig.verify_with_parallel_config: the DCP size divides the query
    heads per KV head."""
    found = _dcp_on_gqa(ctx)
    if found is None:
        return
    tp, dcp, heads, kv = found
    per_kv = heads // kv
    if tp > kv and dcp <= tp // kv and per_kv % dcp:
        yield Issue(
            f"{KWARGS}.decode_context_parallel_size",
            f"vLLM refuses it: does not divide {ctx.model.name}'s {per_kv} query heads per KV "
            f"head",
            value=dcp,
        )


@mirrors("vllm.scheduler.partial-prefills-need-chunked-prefill")
def partial_prefills_need_chunked_prefill(ctx: CheckContext) -> Iterator[Issue]:
    """vllm/config/scheduler.py, SchedulerConfig.verify_max_model_len: concurrent partial prefills
    need chunked prefill."""
    kwargs = _kwargs(ctx)
    partial = _int(kwargs.get("max_num_partial_prefills"), 1)
    if partial is not None and partial > 1 and kwargs.get("enable_chunked_prefill") is False:
        yield Issue(
            f"{KWARGS}.max_num_partial_prefills",
            "vLLM refuses it above 1 with chunked prefill off",
            value=partial,
        )


@mirrors("vllm.scheduler.long-prefill-threshold-within-max-model-len")
def long_prefill_threshold_within_max_model_len(ctx: CheckContext) -> Iterator[Issue]:
    """vllm/config/scheduler.py, SchedulerConfig.verify_max_model_len: with concurrent partial
    prefills, the long-prompt threshold is at most max_model_len."""
    vllm, kwargs = ctx.vllm, _kwargs(ctx)
    partial = _int(kwargs.get("max_num_partial_prefills"), 1)
    threshold = _int(kwargs.get("long_prefill_token_threshold"), 0)
    if vllm is None or not isinstance(vllm.max_model_len, int) or not partial or not threshold:
        return
    if partial > 1 and kwargs.get("enable_chunked_prefill") is not False:
        if threshold > vllm.max_model_len:
            yield Issue(
                f"{KWARGS}.long_prefill_token_threshold",
                f"vLLM refuses it: above max_model_len ({vllm.max_model_len})",
                value=threshold,
            )


@mirrors("vllm.scheduler.long-partial-prefills-within-partial-prefills")
def long_partial_prefills_within_partial_prefills(ctx: CheckContext) -> Iterator[Issue]:
    """vllm/config/scheduler.py, SchedulerConfig.verify_max_model_len: long-prompt partial prefills
    are a share of all concurrent partial prefills (both default to 1)."""
    kwargs = _kwargs(ctx)
    long = _int(kwargs.get("max_long_partial_prefills"), 1)
    partial = _int(kwargs.get("max_num_partial_prefills"), 1)
    if long is not None and partial is not None and long > partial:
        yield Issue(
            f"{KWARGS}.max_long_partial_prefills",
            f"vLLM refuses it: above max_num_partial_prefills ({partial})",
            value=long,
        )


@mirrors("vllm.scheduler.custom-scheduler-class")
def custom_scheduler_class_is_not_public(ctx: CheckContext) -> Iterator[Issue]:
    """vllm/config/scheduler.py, SchedulerConfig.get_scheduler_cls: a warning; a custom scheduler
    class uses an interface vLLM does not keep stable, and a subclass of the synchronous Scheduler
    loses async scheduling."""
    scheduler = _kwargs(ctx).get("scheduler_cls")
    if scheduler is not None:
        yield Issue(
            f"{KWARGS}.scheduler_cls",
            "vLLM warns: its scheduler interface is not public; a subclass of Scheduler (not "
            "AsyncScheduler) runs without async scheduling",
            value=scheduler,
        )


@mirrors("vllm.parallel.async-eplb-not-over-nccl")
def async_eplb_communicator_is_not_nccl(ctx: CheckContext) -> Iterator[Issue]:
    """vllm/config/parallel.py, EPLBConfig._validate_eplb_config: async EPLB (eplb_config.use_async,
    on by default) cannot move experts over an NCCL communicator."""
    eplb = _sub(_kwargs(ctx), "eplb_config")
    communicator = eplb.get("communicator")
    if eplb.get("use_async", True) is not False and communicator in ("torch_nccl", "pynccl"):
        yield Issue(
            f"{KWARGS}.eplb_config.communicator",
            "vLLM refuses it with async EPLB (eplb_config.use_async, on unless set false): "
            "NCCL streams conflict",
            value=communicator,
            hint="torch_gloo, nixl or unset; or eplb_config.use_async: false",
        )


@mirrors("vllm.parallel.redundant-experts-need-eplb")
def redundant_experts_need_eplb(ctx: CheckContext) -> Iterator[Issue]:
    """vllm/config/parallel.py, ParallelConfig._validate_parallel_config: redundant experts are
    placed by EPLB only."""
    kwargs = _kwargs(ctx)
    redundant = _sub(kwargs, "eplb_config").get("num_redundant_experts")
    if isinstance(redundant, int) and redundant and kwargs.get("enable_eplb") is not True:
        yield Issue(
            f"{KWARGS}.eplb_config.num_redundant_experts",
            "vLLM refuses it without enable_eplb",
            value=redundant,
        )


@mirrors("vllm.parallel.removed-all2all-backend")
def removed_all2all_backend_falls_back(ctx: CheckContext) -> Iterator[Issue]:
    """vllm/config/parallel.py, ParallelConfig._validate_parallel_config: a warning; the pplx and
    naive all2all backends are gone and vLLM uses allgather_reducescatter instead."""
    backend = _kwargs(ctx).get("all2all_backend")
    if backend in ("pplx", "naive"):
        yield Issue(
            f"{KWARGS}.all2all_backend",
            "vLLM warns: removed; it runs allgather_reducescatter instead",
            value=backend,
        )


@mirrors("vllm.parallel.parallel-loading-workers-ignored")
def parallel_loading_workers_are_ignored(ctx: CheckContext) -> Iterator[Issue]:
    """vllm/config/parallel.py, ParallelConfig.__post_init__: a warning;
    max_parallel_loading_workers has no effect."""
    workers = _kwargs(ctx).get("max_parallel_loading_workers")
    if workers is not None:
        yield Issue(
            f"{KWARGS}.max_parallel_loading_workers",
            "vLLM warns: not supported, ignored",
            value=workers,
        )


@mirrors("vllm.parallel.nsight-needs-ray")
def nsight_workers_need_ray(ctx: CheckContext) -> Iterator[Issue]:
    """vllm/config/parallel.py, ParallelConfig._verify_args: nsight profiling of vLLM's workers
    needs the Ray executor, which NeMo-RL picks only for TP x PP > 1 (one GPU runs in-process)."""
    vllm = ctx.vllm
    if vllm is None or _kwargs(ctx).get("ray_workers_use_nsight") is not True:
        return
    if vllm.tensor_parallel_size * vllm.pipeline_parallel_size == 1:
        yield Issue(
            f"{KWARGS}.ray_workers_use_nsight",
            "vLLM refuses it: at TP x PP = 1 NeMo-RL runs vLLM without Ray workers",
            value=True,
        )


@mirrors("vllm.model.attention-dtype-override-needs-rocm")
def attention_dtype_override_needs_rocm(ctx: CheckContext) -> Iterator[Issue]:
    """vllm/config/model.py, ModelConfig.__post_init__: a warning; override_attention_dtype acts on
    ROCm only."""
    dtype = _kwargs(ctx).get("override_attention_dtype")
    if dtype is not None:
        yield Issue(
            f"{KWARGS}.override_attention_dtype",
            "vLLM warns: only ROCm honours it; NVIDIA GPUs ignore it",
            value=dtype,
        )


@mirrors("vllm.cache.calculate-kv-scales-deprecated")
def kv_scales_calculation_is_deprecated(ctx: CheckContext) -> Iterator[Issue]:
    """vllm/config/cache.py, CacheConfig._warn_deprecated_calculate_kv_scales: a warning;
    calculate_kv_scales is deprecated (scales come from the checkpoint, else 1.0)."""
    if _kwargs(ctx).get("calculate_kv_scales") is True:
        yield Issue(
            f"{KWARGS}.calculate_kv_scales",
            "vLLM warns: deprecated; KV scales are read from the checkpoint or default to 1.0",
            value=True,
        )


@mirrors("vllm.vllm.mamba-stochastic-rounding-float16")
def mamba_stochastic_rounding_needs_float16_cache(ctx: CheckContext) -> Iterator[Issue]:
    """vllm/config/vllm.py, VllmConfig.__post_init__: stochastic rounding of the Mamba state needs a
    float16 SSM cache."""
    kwargs = _kwargs(ctx)
    cache = kwargs.get("mamba_ssm_cache_dtype", "auto")
    if kwargs.get("enable_mamba_cache_stochastic_rounding") is True and cache != "float16":
        yield Issue(
            f"{KWARGS}.enable_mamba_cache_stochastic_rounding",
            f"vLLM refuses it: mamba_ssm_cache_dtype is {cache}, not float16",
            value=True,
        )


@mirrors("vllm.vllm.mamba-block-size-needs-prefix-caching")
def mamba_block_size_needs_prefix_caching(ctx: CheckContext) -> Iterator[Issue]:
    """vllm/config/vllm.py, VllmConfig.validate_mamba_block_size: a Mamba block size other than
    max_model_len needs prefix caching (NeMo-RL passes vllm_cfg.enable_prefix_caching; unset, it is
    on from Ampere)."""
    vllm, size = ctx.vllm, _kwargs(ctx).get("mamba_block_size")
    if vllm is None or not isinstance(size, int) or size == vllm.max_model_len:
        return
    if value_of(vllm, "enable_prefix_caching") is False:
        yield Issue(
            f"{KWARGS}.mamba_block_size",
            "vLLM refuses it with vllm_cfg.enable_prefix_caching false",
            value=size,
        )


@mirrors("vllm.vllm.sequence-parallel-needs-tp")
def sequence_parallelism_needs_tensor_parallel(ctx: CheckContext) -> Iterator[Issue]:
    """vllm/config/vllm.py, VllmConfig.__post_init__: a warning; sequence parallelism
    (pass_config.enable_sp, or fuse_gemm_comms which implies it) is switched off at TP = 1."""
    vllm, kwargs = ctx.vllm, _kwargs(ctx)
    if vllm is not None and _sequence_parallel(kwargs) and vllm.tensor_parallel_size == 1:
        yield Issue(
            f"{KWARGS}.compilation_config.pass_config",
            "vLLM warns: sequence parallelism needs tensor_parallel_size > 1 and is turned off",
            value=_sub(_sub(kwargs, "compilation_config"), "pass_config"),
        )


@mirrors("vllm.vllm.sequence-parallel-needs-vllm-compile")
def sequence_parallelism_needs_vllm_compile(ctx: CheckContext) -> Iterator[Issue]:
    """vllm/config/vllm.py, VllmConfig.__post_init__: a warning; sequence parallelism is a compile
    pass, so it does not run when enforce_eager (or compilation_config.mode) leaves VLLM_COMPILE."""
    vllm, kwargs = ctx.vllm, _kwargs(ctx)
    if vllm is None or not _sequence_parallel(kwargs) or vllm.tensor_parallel_size == 1:
        return
    mode = _sub(kwargs, "compilation_config").get("mode")
    other_mode = mode is not None and mode not in (3, "VLLM_COMPILE", "vllm_compile")
    if vllm.enforce_eager is True or other_mode:
        yield Issue(
            f"{KWARGS}.compilation_config.pass_config",
            "vLLM warns: sequence parallelism is on but compilation is not VLLM_COMPILE "
            "(enforce_eager or compilation_config.mode)",
            value=_sub(_sub(kwargs, "compilation_config"), "pass_config"),
        )


@mirrors("vllm.vllm.micro-batching-needs-expert-all2all")
def micro_batching_needs_an_expert_all2all(ctx: CheckContext) -> Iterator[Issue]:
    """vllm/config/vllm.py, VllmConfig.__post_init__: dual-batch overlap / micro-batching
    (enable_dbo, or ubatch_size > 1) needs the deepep or nixl_ep all2all backend."""
    kwargs = _kwargs(ctx)
    ubatch = _int(kwargs.get("ubatch_size"), 0)
    if kwargs.get("enable_dbo") is not True and not (ubatch and ubatch > 1):
        return
    backend = kwargs.get("all2all_backend", "allgather_reducescatter")
    if backend not in ("deepep_low_latency", "deepep_high_throughput", "nixl_ep"):
        yield Issue(
            f"{KWARGS}.all2all_backend",
            "vLLM refuses micro-batching (enable_dbo / ubatch_size) with it: needs "
            "deepep_low_latency, deepep_high_throughput or nixl_ep",
            value=backend,
        )


@mirrors("vllm.vllm.kv-sharing-fast-prefill")
def kv_sharing_fast_prefill_needs_model_support(ctx: CheckContext) -> Iterator[Issue]:
    """vllm/config/vllm.py, VllmConfig.__post_init__: a warning; fast prefill for KV sharing is
    correct and faster only where the model implements it."""
    if _kwargs(ctx).get("kv_sharing_fast_prefill") is True:
        yield Issue(
            f"{KWARGS}.kv_sharing_fast_prefill",
            "vLLM warns: the model must support it to stay correct and gain speed",
            value=True,
        )


@mirrors("vllm.vllm.dcp-interleave-overrides-cp-interleave")
def dcp_interleave_overrides_cp_interleave(ctx: CheckContext) -> Iterator[Issue]:
    """vllm/config/vllm.py, VllmConfig.validate_block_size: a warning; under decode context
    parallelism a dcp_kv_cache_interleave_size above 1 replaces a different
    cp_kv_cache_interleave_size."""
    kwargs = _kwargs(ctx)
    dcp_size = _int(kwargs.get("dcp_kv_cache_interleave_size"), 1)
    cp_size = _int(kwargs.get("cp_kv_cache_interleave_size"), 1)
    if _decode_context_parallel(ctx) <= 1 or not dcp_size or dcp_size <= 1:
        return
    if cp_size != dcp_size:
        yield Issue(
            f"{KWARGS}.dcp_kv_cache_interleave_size",
            f"vLLM warns: it overrides cp_kv_cache_interleave_size ({cp_size})",
            value=dcp_size,
        )


ERROR_CHECKS = (
    attention_heads_split_over_tensor_parallel,
    max_model_len_within_the_model,
    routed_experts_without_pipeline_parallel,
    batched_tokens_hold_a_sequence,
    batched_tokens_cover_the_sequences,
    expert_load_balancing_needs_expert_parallel,
    expert_parallel_needs_moe,
    external_data_parallel_needs_moe,
    decode_context_parallel_divides_tensor_parallel,
    dcp_tensor_parallel_above_kv_heads,
    dcp_within_tensor_parallel_per_kv_head,
    dcp_divides_queries_per_kv_head,
    partial_prefills_need_chunked_prefill,
    long_prefill_threshold_within_max_model_len,
    long_partial_prefills_within_partial_prefills,
    async_eplb_communicator_is_not_nccl,
    redundant_experts_need_eplb,
    nsight_workers_need_ray,
    mamba_stochastic_rounding_needs_float16_cache,
    mamba_block_size_needs_prefix_caching,
    micro_batching_needs_an_expert_all2all,
)
WARNING_CHECKS = (
    batched_tokens_beyond_what_sequences_use,
    long_max_model_len_allowed_by_its_variable,
    custom_scheduler_class_is_not_public,
    removed_all2all_backend_falls_back,
    parallel_loading_workers_are_ignored,
    attention_dtype_override_needs_rocm,
    kv_scales_calculation_is_deprecated,
    sequence_parallelism_needs_tensor_parallel,
    sequence_parallelism_needs_vllm_compile,
    kv_sharing_fast_prefill_needs_model_support,
    dcp_interleave_overrides_cp_interleave,
)
