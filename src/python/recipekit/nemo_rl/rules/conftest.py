"""Stages the rule tests plan: the shipped ones, the same stages read as NeMo-RL's examples
configure GRPO (refit transports, real quantisation, reward penalties and the TRT-LLM backend
are keys of those schemas only), and the stages ``recipekit import-yaml`` makes of NeMo-RL's
own example configs (``imported_stage``) for the other entry points."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import pytest

from recipekit.convert import from_dict
from recipekit.errors import RecipeError
from recipekit.importers.nemo_rl_yaml import ImportedRecipe, import_yaml
from recipekit.loading import load_object
from recipekit.nemo_rl.algorithms import NEMO_RL_GRPO_EXAMPLES, NEMO_RL_SUPER35_GYM_GRPO
from recipekit.nemo_rl.schema_grpo_examples import GRPOExamplesConfig, GRPOExamplesConfigMain
from recipekit.plan import make_plan
from recipekit.stage import Stage
from recipes.super3.dapo import dapo_h100
from recipes.super35.rl import rlvr

Plan = Callable[..., list[str]]
RefusedAt = Callable[[Stage, tuple[str, ...], str, str], list[str]]

# Overrides that generate with Megatron inside the training workers (rlvr trains at CP 2 and
# Megatron inference runs at CP 1, so NeMo-RL reshards into a second model).
COLOCATED_MEGATRON_GENERATION = (
    "policy.generation.backend=megatron",
    "policy.generation.colocated.enabled=true",
)


def imported_stage(yaml_file: Path, module_dir: Path, schema: str = "auto") -> Stage:
    """The stage ``recipekit import-yaml`` makes of ``yaml_file``, written as a module into
    ``module_dir`` and loaded as a user's recipe is."""
    module = module_dir / (yaml_file.stem.replace(".", "_").replace("-", "_") + ".py")
    module.write_text(import_yaml(yaml_file, schema=schema).source)
    recipe = load_object(f"{module}:recipe")
    return recipe.stage if isinstance(recipe, ImportedRecipe) else recipe


def _errors(stage: Stage, *overrides: str) -> list[str]:
    with pytest.raises(RecipeError) as exc:
        make_plan(stage, overrides)
    return [issue.render() for issue in exc.value.issues]


def plan_errors(stage: Stage, *overrides: str) -> list[str]:
    """The errors planning ``stage`` with ``overrides`` raises (rendered), none when it plans."""
    try:
        make_plan(stage, overrides)
    except RecipeError as exc:
        return [issue.render() for issue in exc.issues]
    return []


def plan_warnings(stage: Stage, *overrides: str) -> list[str]:
    """The warnings (rendered) of ``stage`` planned with ``overrides``, but the one that an
    imported stage's placeholder model card is (``model``): the rules' warnings."""
    return [
        issue.render()
        for issue in make_plan(stage, overrides).warnings
        if not (issue.path == "model" and stage.model.is_placeholder)
    ]


@pytest.fixture
def refused() -> Plan:
    """The errors planning the stage with these overrides raises (it must raise)."""
    return _errors


@pytest.fixture
def errors() -> Plan:
    """The errors planning the stage with these overrides raises, none when it plans."""
    return plan_errors


def _refused_at(stage: Stage, overrides: tuple[str, ...], key: str, reason: str) -> list[str]:
    errors = _errors(stage, *overrides)
    found = [e for e in errors if e.startswith(key) and reason in e]
    assert found, errors
    return found


@pytest.fixture
def refused_at() -> RefusedAt:
    """Planning the stage with these overrides raises an error at ``key`` whose message holds
    ``reason`` (the upstream citation); those errors."""
    return _refused_at


@pytest.fixture
def warned() -> Plan:
    """The warnings of a stage that plans with these overrides."""
    return plan_warnings


def as_examples(stage: Stage, config_type: type, framework: Any, **sections: Any) -> Stage:
    """The stage's rendered config read back as the examples' schema, on its entry point."""
    rendered = make_plan(stage, ()).framework_config
    return attrs.evolve(
        stage, config=from_dict({**rendered, **sections}, config_type), framework=framework
    )


@pytest.fixture(scope="session")
def gym_examples() -> Stage:
    """rlvr as super-v3.5's examples configure GRPO + NeMo Gym."""
    return as_examples(rlvr, GRPOExamplesConfigMain, NEMO_RL_SUPER35_GYM_GRPO)


@pytest.fixture(scope="session")
def v3_examples() -> Stage:
    """dapo-h100 as super-v3's examples configure GRPO (run_grpo.py), whose env section
    names its environments math and nemo_gym only."""
    env = make_plan(dapo_h100, ()).framework_config["env"]
    return as_examples(
        dapo_h100, GRPOExamplesConfig, NEMO_RL_GRPO_EXAMPLES, env={"math": env["dapo"]}
    )
