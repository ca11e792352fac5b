"""Cross-tokenizer distillation's loss rules, on the stage ``recipekit import-yaml`` makes of
NeMo-RL's own xtoken_off_policy_distillation.yaml: a value that breaks each is refused."""

# The catalogued checks these tests break, which the rule catalogue's meta-test finds by name:
# xtoken_loss_needs_gold_loss, sum_only_settings_need_sum_mode,
# averaged_logits_weights_do_not_cancel.

from __future__ import annotations

from pathlib import Path

import pytest

from recipekit.errors import RecipeError
from recipekit.importers.nemo_rl_yaml import ImportedRecipe, import_yaml
from recipekit.loading import load_object
from recipekit.nemo_rl.rule_lines import where
from recipekit.plan import make_plan
from recipekit.sections import evolve
from recipekit.stage import Stage

XTOKEN = "nemo-rl/main/examples/configs/xtoken_off_policy_distillation.yaml"


@pytest.fixture(scope="module")
def xtoken(reference_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Stage:
    module = tmp_path_factory.mktemp("xtoken") / "xtoken_off_policy_distillation.py"
    module.write_text(import_yaml(reference_dir / XTOKEN).source)
    recipe = load_object(f"{module}:recipe")
    return recipe.stage if isinstance(recipe, ImportedRecipe) else recipe


def _teacher(stage: Stage, **flags: object) -> Stage:
    """The stage with its one teacher's flags changed (a list element has no --set key)."""
    [teacher] = stage.config.teachers
    return stage.with_values({"teachers": (evolve(teacher, **flags),)})


def _errors(stage: Stage, *overrides: str) -> list[str]:
    with pytest.raises(RecipeError) as exc:
        make_plan(stage, overrides)
    return [issue.render() for issue in exc.value.issues]


def test_the_upstream_config_plans(xtoken: Stage) -> None:
    make_plan(xtoken)


def test_a_shared_xtoken_loss_needs_the_shared_gold_loss(xtoken: Stage) -> None:
    [error] = _errors(xtoken, "loss_fn.xtoken_loss=true", "loss_fn.gold_loss=false")
    assert (
        error.startswith("loss_fn.xtoken_loss = True: ")
        and where("nemo-rl.loss.xtoken-shared-xtoken-needs-gold") in error
    )
    make_plan(xtoken, ["loss_fn.xtoken_loss=true", "loss_fn.gold_loss=true"])


def test_in_sum_mode_a_teachers_own_flags_must_agree(xtoken: Stage) -> None:
    sum_mode = "loss_fn.kd_loss_mode=sum"
    [error] = _errors(_teacher(xtoken, xtoken_loss=True), sum_mode)
    assert (
        error.startswith("teachers[0].xtoken_loss = True: ")
        and where("nemo-rl.loss.xtoken-teacher-xtoken-needs-gold") in error
    )
    # Its own gold_loss settles it; in another mode the teacher's flags are not read.
    make_plan(_teacher(xtoken, xtoken_loss=True, gold_loss=True), [sum_mode])
    make_plan(_teacher(xtoken, xtoken_loss=True), ["loss_fn.kd_loss_mode=select_teacher"])


@pytest.mark.parametrize(
    ("setting", "rule"),
    [
        ("loss_fn.sum_weights_metric=entropy", "xtoken-sum-weights-metric-needs-sum-mode"),
        ("loss_fn.normalize_teacher_by_vocab=true", "xtoken-normalize-by-vocab-needs-sum-mode"),
    ],
)
def test_sum_only_settings_are_refused_in_another_mode(
    xtoken: Stage, setting: str, rule: str
) -> None:
    [error] = _errors(xtoken, "loss_fn.kd_loss_mode=select_teacher", setting)
    assert error.startswith(setting.split("=")[0]) and where(f"nemo-rl.loss.{rule}") in error
    make_plan(xtoken, ["loss_fn.kd_loss_mode=sum", setting])


def test_averaged_logits_weights_may_not_cancel(xtoken: Stage) -> None:
    [error] = _errors(_teacher(xtoken, weight=0.0), "loss_fn.kd_loss_mode=averaged_logits")
    assert (
        "sum to zero" in error
        and where("nemo-rl.loss.xtoken-averaged-logits-weights-nonzero") in error
    )
