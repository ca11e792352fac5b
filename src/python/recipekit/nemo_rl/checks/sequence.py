"""The sequence budget: prompts and responses within it, and its split over TP and CP."""

from __future__ import annotations

from collections.abc import Iterator

from recipekit.errors import Issue
from recipekit.markers import Marker
from recipekit.nemo_rl.checks.context import (
    MEGATRON,
    SEQ,
    VLLM,
    CheckContext,
)
from recipekit.nemo_rl.schema_super_v3 import (
    DynamicBatching,
    SequencePacking,
)


def response_budget_fits(ctx: CheckContext) -> Iterator[Issue]:
    policy = ctx.config.policy
    total = policy.max_total_sequence_length
    gen = ctx.generation
    if gen is not None and isinstance(gen.max_new_tokens, int) and gen.max_new_tokens > total:
        yield Issue(
            "policy.generation.max_new_tokens",
            f"a response cannot be longer than {SEQ} ({total})",
            value=gen.max_new_tokens,
        )
    vllm = ctx.vllm
    if vllm is not None and isinstance(vllm.max_model_len, int) and vllm.max_model_len > total:
        yield Issue(
            f"{VLLM}.max_model_len",
            f"vLLM would generate sequences longer than training accepts ({SEQ} = {total})",
            value=vllm.max_model_len,
        )
    max_input = ctx.config.data.max_input_seq_length
    if isinstance(max_input, int) and max_input > total:
        yield Issue(
            "data.max_input_seq_length",
            f"a prompt cannot be longer than {SEQ} ({total})",
            value=max_input,
        )
    shaping = ctx.config.grpo.reward_shaping
    if not isinstance(shaping, Marker) and shaping.enabled:
        budget, buffer = shaping.max_response_length, shaping.overlong_buffer_length
        if isinstance(budget, int) and budget > total:
            yield Issue(
                "grpo.reward_shaping.max_response_length",
                f"larger than the whole sequence budget ({SEQ} = {total})",
                value=budget,
            )
        if isinstance(budget, int) and isinstance(buffer, int) and buffer >= budget:
            yield Issue(
                "grpo.reward_shaping.overlong_buffer_length",
                f"the overlong buffer must sit inside the response budget "
                f"(max_response_length = {budget})",
                value=buffer,
            )
        if not isinstance(budget, int) or not isinstance(buffer, int):
            yield Issue(
                "grpo.reward_shaping",
                "reward shaping is enabled but max_response_length or overlong_buffer_length "
                "is not set",
            )


def token_budgets_below_the_sequence_length(ctx: CheckContext) -> Iterator[Issue]:
    """A micro-batch token budget below policy.max_total_sequence_length: a sequence longer
    than the budget cannot be packed (the packing algorithms raise "Sequence length ...
    exceeds bin capacity", nemo_rl/data/packing/algorithms.py), but only when one comes, as
    NeMo-RL's own Super examples accept (49152 against 65536): a warning."""
    policy = ctx.config.policy
    total = policy.max_total_sequence_length
    packing, dynamic = policy.sequence_packing, policy.dynamic_batching
    for name, section in (("sequence_packing", packing), ("dynamic_batching", dynamic)):
        if not isinstance(section, (SequencePacking, DynamicBatching)) or not section.enabled:
            continue
        for key in ("train_mb_tokens", "logprob_mb_tokens"):
            budget = getattr(section, key)
            if isinstance(budget, int) and budget < total:
                yield Issue(
                    f"policy.{name}.{key}",
                    f"holds fewer tokens than one full sequence ({SEQ} = {total}): a sequence "
                    f"longer than {budget} tokens fails when it is packed",
                    value=budget,
                    hint=f"at least {total}, if sequences that long can come",
                )


def sequence_divisible_for_parallelism(ctx: CheckContext) -> Iterator[Issue]:
    m, policy = ctx.megatron, ctx.config.policy
    if m is None:
        return
    tp, cp = m.tensor_model_parallel_size, m.context_parallel_size
    divisor = policy.make_sequence_length_divisible_by
    packing = policy.sequence_packing
    packed = isinstance(packing, SequencePacking) and packing.enabled
    # Packed, NeMo-RL pads each sequence to a multiple of TP itself under sequence parallelism
    # (models/megatron/data.py, _get_pack_sequence_parameters_for_megatron): only an unpacked
    # batch keeps the length make_sequence_length_divisible_by gives it.
    if m.sequence_parallel and tp > 1 and isinstance(divisor, int) and divisor % tp and not packed:
        yield Issue(
            "policy.make_sequence_length_divisible_by",
            f"with sequence parallelism, sequences are split over TP={tp} ranks",
            value=divisor,
            hint=f"use a multiple of {tp}",
        )
    if cp > 1 and not packed:
        yield Issue(
            f"{MEGATRON}.context_parallel_size",
            "Megatron context parallelism in NeMo-RL needs policy.sequence_packing.enabled",
            value=cp,
        )
    if cp > 1:
        # Packing pads every sequence to a multiple of 2 x CP x TP (CP load-balances two
        # chunks per rank); a full-length sequence must not grow past the budget.
        unit = 2 * cp * tp
        total = policy.max_total_sequence_length
        if total % unit:
            yield Issue(
                SEQ,
                f"with CP={cp} and TP={tp} packed sequences are padded to multiples of "
                f"2 x {cp} x {tp} = {unit}; {total} is not one",
                value=total,
                hint=f"use {(total // unit + 1) * unit}",
            )
