"""Megatron-Bridge's sections are its pinned ConfigContainer's classes, both ways.

From ``MegatronBridgeConfig`` down, each section names the classes Megatron-Bridge types that
key with (its ``ConfigContainer`` @ 067f987df, with the Megatron-Core 0.19.2 and 0.6.2-release
classes they extend), has every key they declare, and states no other without a reason. A key
the ConfigContainer holds that no section states (``ddp``, ``rerun_state_machine``,
``comm_overlap``, ...) is a mapping checked against its class.
"""

from __future__ import annotations

import pytest

from recipekit.megatron_bridge.framework import run_recipe_arguments
from recipekit.megatron_bridge.schema import BRIDGE_TYPES, MegatronBridgeConfig
from recipekit.nemo_rl.rules.conftest import plan_errors
from recipekit.plan import make_plan
from recipekit.upstream.completeness import problems, sections_below
from recipekit.upstream.declared import OWN, table
from recipes.super35.pretrain import pretrain

CONTAINER = "megatron.bridge.training.config:ConfigContainer"


def test_the_sections_are_the_config_container_both_ways() -> None:
    assert problems(sections_below(BRIDGE_TYPES, MegatronBridgeConfig, (CONTAINER,))) == []


def test_recipekits_own_keys_never_reach_the_runner_as_keys() -> None:
    own = [k for k, why in MegatronBridgeConfig.undeclared_keys.items() if why == OWN]
    rendered = make_plan(pretrain).framework_config
    arguments = run_recipe_arguments(rendered)
    assert own and not [a for a in arguments for k in own if a.startswith(f"{k}.")]


@pytest.mark.parametrize(
    "override",
    [
        "train.exit_duration_in_mins=230",
        "model.cuda_graph_impl=none",
        "optimizer.use_precision_aware_optimizer=true",
        "checkpoint.async_save=true",
        "logger.log_timers_to_tensorboard=true",
        "ddp.overlap_grad_reduce=true",
        "rerun_state_machine.check_for_nan_in_loss=true",
        "comm_overlap.tp_comm_overlap=false",
        "mixed_precision=bf16_mixed",
    ],
)
def test_a_key_megatron_bridge_declares_plans_and_reaches_the_runner(override: str) -> None:
    assert plan_errors(pretrain, override) == []
    key, value = override.split("=", 1)
    arguments = run_recipe_arguments(make_plan(pretrain, (override,)).framework_config)
    assert any(a.startswith(f"{key}=") for a in arguments), arguments


def test_a_typo_in_a_declared_section_or_mapping_gets_a_suggestion() -> None:
    [error] = plan_errors(pretrain, "train.exit_duration_in_minz=230")
    assert "did you mean 'exit_duration_in_mins'" in error
    [mapped] = plan_errors(pretrain, "ddp.overlap_grad_reduc=true")
    assert mapped.startswith("ddp.overlap_grad_reduc: unknown key: DistributedDataParallelConfig")
    assert "did you mean 'overlap_grad_reduce'" in mapped


def test_a_value_of_the_wrong_type_is_refused() -> None:
    [error] = plan_errors(pretrain, "model.num_layers=many")
    assert "expected an integer" in error
    [mapped] = plan_errors(pretrain, "ddp.bucket_size=big")
    assert mapped.startswith("ddp.bucket_size = 'big': expected an integer")


def test_the_table_holds_the_classes_megatron_core_defines() -> None:
    classes = table(BRIDGE_TYPES).classes
    ddp = classes["megatron.bridge.training.config:DistributedDataParallelConfig"]
    # Megatron-Bridge's DDP config extends Megatron-Core's, read from its wheel.
    assert "overlap_grad_reduce" in ddp.keys and not ddp.allows_extra
