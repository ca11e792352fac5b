"""Every row of the recipe's CLI table is a stage target that plans, with the recipe's lineage."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from recipekit.plan import make_plan
from recipekit.stage import Stage
from recipes.super35 import evaluation, hf_export, mopd, pretrain, rl, sft, teachers
from recipes.super35.lineage import SUPER35
from recipes.super35.lineage_test import SEED_TABLE

MODULES = (pretrain, sft, rl, teachers, mopd, hf_export, evaluation)
STAGES: list[Stage] = [
    value for module in MODULES for value in vars(module).values() if isinstance(value, Stage)
]
# Shared bases are stages too; the targets are the ones the pipeline names (the recipe's CLI
# stages and the HF export between MOPD and eval).
TARGETS = {s.name: s for s in STAGES if s.name in {step.stage for step in SUPER35.steps()}}


def test_every_stage_of_the_pipeline_has_a_recipe() -> None:
    assert sorted(TARGETS) == sorted(step.stage for step in SUPER35.steps())
    assert len(TARGETS) == 22 + 1


def test_every_stage_has_a_build_target_naming_it() -> None:
    build = (Path(__file__).parent / "BUILD").read_text()
    declared = dict(
        re.findall(r'recipe_stage\(\s*name="([^"]+)",\s*stage="recipes\.super35\.([^"]+)"', build)
    )
    assert sorted(declared) == sorted(TARGETS)
    for target, where in declared.items():
        module, attribute = where.split(":")
        assert getattr(_module(module), attribute).name == target


def _module(name: str) -> object:
    return {m.__name__.rsplit(".", 1)[1]: m for m in MODULES}[name]


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_each_stage_plans_and_carries_its_lineage(name: str) -> None:
    plan = make_plan(TARGETS[name]).as_json()
    assert plan["lineage"] == SUPER35.stage(name).as_json()
    if name in SEED_TABLE:
        model, data, output = SEED_TABLE[name]
        assert plan["lineage"]["inputs"]["model"] == model
        assert plan["lineage"]["inputs"].get("data") == data
        assert plan["lineage"]["output"] == output
