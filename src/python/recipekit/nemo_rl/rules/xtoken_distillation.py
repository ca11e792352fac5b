"""Cross-tokenizer distillation's loss rules (``examples/run_xtoken_off_policy_distillation.py``,
super-v3.5-posttraining): CrossTokenizerDistillationLossFn refuses these in its constructor at
setup, or, per teacher, at the first training step.

Each check reads the typed config (the entry point is a NemoRLRun, which has no GRPO
CheckContext). An unset loss key is false, as in the config the recipe starts from.
"""

from __future__ import annotations

from collections.abc import Iterator

from recipekit.errors import Issue
from recipekit.markers import given
from recipekit.nemo_rl.rules.citation import cite_super35, mirrors_super35
from recipekit.nemo_rl.schema_distillation import XTokenDistillationMasterConfig

# Teachers' static weight where a teacher states none (xtoken_off_policy_distillation.py,
# TeacherConfig).
DEFAULT_WEIGHT = 1.0


def _flag(value: object) -> bool:
    return value is True


def _mode(config: XTokenDistillationMasterConfig) -> str | None:
    return given(config.loss_fn.kd_loss_mode, None)


def xtoken_loss_needs_gold_loss(config: XTokenDistillationMasterConfig) -> Iterator[Issue]:
    """loss_functions.py, CrossTokenizerDistillationLossFn.__init__: the shared xtoken_loss modifies
    the gold path, so it needs gold_loss. In kd_loss_mode sum a teacher's own flags (its null
    falls back to the shared one) must agree the same way; other modes use only the shared flags."""
    loss = config.loss_fn
    gold, xtoken = _flag(loss.gold_loss), _flag(loss.xtoken_loss)
    if xtoken and not gold:
        yield Issue(
            "loss_fn.xtoken_loss",
            "cross-tokenizer distillation refuses it without loss_fn.gold_loss: xtoken_loss "
            "modifies the gold-loss path and is undefined in the P-KL path ("
            + cite_super35("nemo-rl.loss.xtoken-shared-xtoken-needs-gold")
            + ")",
            value=True,
            hint="set loss_fn.gold_loss: true, or xtoken_loss false",
        )
    if _mode(config) != "sum":
        return
    for index, teacher in enumerate(config.teachers):
        own_gold, own_xtoken = given(teacher.gold_loss, None), given(teacher.xtoken_loss, None)
        teacher_gold = gold if own_gold is None else own_gold
        teacher_xtoken = xtoken if own_xtoken is None else own_xtoken
        if teacher_xtoken and not teacher_gold and not (xtoken and not gold):
            key = "xtoken_loss" if own_xtoken is not None else "gold_loss"
            yield Issue(
                f"teachers[{index}].{key}",
                f"teacher {index} would have xtoken_loss without gold_loss (its own flags, or "
                f"loss_fn's where it sets none): the loss raises at its first step "
                f"({cite_super35('nemo-rl.loss.xtoken-teacher-xtoken-needs-gold')})",
                value=own_xtoken if key == "xtoken_loss" else own_gold,
                hint=f"set teachers[{index}].gold_loss: true, or its xtoken_loss false",
            )


def sum_only_settings_need_sum_mode(config: XTokenDistillationMasterConfig) -> Iterator[Issue]:
    """loss_functions.py, CrossTokenizerDistillationLossFn.__init__: dynamic teacher weights
    (sum_weights_metric) and normalize_teacher_by_vocab apply only in kd_loss_mode sum; the loss
    refuses them in any other mode rather than ignore them."""
    loss, mode = config.loss_fn, _mode(config)
    if mode is None or mode == "sum":
        return
    metric = loss.sum_weights_metric
    if given(metric, None) is not None:
        yield Issue(
            "loss_fn.sum_weights_metric",
            f"applies only in kd_loss_mode 'sum'; cross-tokenizer distillation refuses it "
            f"with {mode!r} ("
            + cite_super35("nemo-rl.loss.xtoken-sum-weights-metric-needs-sum-mode")
            + ")",
            value=metric,
            hint="set it null, or loss_fn.kd_loss_mode: sum",
        )
    if loss.normalize_teacher_by_vocab is True:
        yield Issue(
            "loss_fn.normalize_teacher_by_vocab",
            f"applies only in kd_loss_mode 'sum'; cross-tokenizer distillation refuses it "
            f"with {mode!r} ("
            + cite_super35("nemo-rl.loss.xtoken-normalize-by-vocab-needs-sum-mode")
            + ")",
            value=True,
            hint="set it false, or loss_fn.kd_loss_mode: sum",
        )


@mirrors_super35("nemo-rl.loss.xtoken-averaged-logits-weights-nonzero")
def averaged_logits_weights_do_not_cancel(
    config: XTokenDistillationMasterConfig,
) -> Iterator[Issue]:
    """loss_functions.py, CrossTokenizerDistillationLossFn.__init__: averaged_logits mixes the
    teachers' logits by weight / sum of weights, so the weights may not sum to zero."""
    if _mode(config) != "averaged_logits":
        return
    weights = [given(t.weight, DEFAULT_WEIGHT) for t in config.teachers]
    if weights and sum(weights) == 0:
        yield Issue(
            "teachers",
            f"the teachers' weights {weights} sum to zero, and kd_loss_mode averaged_logits "
            "divides by that sum",
            value=weights,
            hint="give at least one teacher a weight, or another kd_loss_mode",
        )


XTOKEN_ERROR_CHECKS = (
    xtoken_loss_needs_gold_loss,
    sum_only_settings_need_sum_mode,
    averaged_logits_weights_do_not_cancel,
)
