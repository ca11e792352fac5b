"""A stage planned on its own checks its inputs against its pipeline, as ``pipeline plan`` does."""

from __future__ import annotations

import pytest

from recipekit.errors import RecipeError
from recipekit.lineage.steps import UNCHECKED
from recipekit.plan import make_plan, recipe_policies
from recipekit.producers import producer_stage
from recipes.super35.lineage import SUPER35
from recipes.super35.rl import rlvr
from recipes.super35.teachers import teacher_reasoning


def test_a_step_the_producer_never_saves_is_refused_by_the_single_stage_plan() -> None:
    with pytest.raises(RecipeError) as caught:
        make_plan(teacher_reasoning, ["run.model=super35-rl-rlvr-model:step-125"])
    text = caught.value.render()
    assert "teacher-reasoning: run.model" in text
    assert "rlvr never saves step 125" in text
    assert "super35-rl-rlvr-model:step-120" in text  # the nearest saved step, as the fix


def test_a_misspelt_artifact_gets_a_did_you_mean_in_the_single_stage_plan() -> None:
    with pytest.raises(RecipeError) as caught:
        make_plan(teacher_reasoning, ["run.model=super35-rl-rlvr-modle:latest"])
    text = caught.value.render()
    assert "no stage of super35 publishes super35-rl-rlvr-modle" in text
    assert "did you mean 'super35-rl-rlvr-model'" in text


def test_the_recipes_own_pins_plan_and_a_saved_step_may_be_chosen() -> None:
    make_plan(teacher_reasoning)
    make_plan(teacher_reasoning, ["run.model=super35-rl-rlvr-model:step-1000"])
    # A saved step the framework deletes, and the pipeline does not keep, is refused too.
    with pytest.raises(RecipeError, match="rlvr deletes step 130"):
        make_plan(teacher_reasoning, ["run.model=super35-rl-rlvr-model:step-130"])


def test_the_producer_is_found_beside_the_pipeline_and_its_policy_read_from_its_plan() -> None:
    assert producer_stage(SUPER35, "rlvr") == rlvr
    assert producer_stage(SUPER35, "no-such-stage") is None
    policy = recipe_policies(SUPER35)("rlvr")
    assert policy is not UNCHECKED and policy is not None
    assert policy.saves(120) and not policy.saves(125)
    # hf-export saves no checkpoints by step; a stage nobody defines is not checked.
    assert recipe_policies(SUPER35)("no-such-stage") is UNCHECKED


def test_pipeline_plan_refuses_a_misspelt_artifact_and_accepts_one_the_store_holds() -> None:
    from pathlib import Path

    import recipes
    from recipekit.pipeline.chain import load_chain, plan_chain

    chain = load_chain(Path("recipes/super35"), Path(recipes.__file__).resolve().parent.parent)
    names = chain.between(None, "teacher-vision")
    typo = "teacher-vision:run.model=super35-rl-rlvr-modle:latest"
    with pytest.raises(RecipeError, match="did you mean 'super35-rl-rlvr-model'"):
        plan_chain(chain, names, [typo])
    with pytest.raises(RecipeError, match="the artifact store does not hold it"):
        plan_chain(chain, names, [typo], stored=["other"])
    plan_chain(chain, names, [typo], stored=["super35-rl-rlvr-modle"])
