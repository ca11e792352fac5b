"""GRPO setup's rules on the loss function and the log-probability passes it needs."""

from __future__ import annotations

from collections.abc import Iterator

from recipekit.errors import Issue
from recipekit.markers import Marker
from recipekit.nemo_rl.checks import CheckContext
from recipekit.nemo_rl.rules.citation import cite, on_super35
from recipekit.nemo_rl.schema_super_v3 import SequencePacking

GRPO_PY = "nemo_rl/algorithms/grpo.py"


def fused_linear_logprobs(ctx: CheckContext) -> bool:
    return (
        ctx.megatron is not None
        and getattr(ctx.megatron, "use_fused_linear_logprobs", None) is True
    )


def fused_logprobs_without_sequence_packing(ctx: CheckContext) -> Iterator[Issue]:
    """grpo.py:672 (super-v3.5): the fused linear log-probabilities are not validated with
    packed sequences (labels would roll across sequence boundaries)."""
    packing = ctx.config.policy.sequence_packing
    if fused_linear_logprobs(ctx) and isinstance(packing, SequencePacking) and packing.enabled:
        yield Issue(
            "policy.megatron_cfg.use_fused_linear_logprobs",
            "NeMo-RL's GRPO setup refuses it with policy.sequence_packing.enabled: the fused path "
            f"does not support sequence packing ({cite(ctx, GRPO_PY, v35=672)})",
            value=True,
            hint="set it false, or disable sequence packing",
        )


def fused_logprobs_without_sampling_filter(ctx: CheckContext) -> Iterator[Issue]:
    """grpo.py:682 (super-v3.5): the fused path reads unfiltered logits, so training-time
    top-k / top-p filtering cannot apply."""
    gen = ctx.generation
    if gen is None or not fused_linear_logprobs(ctx):
        return
    top_k_filters = isinstance(gen.top_k, int) and gen.top_k > 0
    top_p_filters = gen.top_p is not None and gen.top_p != 1.0
    if top_k_filters or top_p_filters:
        key = "top_k" if top_k_filters else "top_p"
        yield Issue(
            "policy.megatron_cfg.use_fused_linear_logprobs",
            f"NeMo-RL's GRPO setup refuses it with policy.generation.{key} = "
            f"{getattr(gen, key)!r}: the fused path computes log-probabilities from unfiltered "
            f"logits ({cite(ctx, GRPO_PY, v35=682)})",
            value=True,
            hint="set it false, or policy.generation.top_k null and top_p 1.0",
        )


def force_on_policy_ratio_takes_one_batch_per_step(ctx: CheckContext) -> Iterator[Issue]:
    """grpo.py:366 (super-v3), :701 (super-v3.5): forcing the on-policy ratio needs the whole
    step in one global batch."""
    loss, grpo, policy = ctx.config.loss_fn, ctx.config.grpo, ctx.config.policy
    if getattr(loss, "force_on_policy_ratio", None) is not True:
        return
    samples = grpo.num_prompts_per_step * grpo.num_generations_per_prompt
    gbs = policy.train_global_batch_size
    if isinstance(gbs, int) and gbs != samples:
        yield Issue(
            "policy.train_global_batch_size",
            f"NeMo-RL's GRPO setup refuses it with loss_fn.force_on_policy_ratio: it must equal "
            f"num_prompts_per_step x num_generations_per_prompt = {samples} "
            f"({cite(ctx, GRPO_PY, v3=366, v35=701)})",
            value=gbs,
        )


def skipped_reference_logprobs_need_zero_kl(ctx: CheckContext) -> Iterator[Issue]:
    """grpo.py:1635 (super-v3, at the start of training), :712 (super-v3.5, setup): without
    the reference policy's log-probabilities there is no KL term to weigh."""
    skip = getattr(ctx.config.grpo, "skip_reference_policy_logprobs_calculation", None)
    penalty = ctx.config.loss_fn.reference_policy_kl_penalty
    if skip is True and penalty != 0:
        yield Issue(
            "loss_fn.reference_policy_kl_penalty",
            "NeMo-RL's GRPO refuses a KL penalty when "
            "grpo.skip_reference_policy_logprobs_calculation is true: the reference "
            f"log-probabilities are never computed ({cite(ctx, GRPO_PY, v3=1635, v35=712)})",
            value=penalty,
            hint="set it to 0, or compute the reference log-probabilities",
        )


def _zeroes_prev_logprobs(ctx: CheckContext) -> bool:
    """opd.py:115 (super-v3.5): force_on_policy_ratio without seq_logprob_error_threshold
    skips the student's log-probability pass and trains on zeros in its place."""
    forced = getattr(ctx.config.loss_fn, "force_on_policy_ratio", None) is True
    threshold = getattr(ctx.config.grpo, "seq_logprob_error_threshold", None)
    return forced and (threshold is None or isinstance(threshold, Marker))


def kl_in_reward_needs_prev_logprobs(ctx: CheckContext) -> Iterator[Issue]:
    """grpo.py:2480 (super-v3.5): a KL term in the reward against zeroed log-probabilities
    corrupts the advantage."""
    loss = ctx.config.loss_fn
    if not on_super35(ctx) or getattr(loss, "use_kl_in_reward", None) is not True:
        return
    if loss.reference_policy_kl_penalty != 0 and _zeroes_prev_logprobs(ctx):
        yield Issue(
            "loss_fn.force_on_policy_ratio",
            "NeMo-RL's GRPO setup refuses it with loss_fn.use_kl_in_reward and a KL penalty "
            "unless grpo.seq_logprob_error_threshold is set: the student's log-probabilities "
            f"would be zeros ({cite(ctx, GRPO_PY, v35=2480)})",
            value=True,
        )


def distillation_needs_prev_logprobs(ctx: CheckContext) -> Iterator[Issue]:
    """opd.py:133 (super-v3.5): on-policy distillation's advantage is teacher minus student
    log-probabilities, so the student's must be real."""
    est = getattr(ctx.config.grpo, "adv_estimator", None)
    if not on_super35(ctx) or isinstance(est, Marker) or est is None or est.name != "opd":
        return
    if _zeroes_prev_logprobs(ctx):
        yield Issue(
            "loss_fn.force_on_policy_ratio",
            "NeMo-RL's on-policy distillation refuses it unless grpo.seq_logprob_error_threshold "
            "is set: adv_estimator 'opd' needs the student's real log-probabilities "
            "(nemo_rl/algorithms/opd.py:133 @ super-v3.5-posttraining)",
            value=True,
        )


def forced_ratio_with_threshold_still_computes_logprobs(ctx: CheckContext) -> Iterator[Issue]:
    """grpo.py:3263 (super-v3, async GRPO only), :2503 (super-v3.5): a sequence-level error
    threshold needs the previous log-probabilities, so forcing the ratio saves no pass."""
    forced = getattr(ctx.config.loss_fn, "force_on_policy_ratio", None) is True
    threshold = getattr(ctx.config.grpo, "seq_logprob_error_threshold", None)
    if not forced or threshold is None or isinstance(threshold, Marker):
        return
    if not on_super35(ctx) and not _async_grpo_enabled(ctx):
        return  # super-v3's synchronous loop does not warn
    yield Issue(
        "loss_fn.force_on_policy_ratio",
        "NeMo-RL warns that with grpo.seq_logprob_error_threshold set it computes the previous "
        f"log-probabilities anyway, for the sequence-level error mask "
        f"({cite(ctx, GRPO_PY, v3=3263, v35=2503)})",
        value=True,
    )


def _async_grpo_enabled(ctx: CheckContext) -> bool:
    return getattr(getattr(ctx.config.grpo, "async_grpo", None), "enabled", None) is True


ERROR_CHECKS = (
    fused_logprobs_without_sequence_packing,
    fused_logprobs_without_sampling_filter,
    force_on_policy_ratio_takes_one_batch_per_step,
    skipped_reference_logprobs_need_zero_kl,
    kl_in_reward_needs_prev_logprobs,
    distillation_needs_prev_logprobs,
)
WARNING_CHECKS = (forced_ratio_with_threshold_still_computes_logprobs,)
