"""SchedulerConfig's checks (vllm/config/scheduler.py): a step's token budget against the
sequences it schedules, and concurrent partial prefills."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from recipekit.errors import Issue
from recipekit.vllm.engine import engine_of
from recipekit.vllm.rules import mirrors

BUDGET = "max_num_batched_tokens"


@mirrors("vllm.scheduler.batched-tokens-hold-a-sequence")
def batched_tokens_hold_a_sequence(ctx: Any) -> Iterator[Issue]:
    """SchedulerConfig.verify_max_model_len: without chunked prefill a step's token budget holds
    the longest sequence. vLLM turns chunked prefill on for generation unless it is set off."""
    engine = engine_of(ctx)
    if engine is None or engine.get("enable_chunked_prefill") is not False:
        return
    budget, length = engine.get(BUDGET), engine.get("max_model_len")
    if isinstance(budget, int) and isinstance(length, int) and budget < length:
        yield Issue(
            engine.key(BUDGET),
            f"vLLM refuses it with chunked prefill off: smaller than max_model_len ({length})",
            value=budget,
        )


@mirrors("vllm.scheduler.batched-tokens-cover-sequences")
def batched_tokens_cover_the_sequences(ctx: Any) -> Iterator[Issue]:
    """SchedulerConfig.verify_max_model_len: a step schedules at least one token per
    sequence."""
    engine = engine_of(ctx)
    if engine is None:
        return
    budget, seqs = engine.get(BUDGET), engine.get("max_num_seqs")
    if isinstance(budget, int) and isinstance(seqs, int) and budget < seqs:
        yield Issue(
            engine.key(BUDGET), f"vLLM refuses it: smaller than max_num_seqs ({seqs})", value=budget
        )


@mirrors("vllm.scheduler.batched-tokens-beyond-sequences")
def batched_tokens_beyond_what_sequences_use(ctx: Any) -> Iterator[Issue]:
    """SchedulerConfig.verify_max_model_len: a warning; the budget exceeds max_num_seqs x
    max_model_len."""
    engine = engine_of(ctx)
    if engine is None:
        return
    budget, seqs, length = (engine.get(a) for a in (BUDGET, "max_num_seqs", "max_model_len"))
    if not all(isinstance(v, int) for v in (budget, seqs, length)):
        return
    if budget > seqs * length:
        yield Issue(
            engine.key(BUDGET),
            f"vLLM warns: more than max_num_seqs x max_model_len = {seqs * length}",
            value=budget,
        )


@mirrors("vllm.scheduler.partial-prefills-need-chunked-prefill")
def partial_prefills_need_chunked_prefill(ctx: Any) -> Iterator[Issue]:
    """SchedulerConfig.verify_max_model_len: concurrent partial prefills need chunked
    prefill."""
    engine = engine_of(ctx)
    partial = engine.integer("max_num_partial_prefills", 1) if engine is not None else None
    if engine is not None and partial is not None and partial > 1:
        if engine.get("enable_chunked_prefill") is False:
            yield Issue(
                engine.key("max_num_partial_prefills"),
                "vLLM refuses it above 1 with chunked prefill off",
                value=partial,
            )


@mirrors("vllm.scheduler.long-prefill-threshold-within-max-model-len")
def long_prefill_threshold_within_max_model_len(ctx: Any) -> Iterator[Issue]:
    """SchedulerConfig.verify_max_model_len: with concurrent partial prefills, the long-prompt
    threshold is at most max_model_len."""
    engine = engine_of(ctx)
    if engine is None or engine.get("enable_chunked_prefill") is False:
        return
    partial = engine.integer("max_num_partial_prefills", 1)
    threshold = engine.integer("long_prefill_token_threshold", 0)
    length = engine.get("max_model_len")
    if not isinstance(length, int) or not partial or not threshold:
        return
    if partial > 1 and threshold > length:
        yield Issue(
            engine.key("long_prefill_token_threshold"),
            f"vLLM refuses it: above max_model_len ({length})",
            value=threshold,
        )


@mirrors("vllm.scheduler.long-partial-prefills-within-partial-prefills")
def long_partial_prefills_within_partial_prefills(ctx: Any) -> Iterator[Issue]:
    """SchedulerConfig.verify_max_model_len: long-prompt partial prefills are a share of all
    concurrent partial prefills (both default to 1)."""
    engine = engine_of(ctx)
    if engine is None:
        return
    long = engine.integer("max_long_partial_prefills", 1)
    partial = engine.integer("max_num_partial_prefills", 1)
    if long is not None and partial is not None and long > partial:
        yield Issue(
            engine.key("max_long_partial_prefills"),
            f"vLLM refuses it: above max_num_partial_prefills ({partial})",
            value=long,
        )


@mirrors("vllm.scheduler.custom-scheduler-class")
def custom_scheduler_class_is_not_public(ctx: Any) -> Iterator[Issue]:
    """SchedulerConfig.get_scheduler_cls: a warning; a custom scheduler class uses an interface
    vLLM does not keep stable, and a subclass of the synchronous Scheduler loses async
    scheduling."""
    engine = engine_of(ctx)
    scheduler = engine.get("scheduler_cls") if engine is not None else None
    if engine is not None and scheduler is not None:
        yield Issue(
            engine.key("scheduler_cls"),
            "vLLM warns: its scheduler interface is not public; a subclass of Scheduler (not "
            "AsyncScheduler) runs without async scheduling",
            value=scheduler,
        )
