"""The loss rules' warning: a forced on-policy ratio with an error threshold."""

# The catalogued checks these tests break (by the upstream line each cites), which the
# rule catalogue's meta-test finds by name:
# cispo_excludes_disabled_ppo_ratio, cispo_excludes_dual_clip,
# cispo_excludes_forced_on_policy_ratio, cispo_excludes_sequence_level_ratios,
# cispo_needs_token_level_loss, dual_clip_bound_above_one, filtering_tis_needs_its_min,
# seq_mask_tis_excludes_sequence_level_ratios, sequence_level_ratios_exclude_token_level_loss,
# truncated_is_min_within_ratio, truncated_is_names_its_type, truncated_is_needs_is_correction,
# truncated_is_ratio_is_positive, truncation_settings_ignored_without_ratio.

from __future__ import annotations

import pytest

from recipekit.nemo_rl.rules.conftest import Plan, RefusedAt
from recipekit.stage import Stage
from recipes.super3.dapo import dapo_h100
from recipes.super35.rl import rlvr


def test_forced_ratio_with_a_threshold_warns(warned: Plan) -> None:
    # rlvr's train_global_batch_size is a whole step, so forcing the ratio is otherwise valid.
    warnings = warned(rlvr, "loss_fn.force_on_policy_ratio=true")
    assert any(w.startswith("loss_fn.force_on_policy_ratio") and ":2503" in w for w in warnings)


def test_super_v3_warns_in_either_training_loop(warned: Plan) -> None:
    # dapo-h100 states a sequence-level error threshold and runs the synchronous loop
    # (grpo.py:2044 @ super-v3); async GRPO warns at :3263.
    warnings = warned(dapo_h100, "loss_fn.force_on_policy_ratio=true")
    assert any(w.startswith("loss_fn.force_on_policy_ratio") and ":2044" in w for w in warnings)


# ClippedPGLossFn's checks: rlvr runs super-v3.5-posttraining (token_level_loss false,
# truncated importance sampling 'tis' 0.5..2.0 with the correction on), dapo-h100 super-v3
# (token-level loss, a 'tis' type without a ratio, the correction off).
V3_LOSS = "loss_functions.py:{} @ super-v3"
V35_LOSS = "loss/loss_functions.py:{} @ super-v3.5"


@pytest.mark.parametrize(
    ("stage", "overrides", "key", "reason"),
    [
        (
            dapo_h100,
            ("loss_fn.sequence_level_importance_ratios=true",),
            "loss_fn.sequence_level_importance_ratios",
            V3_LOSS.format(161),
        ),
        (
            rlvr,
            ("loss_fn.sequence_level_importance_ratios=true", "loss_fn.token_level_loss=true"),
            "loss_fn.sequence_level_importance_ratios",
            V35_LOSS.format(266),
        ),
        (
            dapo_h100,
            ("loss_fn.truncated_importance_sampling_ratio=2.0",),
            "loss_fn.truncated_importance_sampling_ratio",
            V3_LOSS.format(165),
        ),
        (
            rlvr,
            ("loss_fn.use_importance_sampling_correction=false", "grpo.async_grpo.enabled=false"),
            "loss_fn.truncated_importance_sampling_type",
            V35_LOSS.format(293),
        ),
        (
            dapo_h100,
            (
                "loss_fn.truncated_importance_sampling_ratio=0.0",
                "loss_fn.use_importance_sampling_correction=true",
            ),
            "loss_fn.truncated_importance_sampling_ratio",
            V3_LOSS.format(168),
        ),
        (
            rlvr,
            (
                "loss_fn.truncated_importance_sampling_ratio=null",
                "loss_fn.truncated_importance_sampling_ratio_min=null",
            ),
            "loss_fn.truncated_importance_sampling_ratio",
            V35_LOSS.format(304),
        ),
        (
            dapo_h100,
            (
                "loss_fn.truncated_importance_sampling_ratio=2.0",
                "loss_fn.use_importance_sampling_correction=true",
                "loss_fn.truncated_importance_sampling_type=null",
            ),
            "loss_fn.truncated_importance_sampling_type",
            V3_LOSS.format(171),
        ),
        (
            dapo_h100,
            (
                "loss_fn.truncated_importance_sampling_ratio=2.0",
                "loss_fn.truncated_importance_sampling_ratio_min=0.5",
                "loss_fn.use_importance_sampling_correction=true",
                "loss_fn.truncated_importance_sampling_type=seq-mask-tis",
                "loss_fn.sequence_level_importance_ratios=true",
                "loss_fn.token_level_loss=false",
            ),
            "loss_fn.sequence_level_importance_ratios",
            V3_LOSS.format(180),
        ),
        (
            rlvr,
            (
                "loss_fn.truncated_importance_sampling_type=seq-mask-tis",
                "loss_fn.sequence_level_importance_ratios=true",
            ),
            "loss_fn.sequence_level_importance_ratios",
            V35_LOSS.format(321),
        ),
        (dapo_h100, ("loss_fn.ratio_clip_c=0.5",), "loss_fn.ratio_clip_c", V3_LOSS.format(394)),
        (rlvr, ("loss_fn.ratio_clip_c=1.0",), "loss_fn.ratio_clip_c", V35_LOSS.format(555)),
        (
            rlvr,
            ("loss_fn.truncated_importance_sampling_ratio_min=3.0",),
            "loss_fn.truncated_importance_sampling_ratio_min",
            V35_LOSS.format(309),
        ),
        (
            rlvr,
            (
                "loss_fn.truncated_importance_sampling_type=icepop",
                "loss_fn.truncated_importance_sampling_ratio_min=null",
            ),
            "loss_fn.truncated_importance_sampling_ratio_min",
            V35_LOSS.format(317),
        ),
    ],
)
def test_clipped_pg_loss_refuses(
    refused_at: RefusedAt, stage: Stage, overrides: tuple[str, ...], key: str, reason: str
) -> None:
    refused_at(stage, overrides, key, reason)


# rlvr with CISPO otherwise valid: a token-level loss (its own is sequence-level).
CISPO = ("loss_fn.use_cispo=true", "loss_fn.token_level_loss=true")


@pytest.mark.parametrize(
    ("overrides", "line"),
    [
        (("loss_fn.disable_ppo_ratio=true",), 272),
        (
            # A whole step in one global batch, so force_on_policy_ratio is otherwise valid.
            ("loss_fn.force_on_policy_ratio=true",),
            276,
        ),
        (
            ("loss_fn.sequence_level_importance_ratios=true", "loss_fn.token_level_loss=false"),
            280,
        ),
        (("loss_fn.ratio_clip_c=3.0",), 284),
        (("loss_fn.token_level_loss=false",), 289),
    ],
)
def test_cispo_refuses(refused_at: RefusedAt, overrides: tuple[str, ...], line: int) -> None:
    refused_at(rlvr, (*CISPO, *overrides), "loss_fn.use_cispo", V35_LOSS.format(line))


def test_cispo_alone_plans(errors: Plan) -> None:
    assert not [e for e in errors(rlvr, *CISPO) if e.startswith("loss_fn.use_cispo")]


def test_super_v3_warns_that_truncation_settings_need_a_ratio(warned: Plan) -> None:
    # dapo-h100 states the 'tis' type without a ratio, as the Super V3 guide's config does.
    warnings = warned(dapo_h100)
    assert any(
        w.startswith("loss_fn.truncated_importance_sampling_type") and V3_LOSS.format(192) in w
        for w in warnings
    ), warnings
    assert not any(
        V3_LOSS.format(192) in w
        for w in warned(dapo_h100, "loss_fn.truncated_importance_sampling_type=null")
    )
