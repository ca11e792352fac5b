"""GRPO setup's rules: a value that breaks each is refused (or warned about), naming the key."""

from __future__ import annotations

import pytest

from recipekit.markers import UNSET
from recipekit.nemo_rl.rules.conftest import Plan
from recipes.super3.dapo import dapo_h100
from recipes.super35.rl import rlvr

# No override removes a section (null is refused by its type), so these recipes leave it out.
NO_GENERATION_V3 = dapo_h100.with_values({"policy.generation": UNSET})
NO_GENERATION_V35 = rlvr.with_values({"policy.generation": UNSET})


@pytest.mark.parametrize(
    ("stage", "overrides", "key", "reason"),
    [
        (NO_GENERATION_V3, (), "policy.generation", "run_grpo.py:84 @ super-v3"),
        (NO_GENERATION_V35, (), "policy.generation", "run_grpo_nemo_gym.py:168"),
        (rlvr, ("env.should_use_nemo_gym=false",), "env.should_use_nemo_gym", ":195 @"),
        (
            rlvr,
            ("env.should_use_nemo_gym=false", "grpo.invalid_tool_call_advantage=-1.0"),
            "grpo.invalid_tool_call_advantage",
            "grpo.py:1958",
        ),
        (
            rlvr,
            ("grpo.deduplicate_multimodal_data=true", "policy.generation.backend=megatron"),
            "grpo.deduplicate_multimodal_data",
            "grpo.py:383",
        ),
        (
            dapo_h100,
            ("checkpointing.metric_name=val_reward",),
            "checkpointing.metric_name",
            "grpo.py:2354 @ super-v3",
        ),
        (
            rlvr,
            ("checkpointing.metric_name=accuracy",),
            "checkpointing.metric_name",
            "grpo.py:3540 @ super-v3.5",
        ),
        (
            dapo_h100.with_values({"grpo.reward_shaping.overlong_buffer_penalty": UNSET}),
            (),
            "grpo.reward_shaping.overlong_buffer_penalty",
            "reward_functions.py:121 @ super-v3",
        ),
        (
            rlvr,
            (
                "grpo.async_grpo.enabled=false",
                "grpo.reward_shaping={enabled: true, overlong_buffer_length: 512, "
                "overlong_buffer_penalty: null, max_response_length: 1024}",
            ),
            "grpo.reward_shaping.overlong_buffer_penalty",
            "reward_functions.py:126 @ super-v3.5",
        ),
    ],
)
def test_refused(
    refused: Plan, stage: object, overrides: tuple[str, ...], key: str, reason: str
) -> None:
    errors = refused(stage, *overrides)
    found = [e for e in errors if e.startswith(key)]
    assert found and reason in found[0], errors


def test_stop_properly_penalty_replaces_the_dapo_lengths(warned: Plan) -> None:
    # NeMo-RL returns before reading the overlong lengths when the stop-properly coefficient
    # is set, so then the missing penalty is no error (make_plan raises none).
    without_penalty = dapo_h100.with_values({"grpo.reward_shaping.overlong_buffer_penalty": UNSET})
    warned(without_penalty, "grpo.reward_shaping.stop_properly_penalty_coef=0.5")


def test_several_dataloaders_warn_that_epochs_are_ignored(warned: Plan) -> None:
    warnings = warned(rlvr, "data.use_multiple_dataloader=true", "grpo.async_grpo.enabled=false")
    assert any(w.startswith("grpo.max_num_epochs") and "grpo.py:2793" in w for w in warnings)


@pytest.mark.parametrize("stage", [dapo_h100, rlvr])
def test_shipped_stages_pass(warned: Plan, stage: object) -> None:
    assert not any("grpo.py:2793" in w for w in warned(stage))
