"""GRPO setup's rules on the loss function and the log-probability passes it needs."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from recipekit.errors import Issue
from recipekit.markers import Marker, given
from recipekit.nemo_rl.checks import CheckContext
from recipekit.nemo_rl.keys import value_of
from recipekit.nemo_rl.rules.citation import cite, mirrors, on_super35, where
from recipekit.nemo_rl.rules.grpo_setup import async_grpo_enabled

LOSS = "loss_fn"


def fused_linear_logprobs(ctx: CheckContext) -> bool:
    return ctx.megatron is not None and value_of(ctx.megatron, "use_fused_linear_logprobs") is True


def _zeroes_prev_logprobs(ctx: CheckContext) -> bool:
    """opd.py, _skip_prev_logprobs (super-v3.5): force_on_policy_ratio without
    seq_logprob_error_threshold skips the student's log-probability pass and trains on zeros in its
    place."""
    forced = value_of(ctx.config.loss_fn, "force_on_policy_ratio") is True
    threshold = value_of(ctx.config.grpo, "seq_logprob_error_threshold")
    return forced and (threshold is None or isinstance(threshold, Marker))


def distillation_needs_prev_logprobs(ctx: CheckContext) -> Iterator[Issue]:
    """opd.py, assert_prev_logprobs_available (super-v3.5): on-policy distillation's advantage is
    teacher minus student log-probabilities, so the student's must be real."""
    est = value_of(ctx.config.grpo, "adv_estimator")
    if not on_super35(ctx) or isinstance(est, Marker) or est is None or est.name != "opd":
        return
    if _zeroes_prev_logprobs(ctx):
        yield Issue(
            "loss_fn.force_on_policy_ratio",
            "NeMo-RL's on-policy distillation refuses it unless grpo.seq_logprob_error_threshold "
            "is set: adv_estimator 'opd' needs the student's real log-probabilities "
            f"({where('nemo-rl.opd.needs-prev-logprobs')})",
            value=True,
        )


def forced_ratio_with_threshold_still_computes_logprobs(ctx: CheckContext) -> Iterator[Issue]:
    """grpo.py, grpo_train and async_grpo_train (super-v3), _resolve_logprob_skip_flags
    (super-v3.5): a sequence-level error threshold needs the previous log-probabilities, so
    forcing the ratio saves no pass."""
    forced = value_of(ctx.config.loss_fn, "force_on_policy_ratio") is True
    threshold = value_of(ctx.config.grpo, "seq_logprob_error_threshold")
    if not forced or threshold is None or isinstance(threshold, Marker):
        return
    # super-v3 warns in both training loops, each at its own line.
    v3_rule = (
        "nemo-rl.v3.algorithms.grpo.async-grpo-train.forced-ratio-error-threshold-still-computes"
        if async_grpo_enabled(ctx)
        else "nemo-rl.v3.algorithms.grpo.grpo-train.forced-policy-ratio-error-threshold-still"
    )
    yield Issue(
        "loss_fn.force_on_policy_ratio",
        "NeMo-RL warns that with grpo.seq_logprob_error_threshold set it computes the previous "
        "log-probabilities anyway, for the sequence-level error mask "
        "("
        + cite(
            ctx,
            v3=v3_rule,
            v35="nemo-rl.algorithms.grpo.resolve-logprob-skip-flags.forced-ratio-error-threshold-still-computes",
        )
        + ")",
        value=True,
    )


# --- ClippedPGLossFn's own checks (its constructor, and its call on each training batch) -------


def _loss(ctx: CheckContext, name: str, default: Any) -> Any:
    """loss_fn's value of ``name``; ``default`` where the stage leaves it out (or this schema
    version has no such key): what ClippedPGLossFn reads then (cfg.get's default at super-v3,
    the pydantic default of ClippedPGLossConfig at super-v3.5)."""
    return given(value_of(ctx.config.loss_fn, name, default), default)


def _truncated_is_on(ctx: CheckContext) -> bool:
    """Whether ClippedPGLossFn validates truncated importance sampling: super-v3 keys it on the
    ratio, super-v3.5 on the type (loss_functions.py, ClippedPGLossFn.__init__)."""
    if on_super35(ctx):
        return _loss(ctx, "truncated_importance_sampling_type", None) is not None
    return _loss(ctx, "truncated_importance_sampling_ratio", None) is not None


@mirrors(
    v3="nemo-rl.loss.v3.sequence-level-ratios-exclude-token-level-loss",
    v35="nemo-rl.loss.sequence-level-ratios-exclude-token-level-loss",
)
def sequence_level_ratios_exclude_token_level_loss(ctx: CheckContext) -> Iterator[Issue]:
    """loss_functions.py, ClippedPGLossFn.__init__ (both versions): GSPO's
    sequence-level importance ratios go with a sequence-level loss."""
    if _loss(ctx, "sequence_level_importance_ratios", False) is True and _loss(
        ctx, "token_level_loss", True
    ):
        yield Issue(
            f"{LOSS}.sequence_level_importance_ratios",
            "NeMo-RL's ClippedPGLossFn refuses it with loss_fn.token_level_loss true: "
            '"sequence-level importance sampling (e.g. GSPO) is mutually exclusive with '
            'token-level loss"',
            value=True,
            hint="set loss_fn.token_level_loss false (GSPO), or this key false",
        )


def _cispo_excludes(
    ctx: CheckContext, key: str, breaks: bool, reason: str, rule: str
) -> Iterator[Issue]:
    """One of CISPO's exclusions (loss/loss_functions.py, ClippedPGLossFn.__init__'s
    ``if self.use_cispo`` block @ super-v3.5): ``breaks`` says
    whether ``key``'s value is one CISPO cannot take."""
    if not on_super35(ctx) or _loss(ctx, "use_cispo", False) is not True or not breaks:
        return
    yield Issue(
        f"{LOSS}.use_cispo",
        f"NeMo-RL's ClippedPGLossFn refuses it with {LOSS}.{key} = "
        f"{_loss(ctx, key, None)!r}: {reason} ({cite(ctx, v35=rule)})",
        value=True,
        hint=f"set {LOSS}.use_cispo false, or change {LOSS}.{key}",
    )


def cispo_needs_token_level_loss(ctx: CheckContext) -> Iterator[Issue]:
    """loss/loss_functions.py, ClippedPGLossFn.__init__ (super-v3.5): CISPO's loss is
    token-level."""
    yield from _cispo_excludes(
        ctx,
        "token_level_loss",
        _loss(ctx, "token_level_loss", True) is not True,
        '"use_cispo requires token_level_loss=True"',
        "nemo-rl.loss.cispo-needs-token-level-loss",
    )


@mirrors(v3="nemo-rl.loss.v3.dual-clip-above-one", v35="nemo-rl.loss.dual-clip-above-one")
def dual_clip_bound_above_one(ctx: CheckContext) -> Iterator[Issue]:
    """loss_functions.py, ClippedPGLossFn.__call__ (both versions): the dual-clip
    bound is a lower bound on the ratio, asserted on every training step's first batch."""
    bound = _loss(ctx, "ratio_clip_c", None)
    if bound is not None and bound <= 1:
        yield Issue(
            f"{LOSS}.ratio_clip_c",
            "NeMo-RL's ClippedPGLossFn refuses it on the first training step: "
            '"ratio_clip_c must exceed 1 representing a lower bound of the ratios"',
            value=bound,
            hint="set it above 1 (3 is usual), or null to turn dual clipping off",
        )


@mirrors(v3="nemo-rl.loss.v3.truncation-settings-ignored-without-ratio")
def truncation_settings_ignored_without_ratio(ctx: CheckContext) -> Iterator[Issue]:
    """loss_functions.py, ClippedPGLossFn.__init__ (super-v3, a printed warning): without a
    ratio the truncation's type and lower bound do nothing."""
    if on_super35(ctx) or _truncated_is_on(ctx):
        return
    ignored = [
        name
        for name in (
            "truncated_importance_sampling_type",
            "truncated_importance_sampling_ratio_min",
        )
        if _loss(ctx, name, None) is not None
    ]
    if ignored:
        yield Issue(
            f"{LOSS}.{ignored[0]}",
            "NeMo-RL warns that truncated_importance_sampling_ratio is not set, so it ignores "
            f"{', '.join(ignored)}",
            value=_loss(ctx, ignored[0], None),
            hint=f"set {LOSS}.truncated_importance_sampling_ratio to truncate, or these null",
        )


# Both versions' ClippedPGLossFn checks, and super-v3.5's (CISPO and the bounds it adds).
CLIPPED_PG_ERROR_CHECKS = (
    sequence_level_ratios_exclude_token_level_loss,
    dual_clip_bound_above_one,
)
CLIPPED_PG_SUPER35_ERROR_CHECKS = (cispo_needs_token_level_loss,)
CLIPPED_PG_SUPER_V3_WARNING_CHECKS = (truncation_settings_ignored_without_ratio,)


ERROR_CHECKS = (
    distillation_needs_prev_logprobs,
)
WARNING_CHECKS = (forced_ratio_with_threshold_still_computes_logprobs,)
