"""Megatron LoRA (policy.megatron_cfg.peft, an examples-schema key): what the setup needs of it."""

# The catalogued checks these tests break, which the rule catalogue's meta-test finds by
# name (recorded from the checks that produced an issue while these tests ran):
# colocated_reshard_without_peft, runner_refusals.

from __future__ import annotations

import pytest

from recipekit.nemo_rl.rule_lines import where
from recipekit.nemo_rl.rules.conftest import COLOCATED_MEGATRON_GENERATION, Plan
from recipekit.stage import Stage

PEFT = "policy.megatron_cfg.peft"
# The catalogue ids of the Megatron setup's rules share this prefix.
SETUP = "nemo-rl.models.megatron.setup"


@pytest.mark.parametrize(
    ("section", "key", "needs"),
    [
        ("{enabled: true, alpha: 16}", f"{PEFT}.dim", "megatron-peft-needs-lora-dim"),
        ("{enabled: true, dim: 8}", f"{PEFT}.alpha", "megatron-peft-needs-lora-alpha"),
    ],
)
def test_enabled_peft_names_its_lora_shape(
    gym_examples: Stage, refused: Plan, section: str, key: str, needs: str
) -> None:
    errors = refused(gym_examples, f"{PEFT}={section}")
    found = [e for e in errors if e.startswith(key)]
    assert found, errors
    # The policy's own setup raises first (replayed); the reference model's would again.
    assert where(f"{SETUP}.setup-model-and-optimizer.{needs}") in found[0]


def test_a_complete_or_disabled_peft_plans(gym_examples: Stage, errors: Plan) -> None:
    assert not errors(gym_examples, f"{PEFT}={{enabled: true, dim: 8, alpha: 16}}")
    assert not errors(gym_examples, f"{PEFT}={{enabled: false}}")


def test_the_runner_schema_peft_is_the_declared_mapping_and_checked_the_same(
    refused: Plan, errors: Plan
) -> None:
    from recipes.super35.rl import rlvr

    # The Super 3.5 runner's schema leaves peft to upstream's declared PeftConfig: a mapping,
    # which the checks read as they read the examples' section (once a traceback).
    found = refused(rlvr, f"{PEFT}={{enabled: true, alpha: 16}}")
    assert [e for e in found if e.startswith(f"{PEFT}.dim")], found
    assert not errors(rlvr, f"{PEFT}={{enabled: false}}")


def test_super_v3_refuses_a_frozen_router_with_peft(v3_examples: Stage, refused: Plan) -> None:
    errors = refused(
        v3_examples, f"{PEFT}={{enabled: true}}", "policy.megatron_cfg.freeze_moe_router=true"
    )
    # Replayed: the refusal names the key the failing test reads first.
    found = [e for e in errors if e.startswith(f"{PEFT}.enabled")]
    assert (
        found
        and where(
            "nemo-rl.v3.models.megatron.setup.setup-model-and-optimizer.frozen-moe-router-not-supported-peft"
        )
        in found[0]
    ), errors


def test_super_v3_takes_a_trainable_router_with_peft(v3_examples: Stage, errors: Plan) -> None:
    assert not errors(
        v3_examples, f"{PEFT}={{enabled: true}}", "policy.megatron_cfg.freeze_moe_router=false"
    )


def test_colocated_megatron_reshard_refuses_peft(gym_examples: Stage, refused: Plan) -> None:
    errors = refused(
        gym_examples, *COLOCATED_MEGATRON_GENERATION, f"{PEFT}={{enabled: true, dim: 8, alpha: 16}}"
    )
    found = [e for e in errors if e.startswith(f"{PEFT}.enabled")]
    assert (
        found
        and where(
            "nemo-rl.models.megatron.setup.setup-model-and-optimizer.colocated-megatron-reshard-excludes-peft"
        )
        in found[0]
    ), errors
