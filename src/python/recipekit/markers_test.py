"""A stage's values survive a copy and a pickle as they are: a run input keeps its role."""

from __future__ import annotations

import copy
import pickle

import pytest

from recipekit.markers import RunInput


@pytest.mark.parametrize("made", [RunInput("model"), RunInput("data", "train.jsonl")])
def test_a_run_input_copies_and_pickles_as_itself(made: RunInput) -> None:
    for again in (copy.copy(made), copy.deepcopy(made), pickle.loads(pickle.dumps(made))):
        assert (again, again.role, again.file) == (made, made.role, made.file)
        assert type(again) is RunInput


def test_a_stage_config_holding_run_inputs_copies_equal() -> None:
    from recipes.super35.rl import rlvr

    assert copy.deepcopy(rlvr.config) == rlvr.config
    assert pickle.loads(pickle.dumps(rlvr.config)) == rlvr.config
