"""vLLM 0.25.1's own engine checks on the settings NeMo-RL hands it.

NeMo-RL's vLLM worker builds ``vllm.LLM(...)`` from ``policy.generation.vllm_cfg`` (tensor and
pipeline parallel sizes, ``enable_expert_parallel = expert_parallel_size > 1``,
``max_model_len``, ...) plus ``policy.generation.vllm_kwargs`` passed through as they are
(nemo_rl/models/generation/vllm/vllm_worker.py:570 @ super-v3.5-posttraining). vLLM checks them
when the engine starts; each check below mirrors one of its lines (vllm/... @ 0.25.1).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from recipekit.errors import Issue
from recipekit.nemo_rl.checks import CheckContext
from recipekit.nemo_rl.rules.allocator import env_var_sections

VLLM = "policy.generation.vllm_cfg"
KWARGS = "policy.generation.vllm_kwargs"
AT = "@ vLLM 0.25.1"


def _kwargs(ctx: CheckContext) -> dict[str, Any]:
    kwargs = getattr(ctx.generation, "vllm_kwargs", None)
    return kwargs if isinstance(kwargs, dict) else {}


def attention_heads_split_over_tensor_parallel(ctx: CheckContext) -> Iterator[Issue]:
    """vllm/config/model.py:1213: attention heads divide evenly over vLLM's TP ranks."""
    vllm, arch = ctx.vllm, ctx.model.architecture
    heads = arch.attention_heads if arch is not None else 0
    if vllm is not None and heads and heads % vllm.tensor_parallel_size:
        yield Issue(
            f"{VLLM}.tensor_parallel_size",
            f"vLLM refuses it: {ctx.model.name}'s {heads} attention heads do not split over "
            f"TP={vllm.tensor_parallel_size} (vllm/config/model.py:1213 {AT})",
            value=vllm.tensor_parallel_size,
        )


def max_model_len_within_the_model(ctx: CheckContext) -> Iterator[Issue]:
    """vllm/config/model.py:2276: a context longer than the model's positions is refused
    unless VLLM_ALLOW_LONG_MAX_MODEL_LEN is set."""
    vllm, arch = ctx.vllm, ctx.model.architecture
    positions = arch.max_positions if arch is not None else 0
    if vllm is None or not positions or not isinstance(vllm.max_model_len, int):
        return
    allowed = any(env.get("VLLM_ALLOW_LONG_MAX_MODEL_LEN") for _, env in env_var_sections(ctx))
    if vllm.max_model_len > positions and not allowed:
        yield Issue(
            f"{VLLM}.max_model_len",
            f"vLLM refuses it: {ctx.model.name} is configured for {positions} positions "
            f"(vllm/config/model.py:2276 {AT})",
            value=vllm.max_model_len,
            hint=f"at most {positions}",
        )


def routed_experts_without_pipeline_parallel(ctx: CheckContext) -> Iterator[Issue]:
    """vllm/config/vllm.py:891: returning routed experts (router replay) needs PP = 1."""
    vllm = ctx.vllm
    routed = getattr(vllm, "enable_return_routed_experts", None) is True
    if vllm is not None and routed and vllm.pipeline_parallel_size > 1:
        yield Issue(
            f"{VLLM}.pipeline_parallel_size",
            "vLLM refuses pipeline parallelism with enable_return_routed_experts "
            f"(vllm/config/vllm.py:891 {AT})",
            value=vllm.pipeline_parallel_size,
        )


def batched_tokens_hold_a_sequence(ctx: CheckContext) -> Iterator[Issue]:
    """vllm/config/scheduler.py:277: without chunked prefill a step's token budget holds the
    longest sequence. vLLM turns chunked prefill on for generation unless it is set off."""
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
            f"({vllm.max_model_len}) (vllm/config/scheduler.py:277 {AT})",
            value=budget,
        )


def batched_tokens_cover_the_sequences(ctx: CheckContext) -> Iterator[Issue]:
    """vllm/config/scheduler.py:287: a step schedules at least one token per sequence."""
    kwargs = _kwargs(ctx)
    budget, seqs = kwargs.get("max_num_batched_tokens"), kwargs.get("max_num_seqs")
    if isinstance(budget, int) and isinstance(seqs, int) and budget < seqs:
        yield Issue(
            f"{KWARGS}.max_num_batched_tokens",
            f"vLLM refuses it: smaller than max_num_seqs ({seqs}) "
            f"(vllm/config/scheduler.py:287 {AT})",
            value=budget,
        )


def batched_tokens_beyond_what_sequences_use(ctx: CheckContext) -> Iterator[Issue]:
    """vllm/config/scheduler.py:294: a warning; the budget exceeds max_num_seqs x max_model_len."""
    vllm, kwargs = ctx.vllm, _kwargs(ctx)
    budget, seqs = kwargs.get("max_num_batched_tokens"), kwargs.get("max_num_seqs")
    if vllm is None or not isinstance(budget, int) or not isinstance(seqs, int):
        return
    if isinstance(vllm.max_model_len, int) and budget > seqs * vllm.max_model_len:
        yield Issue(
            f"{KWARGS}.max_num_batched_tokens",
            f"vLLM warns: more than max_num_seqs x max_model_len = {seqs * vllm.max_model_len} "
            f"(vllm/config/scheduler.py:294 {AT})",
            value=budget,
        )


def expert_load_balancing_needs_expert_parallel(ctx: CheckContext) -> Iterator[Issue]:
    """vllm/config/parallel.py:482: EPLB balances experts only under expert parallelism."""
    vllm = ctx.vllm
    if (
        vllm is not None
        and _kwargs(ctx).get("enable_eplb") is True
        and vllm.expert_parallel_size <= 1
    ):
        yield Issue(
            f"{KWARGS}.enable_eplb",
            "vLLM refuses it without expert parallelism (NeMo-RL enables it only for "
            f"vllm_cfg.expert_parallel_size > 1) (vllm/config/parallel.py:482 {AT})",
            value=True,
        )


ERROR_CHECKS = (
    attention_heads_split_over_tensor_parallel,
    max_model_len_within_the_model,
    routed_experts_without_pipeline_parallel,
    batched_tokens_hold_a_sequence,
    batched_tokens_cover_the_sequences,
    expert_load_balancing_needs_expert_parallel,
)
WARNING_CHECKS = (batched_tokens_beyond_what_sequences_use,)
