"""Async GRPO's rules: a value that breaks each is refused, naming the key."""

# The catalogued checks these tests break, which the rule catalogue's meta-test finds by
# name (recorded from the checks that produced an issue while these tests ran):
# async_grpo_needs_async_rollouts, async_grpo_needs_importance_sampling,
# async_grpo_with_one_dataloader, async_grpo_without_dapo_features, runner_refusals.

# The catalogued checks these tests break (by the upstream line each cites), which the
# rule catalogue's meta-test finds by name:
# async_grpo_backend_has_a_replay_path, async_grpo_colocated_generation,
# stale_rollouts_want_in_flight_weight_updates.

from __future__ import annotations

import pytest

from recipekit.nemo_rl.rule_lines import where
from recipekit.nemo_rl.rules.conftest import Plan, RefusedAt
from recipekit.nemo_rl.rules.grpo_setup import GYM_RUNNER
from recipekit.stage import Stage
from recipes.super3.dapo import dapo_h100
from recipes.super35.rl import rlvr

V3_ASYNC = "grpo.async_grpo={enabled: true, max_trajectory_age_steps: 1}"
DAPO_SHAPING = (
    "grpo.reward_shaping={enabled: true, overlong_buffer_length: 512, "
    "overlong_buffer_penalty: 1.0, max_response_length: 1024}"
)


@pytest.mark.parametrize(
    ("stage", "overrides", "key", "reason"),
    [
        (
            dapo_h100,
            (V3_ASYNC,),
            "grpo.use_dynamic_sampling",
            where("nemo-rl.v3.examples.run-grpo.main.async-grpo-does-not-take-dynamic"),
        ),
        (
            dapo_h100,
            (V3_ASYNC,),
            "grpo.reward_scaling.enabled",
            where("nemo-rl.v3.examples.run-grpo.main.async-grpo-does-not-take-reward"),
        ),
        (
            dapo_h100,
            (V3_ASYNC,),
            "grpo.reward_shaping.enabled",
            where("nemo-rl.v3.examples.run-grpo.main.async-grpo-does-not-take-reward"),
        ),
        (
            rlvr,
            ("grpo.use_dynamic_sampling=true",),
            "grpo.use_dynamic_sampling",
            where(f"{GYM_RUNNER}async-grpo-does-not-take-dynamic"),
        ),
        (
            rlvr,
            ("grpo.reward_scaling.enabled=true",),
            "grpo.reward_scaling.enabled",
            where(f"{GYM_RUNNER}async-grpo-does-not-take-reward-scaling"),
        ),
        (
            rlvr,
            (DAPO_SHAPING,),
            "grpo.reward_shaping.enabled",
            where(f"{GYM_RUNNER}async-grpo-does-not-take-reward-shaping"),
        ),
        (
            rlvr,
            # GRPO's setup reads the per-dataloader prompts first (a KeyError without them).
            # Setup hands the data section to code the replay does not follow, so the
            # runner's own check of it after setup is the hand-written rule's.
            ("data.use_multiple_dataloader=true", "data.num_prompts_per_dataloader=128"),
            "data.use_multiple_dataloader",
            where(f"{GYM_RUNNER}async-grpo-reads-one-dataloader"),
        ),
        (
            dapo_h100,
            (V3_ASYNC, "policy.generation.vllm_cfg.async_engine=false"),
            "policy.generation.vllm_cfg.async_engine",
            where("nemo-rl.v3.algorithms.grpo.async-grpo-train.async-grpo-needs-vllm-async-engine"),
        ),
        # rlvr's async_engine=false is overwritten by NeMo Gym's runner, not refused
        # (rules_test.test_nemo_gyms_runner_overwrites_a_false_server_setting).
        (
            dapo_h100,
            (V3_ASYNC,),
            "loss_fn.use_importance_sampling_correction",
            where(
                "nemo-rl.v3.algorithms.grpo.async-grpo-train.async-grpo-needs-importance-sampling-correction"
            ),
        ),
        (
            rlvr,
            ("loss_fn.use_importance_sampling_correction=false",),
            "loss_fn.use_importance_sampling_correction",
            where(
                "nemo-rl.algorithms.grpo.async-grpo-train.async-grpo-needs-importance-sampling-correction"
            ),
        ),
    ],
)
def test_refused(
    refused_at: RefusedAt, stage: Stage, overrides: tuple[str, ...], key: str, reason: str
) -> None:
    refused_at(stage, overrides, key, reason)


def test_synchronous_grpo_takes_dynamic_sampling(warned: Plan) -> None:
    warned(rlvr, "grpo.async_grpo.enabled=false", "grpo.use_dynamic_sampling=true")


@pytest.mark.parametrize(
    ("stage", "overrides", "key", "reason"),
    [
        # dapo-h100 colocates vLLM with training.
        (
            dapo_h100,
            (V3_ASYNC,),
            "policy.generation.colocated.enabled",
            where(
                "nemo-rl.v3.algorithms.grpo.async-grpo-train.async-grpo-excludes-colocated-generation"
            ),
        ),
        (
            rlvr,
            ("policy.generation.colocated.enabled=true",),
            "policy.generation.colocated.enabled",
            where(
                "nemo-rl.algorithms.grpo.async-grpo-train.colocated-async-grpo-only-megatron-generation"
            ),
        ),
        (
            rlvr,
            ("policy.generation.backend=sglang",),
            "policy.generation.backend",
            where("nemo-rl.algorithms.grpo.async-grpo-train.async-grpo-runs-vllm-megatron-trt"),
        ),
    ],
)
def test_async_grpo_generation_backends(
    refused_at: RefusedAt, stage: Stage, overrides: tuple[str, ...], key: str, reason: str
) -> None:
    refused_at(stage, overrides, key, reason)


COLOCATED_ASYNC_ONLY_MEGATRON = (
    "nemo-rl.algorithms.grpo.async-grpo-train.colocated-async-grpo-only-megatron-generation"
)


def test_colocated_megatron_generation_may_run_async(errors: Plan) -> None:
    # The Megatron backend generates inside the training workers (COLOCATED_ASYNC_ONLY_MEGATRON).
    found = errors(
        rlvr, "policy.generation.backend=megatron", "policy.generation.colocated.enabled=true"
    )
    assert not [e for e in found if where(COLOCATED_ASYNC_ONLY_MEGATRON) in e], found


def test_older_trajectories_without_in_flight_updates_warn(warned: Plan) -> None:
    warnings = warned(
        rlvr,
        "grpo.async_grpo.max_trajectory_age_steps=2",
        "grpo.async_grpo.in_flight_weight_updates=false",
    )
    assert any(
        w.startswith("grpo.async_grpo.in_flight_weight_updates")
        and where(
            "nemo-rl.algorithms.grpo.async-grpo-train.trajectories-older-one-step-want-flight"
        )
        in w
        for w in warnings
    ), warnings
