"""A ranking metric one letter off a name the loop reports itself is warned of, with the name
(tools/generate_metric_names.py reads the loops' own names from the pinned sources); a name
only the running job can know (an environment's metric) is not."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from recipekit.nemo_rl import SUPER35_TYPES, SUPER_V3_TYPES
from recipekit.nemo_rl.rules.checkpoint_ranking import (
    misspelt_metric_check,
    reported_metrics,
)
from recipekit.nemo_rl.rules.conftest import Plan
from recipes.super3.dapo import dapo_h100
from recipes.super35.rl import rlvr
from tools import generate_metric_names as generator
from tools.generated_modules import stale_outputs

KEY = "checkpointing.metric_name"


def test_the_table_is_what_the_generator_writes() -> None:
    stale = stale_outputs(generator.generate, generator.LOOPS)
    assert not stale, f"stale: run python3 {generator.TOOL}"


def test_a_loops_own_names_are_what_it_writes_into_its_metrics() -> None:
    source = """
def validate(x):
    val_metrics = {"accuracy": 1, **x}
    val_metrics["pass_k"] = 2
def grpo_train():
    metrics = {"loss": 0}
    metrics.update({"reward": 1})
    metrics.update(x)
    other = {"not_a_metric": 0}
def helper():
    metrics = {"elsewhere": 0}
"""
    assert generator.loop_names(source) == {
        "val": ["accuracy", "pass_k"],
        "train": ["loss", "reward"],
    }


@pytest.mark.parametrize(("stage", "label"), [(rlvr, SUPER35_TYPES), (dapo_h100, SUPER_V3_TYPES)])
def test_a_misspelt_grpo_metric_is_warned_with_the_name(
    warned: Plan, stage: object, label: str
) -> None:
    assert "accuracy" in reported_metrics(label, "grpo")["val"]
    found = [
        w for w in warned(stage, f"{KEY}=val:acuracy", "grpo.val_period=10") if w.startswith(KEY)
    ]
    assert len(found) == 1, found
    assert "raises at the first checkpoint (nemo_rl/algorithms/grpo.py:" in found[0]
    assert "did you mean 'val:accuracy'?" in found[0]
    for name in ("val:accuracy", "val:total_reward/mean", "train:reward"):
        assert not [
            w for w in warned(stage, f"{KEY}={name}", "grpo.val_period=10") if w.startswith(KEY)
        ]


def test_every_loop_that_ranks_checks_its_own_names() -> None:
    check = misspelt_metric_check(
        "sft", "SFT", "nemo-rl.algorithms.sft.sft-train.ranking-metric-one-run-collects"
    )

    def issues(metric: str) -> list[str]:
        config = SimpleNamespace(checkpointing=SimpleNamespace(enabled=True, metric_name=metric))
        return [i.render() for i in check(config)]

    (found,) = issues("val:val_los")
    assert "SFT's loop reports a val metric 'val_loss'" in found and "sft.py:" in found
    assert not issues("val:val_loss") and not issues("train:loss")
