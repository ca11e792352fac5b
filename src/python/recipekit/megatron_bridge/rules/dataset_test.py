"""The Energon dataset's rules on the Super 3.5 stages: a breaking value is refused, by key."""

# The catalogued checks these tests break, which the rule catalogue's meta-test finds by
# name (recorded from the checks that produced an issue while these tests ran):
# energon_dataset_has_a_path, energon_has_no_test_split.

from __future__ import annotations

import pytest

from recipekit.errors import RecipeError
from recipekit.megatron_bridge.rules import cite
from recipekit.plan import make_plan
from recipes.super35.sft import sft, sft_long_context

# The catalogue ids of EnergonDatasetConfig.validate's rules share this prefix.
ENERGON = "megatron-bridge.energon.energon-dataset-config-validate."


def _errors(stage: object, *overrides: str) -> list[str]:
    with pytest.raises(RecipeError) as exc:
        make_plan(stage, overrides)  # type: ignore[arg-type]
    return [issue.render() for issue in exc.value.issues]


def test_an_energon_dataset_needs_a_path() -> None:
    assert _errors(sft, 'dataset.path=" "') == [
        "dataset.path = ' ': Megatron-Bridge's Energon dataset refuses to start without a "
        f"dataset path {cite(ENERGON + 'energon-dataset-path-unset-blank')} (set it to the stage's "
        "data input)"
    ]


def test_an_energon_dataset_has_no_test_split() -> None:
    assert _errors(sft, "dataset.do_test=true") == [
        "dataset.do_test = True: Megatron-Bridge's Energon dataset has no distinct test split "
        f"{cite(ENERGON + 'energon-dataset-asked-test-split-do')} (leave it unset (false))"
    ]


def test_the_long_context_dataset_is_not_energon() -> None:
    # Its CoderForge dataset has no path key: the Energon rules do not apply to it.
    make_plan(sft_long_context, ["dataset.do_test=true"])
