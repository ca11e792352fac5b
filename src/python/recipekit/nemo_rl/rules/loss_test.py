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

from recipekit.nemo_rl.rule_lines import where
from recipekit.nemo_rl.rules.conftest import Plan, RefusedAt
from recipekit.stage import Stage
from recipes.super3.dapo import dapo_h100
from recipes.super35.rl import rlvr

V35_FORCED = (
    "nemo-rl.algorithms.grpo.resolve-logprob-skip-flags.forced-ratio-error-threshold-still-computes"
)
V3_FORCED = "nemo-rl.v3.algorithms.grpo.grpo-train.forced-policy-ratio-error-threshold-still"


def test_forced_ratio_with_a_threshold_warns(warned: Plan) -> None:
    # rlvr's train_global_batch_size is a whole step, so forcing the ratio is otherwise valid.
    warnings = warned(rlvr, "loss_fn.force_on_policy_ratio=true")
    assert any(
        w.startswith("loss_fn.force_on_policy_ratio") and where(V35_FORCED) in w for w in warnings
    )


def test_super_v3_warns_in_either_training_loop(warned: Plan) -> None:
    # dapo-h100 states a sequence-level error threshold and runs the synchronous loop
    # (grpo.py, grpo_train @ super-v3); async GRPO warns in async_grpo_train.
    warnings = warned(dapo_h100, "loss_fn.force_on_policy_ratio=true")
    assert any(
        w.startswith("loss_fn.force_on_policy_ratio") and where(V3_FORCED) in w for w in warnings
    )


# ClippedPGLossFn's checks: rlvr runs super-v3.5-posttraining (token_level_loss false,
# truncated importance sampling 'tis' 0.5..2.0 with the correction on), dapo-h100 super-v3
# (token-level loss, a 'tis' type without a ratio, the correction off).


@pytest.mark.parametrize(
    ("stage", "overrides", "key", "reason"),
    [
        (
            dapo_h100,
            ("loss_fn.sequence_level_importance_ratios=true",),
            "loss_fn.sequence_level_importance_ratios",
            where("nemo-rl.loss.v3.sequence-level-ratios-exclude-token-level-loss"),
        ),
        (
            rlvr,
            ("loss_fn.sequence_level_importance_ratios=true", "loss_fn.token_level_loss=true"),
            "loss_fn.sequence_level_importance_ratios",
            where("nemo-rl.loss.sequence-level-ratios-exclude-token-level-loss"),
        ),
        (
            dapo_h100,
            ("loss_fn.truncated_importance_sampling_ratio=2.0",),
            # Replayed (ClippedPGLossFn.__init__): the key the failing test reads.
            "loss_fn.use_importance_sampling_correction",
            where("nemo-rl.loss.v3.truncated-is-needs-is-correction"),
        ),
        (
            rlvr,
            ("loss_fn.use_importance_sampling_correction=false", "grpo.async_grpo.enabled=false"),
            "loss_fn.use_importance_sampling_correction",
            where("nemo-rl.loss.truncated-is-needs-is-correction"),
        ),
        (
            dapo_h100,
            (
                "loss_fn.truncated_importance_sampling_ratio=0.0",
                "loss_fn.use_importance_sampling_correction=true",
            ),
            "loss_fn.truncated_importance_sampling_ratio",
            where("nemo-rl.loss.v3.truncated-is-ratio-positive"),
        ),
        (
            rlvr,
            (
                "loss_fn.truncated_importance_sampling_ratio=null",
                "loss_fn.truncated_importance_sampling_ratio_min=null",
            ),
            "loss_fn.truncated_importance_sampling_ratio",
            where("nemo-rl.loss.truncated-is-ratio-positive"),
        ),
        (
            dapo_h100,
            (
                "loss_fn.truncated_importance_sampling_ratio=2.0",
                "loss_fn.use_importance_sampling_correction=true",
                "loss_fn.truncated_importance_sampling_type=null",
            ),
            "loss_fn.truncated_importance_sampling_type",
            where("nemo-rl.loss.v3.truncated-is-type-known"),
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
            where("nemo-rl.loss.v3.seq-mask-tis-excludes-sequence-level-ratios"),
        ),
        (
            rlvr,
            (
                "loss_fn.truncated_importance_sampling_type=seq-mask-tis",
                "loss_fn.sequence_level_importance_ratios=true",
            ),
            "loss_fn.sequence_level_importance_ratios",
            where("nemo-rl.loss.seq-mask-tis-excludes-sequence-level-ratios"),
        ),
        (
            dapo_h100,
            ("loss_fn.ratio_clip_c=0.5",),
            "loss_fn.ratio_clip_c",
            where("nemo-rl.loss.v3.dual-clip-above-one"),
        ),
        (
            rlvr,
            ("loss_fn.ratio_clip_c=1.0",),
            "loss_fn.ratio_clip_c",
            where("nemo-rl.loss.dual-clip-above-one"),
        ),
        (
            rlvr,
            ("loss_fn.truncated_importance_sampling_ratio_min=3.0",),
            "loss_fn.truncated_importance_sampling_ratio_min",
            where("nemo-rl.loss.truncated-is-min-within-ratio"),
        ),
        (
            rlvr,
            (
                "loss_fn.truncated_importance_sampling_type=icepop",
                "loss_fn.truncated_importance_sampling_ratio_min=null",
            ),
            "loss_fn.truncated_importance_sampling_ratio_min",
            where("nemo-rl.loss.filtering-tis-needs-its-min"),
        ),
    ],
)
def test_clipped_pg_loss_refuses(
    refused_at: RefusedAt, stage: Stage, overrides: tuple[str, ...], key: str, reason: str
) -> None:
    refused_at(stage, overrides, key, reason)


# rlvr with CISPO otherwise valid: a token-level loss (its own is sequence-level).
CISPO = ("loss_fn.use_cispo=true", "loss_fn.token_level_loss=true")


# Each refused at the setting CISPO excludes (ClippedPGLossFn.__init__, replayed), and the
# token-level rule at use_cispo (a hand-written check).
@pytest.mark.parametrize(
    ("overrides", "key", "rule"),
    [
        (
            ("loss_fn.disable_ppo_ratio=true",),
            "loss_fn.disable_ppo_ratio",
            "nemo-rl.loss.cispo-excludes-disabled-ppo-ratio",
        ),
        (
            # A whole step in one global batch, so force_on_policy_ratio is otherwise valid.
            ("loss_fn.force_on_policy_ratio=true",),
            "loss_fn.force_on_policy_ratio",
            "nemo-rl.loss.cispo-excludes-forced-on-policy-ratio",
        ),
        (
            ("loss_fn.sequence_level_importance_ratios=true", "loss_fn.token_level_loss=false"),
            "loss_fn.sequence_level_importance_ratios",
            "nemo-rl.loss.cispo-excludes-sequence-level-ratios",
        ),
        (
            ("loss_fn.ratio_clip_c=3.0",),
            "loss_fn.ratio_clip_c",
            "nemo-rl.loss.cispo-excludes-dual-clip",
        ),
        (
            ("loss_fn.token_level_loss=false",),
            "loss_fn.use_cispo",
            "nemo-rl.loss.cispo-needs-token-level-loss",
        ),
    ],
)
def test_cispo_refuses(
    refused_at: RefusedAt, overrides: tuple[str, ...], key: str, rule: str
) -> None:
    refused_at(rlvr, (*CISPO, *overrides), key, where(rule))


def test_cispo_alone_plans(errors: Plan) -> None:
    assert not [e for e in errors(rlvr, *CISPO) if e.startswith("loss_fn.use_cispo")]


def test_super_v3_warns_that_truncation_settings_need_a_ratio(warned: Plan) -> None:
    # dapo-h100 states the 'tis' type without a ratio, as the Super V3 guide's config does.
    warnings = warned(dapo_h100)
    assert any(
        w.startswith("loss_fn.truncated_importance_sampling_type")
        and where("nemo-rl.loss.v3.truncation-settings-ignored-without-ratio") in w
        for w in warnings
    ), warnings
    assert not any(
        where("nemo-rl.loss.v3.truncation-settings-ignored-without-ratio") in w
        for w in warned(dapo_h100, "loss_fn.truncated_importance_sampling_type=null")
    )
