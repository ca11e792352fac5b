"""Plans carry a stage's lineage, and `--set run.<role>=...` pins an input artifact."""

from __future__ import annotations

import attrs
import pytest

from recipekit.errors import RecipeError
from recipekit.lineage.graph import StageLineage
from recipekit.lineage.refs import parse_ref
from recipekit.plan import make_plan
from recipekit.stage import Stage
from recipes.super3.dapo import dapo_gb200

WITH_LINEAGE = dapo_gb200.with_values(
    lineage=StageLineage(
        stage="dapo-gb200",
        inputs={"model": parse_ref("super3-base-model")},
        output="super3-dapo-model",
    )
)


def test_plan_json_carries_the_lineage() -> None:
    plan = make_plan(WITH_LINEAGE).as_json()
    assert plan["lineage"] == {
        "inputs": {"model": "super3-base-model:latest"},
        "output": "super3-dapo-model",
    }
    assert "lineage" not in make_plan(dapo_gb200).as_json()


def test_pinning_an_input_changes_the_plan_and_its_hash() -> None:
    pinned = make_plan(WITH_LINEAGE, ["run.model=super3-base-model:v3"])
    assert pinned.as_json()["lineage"]["inputs"] == {"model": "super3-base-model:v3"}
    assert pinned.hash != make_plan(WITH_LINEAGE).hash
    # A pin leaves the framework config alone.
    assert pinned.framework_config == make_plan(WITH_LINEAGE).framework_config


def test_a_pin_on_a_stage_without_lineage_or_role_is_refused() -> None:
    with pytest.raises(RecipeError, match="run.model: this stage declares no lineage"):
        make_plan(dapo_gb200, ["run.model=x-model:v1"])
    with pytest.raises(RecipeError, match="run.modle"):
        make_plan(WITH_LINEAGE, ["run.modle=super3-base-model:v3"])


def test_a_config_the_framework_does_not_read_is_refused() -> None:
    from recipes.super35.sft import sft_tiny

    mismatched = attrs.evolve(dapo_gb200, config=sft_tiny.config)
    with pytest.raises(RecipeError) as caught:
        make_plan(mismatched)
    text = caught.value.render()
    assert "config: is a MegatronBridgeConfig, but nemo-rl" in text
    assert "reads a GRPOMasterConfig" in text


def test_a_stage_names_its_framework() -> None:
    fields = {f.name: f for f in attrs.fields(Stage)}
    assert fields["framework"].default is attrs.NOTHING


def test_a_stage_writing_into_another_artifact_than_it_publishes_is_refused() -> None:
    from recipes.super35.hf_export import hf_export

    elsewhere = hf_export.with_values({"export.hf_path": "/artifacts/someone-elses-model/run"})
    with pytest.raises(RecipeError) as caught:
        make_plan(elsewhere)
    text = caught.value.render()
    assert "outputs.hf_model" in text
    assert "writes to the store as someone-elses-model" in text
    assert "publishes super35-rl-mopd-phase2-hf-model" in text
