"""The checkpoint rules on the Super 3.5 stages."""

# The catalogued checks these tests break, which the rule catalogue's meta-test finds by
# name (recorded from the checks that produced an issue while these tests ran):
# adapter_trains_over_pretrained_weights.

from __future__ import annotations

import pytest

from recipekit.errors import RecipeError
from recipekit.megatron_bridge.rules import cite
from recipekit.plan import make_plan
from recipes.super35.sft import sft

PEFT_NEEDS_WEIGHTS = (
    "checkpoint.pretrained_checkpoint = None: Megatron-Bridge asserts that PEFT trains adapters "
    "over a pretrained checkpoint: name the checkpoint to load "
    + cite(
        "megatron-bridge.config.config-container-validate.peft-adapter-without-checkpoint-pretrained-checkpoint"
    )
)


def test_an_adapter_on_a_full_sft_recipe_needs_pretrained_weights() -> None:
    # Upstream asserts on any peft section, not only on a PEFT recipe's.
    overrides = [
        'peft={"dim": 8, "alpha": 16, "target_modules": ["linear_qkv"]}',
        "checkpoint.pretrained_checkpoint=null",
        "checkpoint.finetune=false",
    ]
    with pytest.raises(RecipeError) as exc:
        make_plan(sft, overrides)
    assert [i.render() for i in exc.value.issues] == [PEFT_NEEDS_WEIGHTS]
