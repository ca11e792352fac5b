"""The NeMo Gym rollout rules: a value that breaks one is refused, naming its key."""

# The catalogued checks these tests break, which the rule catalogue's meta-test finds by
# name (recorded from the checks that produced an issue while these tests ran):
# malformed_think_penalty_needs_both_tags, nemo_gym_takes_no_stop_strings,
# nemo_gym_takes_no_stop_token_ids, nemo_gym_takes_no_top_k.

# The catalogued checks these tests break (by the upstream line each cites), which the
# rule catalogue's meta-test finds by name:
# config_validators_hold (RewardPenaltyConfig's validator refuses the penalty without ids when
# MasterConfig loads, before the rollouts' own check of it: that one is unreachable).

from __future__ import annotations

import pytest

from recipekit.nemo_rl.rule_lines import where
from recipekit.nemo_rl.rules.conftest import Plan, RefusedAt
from recipekit.stage import Stage
from recipes.super3.dapo import dapo_h100
from recipes.super35.rl import rlvr

# super-v3 checks NeMo Gym's needs (async engine, HTTP server) before the rollouts run.
V3_GYM = (
    "env.should_use_nemo_gym=true",
    "policy.generation.vllm_cfg.async_engine=true",
    "policy.generation.vllm_cfg.expose_http_server=true",
    # super-v3's setup reads env.nemo_gym where Gym runs (grpo.py, init_nemo_gym): without the
    # section the run stops with a KeyError.
    "env.nemo_gym={config_paths: [resources_servers/math/configs/math.yaml], "
    "policy_max_input_tokens: 1024}",
)

# The catalogue ids of super-v3's Gym rollout rules share this prefix.
V3_GYM_ROLLOUTS_TAKE_NO = (
    "nemo-rl.v3.experience.rollouts.run-async-nemo-gym-rollout.nemo-gym-rollouts-take-no-"
)


@pytest.mark.parametrize(
    ("override", "key", "rule"),
    [
        (
            "policy.generation.stop_strings=['</answer>']",
            "policy.generation.stop_strings",
            "stop-strings",
        ),
        ("policy.generation.stop_token_ids=[2]", "policy.generation.stop_token_ids", "stop-token"),
        # 8000 and up, as vLLM generation takes (vllm_generation.py, VllmGeneration.__init__ @
        # super-v3).
        ("policy.generation.top_k=9000", "policy.generation.top_k", "top"),
    ],
)
def test_super_v3_gym_rollouts_refuse_sampling_they_ignore(
    v3_examples: Stage, refused: Plan, override: str, key: str, rule: str
) -> None:
    found = [e for e in refused(v3_examples, *V3_GYM, override) if e.startswith(key)]
    assert found and where(V3_GYM_ROLLOUTS_TAKE_NO + rule) in found[0]


def test_super_v3_gym_rollouts_take_the_stage_as_shipped(v3_examples: Stage, errors: Plan) -> None:
    assert errors(v3_examples, *V3_GYM) == []


def test_without_gym_the_sampling_settings_stand(v3_examples: Stage, errors: Plan) -> None:
    assert errors(v3_examples, "policy.generation.top_k=9000") == []


def test_the_think_tag_penalty_needs_two_tags(gym_examples: Stage, refused: Plan) -> None:
    found = [
        e
        for e in refused(
            gym_examples,
            "reward_penalties={penalize_malformed_think_tag: true}",
            "env.nemo_gym.thinking_tags=['<think>']",
        )
        if e.startswith("env.nemo_gym.thinking_tags")
    ]
    assert (
        found
        and where(
            "nemo-rl.experience.rollouts.apply-reward-penalties.malformed-think-tag-penalty-needs-opening"
        )
        in found[0]
    )


def test_the_think_tag_penalty_takes_an_open_and_a_close_tag(
    gym_examples: Stage, errors: Plan
) -> None:
    assert not errors(
        gym_examples,
        "reward_penalties={penalize_malformed_think_tag: true}",
        "env.nemo_gym.thinking_tags=['<think>', '</think>']",
    )


def test_the_shipped_stages_plan(errors: Plan) -> None:
    assert errors(rlvr) == [] and errors(dapo_h100) == []


def test_the_unwanted_token_penalty_needs_its_ids(
    gym_examples: Stage, refused_at: RefusedAt
) -> None:
    refused_at(
        gym_examples,
        ("reward_penalties={penalize_unwanted_tokens: true}",),
        "reward_penalties.penalize_unwanted_tokens",
        where(
            "nemo-rl.algorithms.grpo.reward-penalty-config.require-unwanted-token-ids-when-penalized.unwanted-penalty-needs-token-ids"
        ),
    )


def test_the_unwanted_token_penalty_with_ids_plans(gym_examples: Stage, errors: Plan) -> None:
    assert not errors(
        gym_examples,
        "reward_penalties={penalize_unwanted_tokens: true, token_ids: {unwanted: [7]}}",
    )
