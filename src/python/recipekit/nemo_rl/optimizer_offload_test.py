"""The optimizer offload share each NeMo-RL version accepts (setup.py, _validate_optimizer_config:
super-v3 asserts the whole state, super-v3.5-posttraining any share in (0, 1])."""

from __future__ import annotations

import pytest

from recipekit.errors import RecipeError
from recipekit.nemo_rl.rule_lines import where
from recipekit.plan import make_plan
from recipes.super3.dapo import dapo_gb200
from recipes.super35.rl import rlvr

OPT = "policy.megatron_cfg.optimizer"


def test_super35_offloads_part_of_the_optimizer() -> None:
    make_plan(rlvr, [f"{OPT}.optimizer_cpu_offload=true", f"{OPT}.optimizer_offload_fraction=0.5"])


def test_super3_offloads_all_of_it_or_nothing() -> None:
    with pytest.raises(RecipeError) as caught:
        make_plan(
            dapo_gb200,
            [f"{OPT}.optimizer_cpu_offload=true", f"{OPT}.optimizer_offload_fraction=0.5"],
        )
    [issue] = [i for i in caught.value.issues if i.path.endswith("optimizer_offload_fraction")]
    assert where("nemo-rl.megatron-setup.v3.whole-optimizer-offload") in issue.message
