"""GRPO setup's rules: a value that breaks each is refused (or warned about), naming the key."""

# The catalogued checks these tests break, which the rule catalogue's meta-test finds by
# name (recorded from the checks that produced an issue while these tests ran):
# checkpoint_metric_names_its_source, checkpoint_saved_without_its_validation_metric,
# dapo_reward_shaping_needs_its_lengths, generation_resources_fit,
# message_penalties_need_nemo_gym, runner_refusals (the runner's
# own checks, replayed), multiple_dataloaders_ignore_max_num_epochs.

# The catalogued checks these tests break (by the upstream line each cites), which the
# rule catalogue's meta-test finds by name:
# reward_penalties_need_nemo_gym,
# stop_properly_penalty_ignores_dapo_lengths.

from __future__ import annotations

import attrs
import pytest

from recipekit.markers import UNSET
from recipekit.nemo_rl.rule_lines import where
from recipekit.nemo_rl.rules.conftest import Plan, RefusedAt
from recipekit.nemo_rl.rules.grpo_setup import GYM_RUNNER
from recipekit.stage import Stage
from recipes.super3.dapo import dapo_h100
from recipes.super35.rl import rlvr

# No override removes a section (null is refused by its type), so these recipes leave it out.
NO_GENERATION_V3 = dapo_h100.with_values({"policy.generation": UNSET})
NO_GENERATION_V35 = rlvr.with_values({"policy.generation": UNSET})


@pytest.mark.parametrize(
    ("stage", "overrides", "key", "reason"),
    [
        (
            NO_GENERATION_V3,
            (),
            "policy.generation",
            where("nemo-rl.v3.examples.run-grpo.main.grpo-needs-generation-section"),
        ),
        (
            # The runner's own assert is never reached: main's video step before it
            # (materialize_vllm_video_config) reads the section first, a KeyError.
            NO_GENERATION_V35,
            (),
            "policy.generation: required key is missing",
            "a KeyError (nemo_rl/models/generation/vllm/config.py:",
        ),
        (
            rlvr,
            ("env.should_use_nemo_gym=false",),
            "env.should_use_nemo_gym",
            where(f"{GYM_RUNNER}nemo-gym-runner-runs-nemo-gym"),
        ),
        (
            rlvr,
            ("env.should_use_nemo_gym=false", "grpo.invalid_tool_call_advantage=-1.0"),
            "grpo.invalid_tool_call_advantage",
            where(
                "nemo-rl.algorithms.grpo.resolve-message-level-advantage-penalties.message-level-advantage-penalties-need-nemo"
            ),
        ),
        (
            rlvr,
            ("grpo.deduplicate_multimodal_data=true", "policy.generation.backend=megatron"),
            # The replay of the runner names the key the failing test reads.
            "policy.generation.backend",
            where(
                "nemo-rl.algorithms.grpo.validate-multimodal-dedup-capability.multimodal-de-duplication-qualified-vllm-only"
            ),
        ),
        (
            dapo_h100,
            ("checkpointing.metric_name=val_reward",),
            "checkpointing.metric_name",
            where("nemo-rl.v3.algorithms.grpo.grpo-train.ranking-metric-starts-train-val"),
        ),
        (
            rlvr,
            ("checkpointing.metric_name=accuracy",),
            "checkpointing.metric_name",
            where("nemo-rl.algorithms.grpo.grpo-train.ranking-metric-starts-train-val"),
        ),
        (
            dapo_h100.with_values({"grpo.reward_shaping.overlong_buffer_penalty": UNSET}),
            (),
            "grpo.reward_shaping.overlong_buffer_penalty",
            where(
                "nemo-rl.v3.algorithms.reward-functions.apply-reward-shaping.dapo-reward-shaping-needs-three-lengths"
            ),
        ),
        (
            rlvr,
            (
                "grpo.async_grpo.enabled=false",
                "grpo.reward_shaping={enabled: true, overlong_buffer_length: 512, "
                "overlong_buffer_penalty: null, max_response_length: 1024}",
            ),
            "grpo.reward_shaping.overlong_buffer_penalty",
            where("nemo-rl.reward-shaping.dapo-needs-its-lengths"),
        ),
    ],
)
def test_refused(
    refused: Plan, stage: object, overrides: tuple[str, ...], key: str, reason: str
) -> None:
    errors = refused(stage, *overrides)
    found = [e for e in errors if e.startswith(key) and reason in e]
    assert found, errors


def test_stop_properly_penalty_replaces_the_dapo_lengths(warned: Plan) -> None:
    # NeMo-RL returns before reading the overlong lengths when the stop-properly coefficient
    # is set, so then the missing penalty is no error (make_plan raises none).
    without_penalty = dapo_h100.with_values({"grpo.reward_shaping.overlong_buffer_penalty": UNSET})
    warned(without_penalty, "grpo.reward_shaping.stop_properly_penalty_coef=0.5")


def test_several_dataloaders_warn_that_epochs_are_ignored(warned: Plan) -> None:
    # GRPO's setup reads the prompts each dataloader takes (a KeyError without it).
    several = ("data.use_multiple_dataloader=true", "data.num_prompts_per_dataloader=32")
    warnings = warned(rlvr, *several, "grpo.async_grpo.enabled=false")
    assert any(
        w.startswith("grpo.max_num_epochs")
        and where("nemo-rl.algorithms.grpo.grpo-train.several-dataloaders-ignore-max-num-epochs")
        in w
        for w in warnings
    )


@pytest.mark.parametrize("stage", [dapo_h100, rlvr])
def test_shipped_stages_pass(warned: Plan, stage: object) -> None:
    assert not any(
        where("nemo-rl.algorithms.grpo.grpo-train.several-dataloaders-ignore-max-num-epochs") in w
        for w in warned(stage)
    )


DATA_PLANE_ON = (
    "data_plane={enabled: true, impl: transfer_queue, backend: simple, storage_capacity: 8, "
    "num_storage_units: 1, claim_meta_poll_interval_s: 0.1, global_segment_size: 1, "
    "local_buffer_size: 1}"
)


def test_multimodal_dedup_needs_the_data_plane_off(gym_examples: Stage, refused: Plan) -> None:
    errors = refused(gym_examples, "grpo.deduplicate_multimodal_data=true", DATA_PLANE_ON)
    found = [e for e in errors if e.startswith("data_plane.enabled")]
    assert (
        found
        and where(
            "nemo-rl.algorithms.grpo.validate-multimodal-dedup-capability.multimodal-de-duplication-needs-data-plane"
        )
        in found[0]
    ), errors


def test_the_data_plane_without_dedup_plans(gym_examples: Stage, errors: Plan) -> None:
    assert not errors(gym_examples, "grpo.deduplicate_multimodal_data=false", DATA_PLANE_ON)


VAL_METRIC = "checkpointing.metric_name=val:accuracy"


def _unranked(warnings: list[str]) -> list[str]:
    return [w for w in warnings if "does not rank that checkpoint" in w]


@pytest.mark.parametrize(
    ("stage", "overrides", "key", "reason"),
    [
        # dapo-h100 saves and validates every 5 steps: a save every 3 misses step 3's.
        (dapo_h100, ("checkpointing.save_period=3",), "checkpointing.save_period", "step 3"),
        (dapo_h100, ("grpo.val_period=0",), "checkpointing.save_period", "step 5"),
        # rlvr (async GRPO) validates never; saving every 10 steps, ranked by validation.
        (rlvr, (VAL_METRIC,), "checkpointing.save_period", "step 10"),
        (
            rlvr,
            (VAL_METRIC, "grpo.val_period=5", "grpo.val_start_at=20"),
            "checkpointing.save_period",
            "step 10",
        ),
        (
            rlvr,
            (VAL_METRIC, "grpo.val_period=5", "grpo.max_num_steps=1001"),
            "grpo.val_at_end",
            "step 1001",
        ),
    ],
)
def test_a_save_step_without_validation_metrics_warns(
    warned: Plan, stage: object, overrides: tuple[str, ...], key: str, reason: str
) -> None:
    found = _unranked(warned(stage, *overrides))
    assert len(found) == 1 and found[0].startswith(key) and reason in found[0], found


def test_the_warning_cites_the_loop_that_saves(warned: Plan) -> None:
    [sync_v3] = _unranked(warned(dapo_h100, "checkpointing.save_period=3"))
    assert (
        where("nemo-rl.v3.algorithms.grpo.grpo-train.val-ranking-metric-save-step-ran") in sync_v3
    )
    [async_v35] = _unranked(warned(rlvr, VAL_METRIC))
    assert (
        where("nemo-rl.algorithms.grpo.async-grpo-train.val-ranking-metric-save-step-ran")
        in async_v35
    )
    [sync_v35] = _unranked(warned(rlvr, VAL_METRIC, "grpo.async_grpo.enabled=false"))
    assert where("nemo-rl.algorithms.grpo.grpo-train.val-ranking-metric-save-step-ran") in sync_v35


@pytest.mark.parametrize(
    ("stage", "overrides"),
    [
        (dapo_h100, ()),
        (dapo_h100, ("checkpointing.save_period=10",)),
        (dapo_h100, ("checkpointing.metric_name=train:reward", "grpo.val_period=0")),
        (rlvr, (VAL_METRIC, "grpo.val_period=5", "grpo.val_start_at=10")),
        (
            rlvr,
            (VAL_METRIC, "grpo.val_period=5", "grpo.max_num_steps=1001", "grpo.val_at_end=true"),
        ),
    ],
)
def test_every_save_step_validated_plans_quietly(
    warned: Plan, stage: object, overrides: tuple[str, ...]
) -> None:
    assert not _unranked(warned(stage, *overrides))


def test_stop_properly_penalty_warns_that_dapo_lengths_are_ignored(warned: Plan) -> None:
    # dapo-h100 states DAPO's three overlong settings.
    warnings = warned(dapo_h100, "grpo.reward_shaping.stop_properly_penalty_coef=0.5")
    assert any(
        w.startswith("grpo.reward_shaping.overlong_buffer_length")
        and where(
            "nemo-rl.v3.algorithms.reward-functions.apply-reward-shaping.stop-properly-penalty-dapo-overlong-settings"
        )
        in w
        for w in warnings
    ), warnings


def test_reward_penalties_need_nemo_gym(gym_examples: Stage, refused_at: RefusedAt) -> None:
    refused_at(
        gym_examples,
        ("env.should_use_nemo_gym=false", "reward_penalties={penalize_empty_final_answer: true}"),
        "reward_penalties.penalize_empty_final_answer",
        where(
            "nemo-rl.algorithms.grpo.validate-reward-penalties.reward-penalties-run-nemo-gym-path"
        ),
    )


def test_one_node_non_colocated_generation_states_its_gpus(refused_at: RefusedAt) -> None:
    # grpo.py, setup @ super-v3: unset, recipekit counts the whole node for generation.
    one_node = attrs.evolve(dapo_h100, hardware=attrs.evolve(dapo_h100.hardware, num_nodes=1))
    refused_at(
        one_node,
        (
            "cluster.num_nodes=1",
            "policy.generation.colocated.enabled=false",
            "policy.generation.colocated.resources.gpus_per_node=null",
            "policy.generation.colocated.resources.num_nodes=null",
        ),
        "policy.generation.colocated.resources.gpus_per_node",
        "every GPU of the single node",
    )
