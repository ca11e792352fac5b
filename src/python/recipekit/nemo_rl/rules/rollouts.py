"""Rules on how NeMo Gym rollouts run: the sampling settings the Gym path takes, and the reward
penalties it applies to Gym's results."""

from __future__ import annotations

from collections.abc import Iterator

from recipekit.errors import Issue
from recipekit.markers import Marker
from recipekit.nemo_rl.checks import CheckContext
from recipekit.nemo_rl.keys import value_of
from recipekit.nemo_rl.rules.citation import cite, mirrors

GEN = "policy.generation"


def _refuse_on_gym_path(ctx: CheckContext, key: str, rule: str, what: str) -> Iterator[Issue]:
    gen = ctx.generation
    value = value_of(gen, key)
    if ctx.uses_nemo_gym and not isinstance(value, Marker) and value:
        yield Issue(
            f"{GEN}.{key}",
            f"NeMo-RL's NeMo Gym rollouts refuse it: Gym does not support {what} "
            f"({cite(ctx, v3=rule)})",
            value=list(value) if isinstance(value, tuple) else value,
            hint="set it null",
        )


def nemo_gym_takes_no_stop_strings(ctx: CheckContext) -> Iterator[Issue]:
    """rollouts.py, run_async_nemo_gym_rollout (super-v3): the Gym rollout path honours no stop
    strings.

    run_grpo.py hands the generation config to the Gym rollouts as it is; super-v3's own Gym
    runner would reset the value to null first (nemo_gym.py, setup_nemo_gym_config), so it has
    no effect there.
    """
    yield from _refuse_on_gym_path(
        ctx,
        "stop_strings",
        "nemo-rl.v3.experience.rollouts.run-async-nemo-gym-rollout.nemo-gym-rollouts-take-no-stop-strings",
        "stop strings",
    )


def nemo_gym_takes_no_stop_token_ids(ctx: CheckContext) -> Iterator[Issue]:
    """rollouts.py, run_async_nemo_gym_rollout (super-v3): the Gym rollout path honours no stop
    token ids.

    Null is allowed here though configure_generation_config fills it with the EOS token under
    run_grpo.py, which the assert then refuses; the plan does not know the tokenizer's EOS.
    """
    yield from _refuse_on_gym_path(
        ctx,
        "stop_token_ids",
        "nemo-rl.v3.experience.rollouts.run-async-nemo-gym-rollout.nemo-gym-rollouts-take-no-stop-token",
        "stop token ids",
    )


def nemo_gym_takes_no_top_k(ctx: CheckContext) -> Iterator[Issue]:
    """rollouts.py, run_async_nemo_gym_rollout (super-v3): top-k is no OpenAI sampling parameter, so
    Gym takes none."""
    yield from _refuse_on_gym_path(
        ctx,
        "top_k",
        "nemo-rl.v3.experience.rollouts.run-async-nemo-gym-rollout.nemo-gym-rollouts-take-no-top",
        "top-k sampling",
    )


@mirrors(
    v35="nemo-rl.experience.rollouts.apply-reward-penalties.malformed-think-tag-penalty-needs-opening"
)
def malformed_think_penalty_needs_both_tags(ctx: CheckContext) -> Iterator[Issue]:
    """rollouts.py, apply_reward_penalties (super-v3.5): the malformed-think-tag penalty compares an
    opening and a closing tag; Gym's thinking_tags, when given, replace NeMo-RL's two-tag
    default."""
    penalties = value_of(ctx.config, "reward_penalties")
    if value_of(penalties, "penalize_malformed_think_tag") is not True:
        return
    gym = value_of(ctx.config.env, "nemo_gym")
    tags = value_of(gym, "thinking_tags")
    if not isinstance(tags, tuple) or not tags or len(tags) >= 2:
        return
    yield Issue(
        "env.nemo_gym.thinking_tags",
        "NeMo-RL's reward penalties refuse it with reward_penalties.penalize_malformed_think_tag:"
        " they need an opening and a closing tag",
        value=list(tags),
    )


SUPER_V3_ERROR_CHECKS = (
    nemo_gym_takes_no_stop_strings,
    nemo_gym_takes_no_stop_token_ids,
    nemo_gym_takes_no_top_k,
)
SUPER35_ERROR_CHECKS = (malformed_think_penalty_needs_both_tags,)
