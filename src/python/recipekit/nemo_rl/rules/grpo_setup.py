"""GRPO's own setup and training loop: the runner's preconditions, checkpoint ranking, DAPO's
reward shaping, the features only one rollout path honours.

super-v3 runs ``examples/run_grpo.py``, super-v3.5-posttraining the NeMo Gym runner
``examples/nemo_gym/run_grpo_nemo_gym.py``; each check cites the line of the version it runs.
"""

from __future__ import annotations

from collections.abc import Iterator

from recipekit.errors import Issue
from recipekit.markers import UNSET, Marker, is_set
from recipekit.nemo_rl import SUPER35_TYPES, SUPER_V3_TYPES
from recipekit.nemo_rl.checks import CheckContext
from recipekit.nemo_rl.keys import value_of
from recipekit.nemo_rl.rules.checkpoint_ranking import (
    metric_close_to_a_reported_one,
    metric_without_its_source,
    reported_metrics,
    unranked_saves,
)
from recipekit.nemo_rl.rules.citation import cite, mirrors, on_super35
from recipekit.upstream.allowed import allowed

# The catalogue ids of the entry points' own rules share these prefixes: each version starts
# GRPO from a different script (examples/run_grpo.py, examples/nemo_gym/run_grpo_nemo_gym.py).
RUN_GRPO = "nemo-rl.v3.examples.run-grpo.main."
GYM_RUNNER = "nemo-rl.examples.nemo-gym.run-grpo-nemo-gym.main."


@mirrors(
    v35="nemo-rl.algorithms.grpo.resolve-message-level-advantage-penalties.message-level-advantage-penalties-need-nemo"
)
def message_penalties_need_nemo_gym(ctx: CheckContext) -> Iterator[Issue]:
    """grpo.py, _resolve_message_level_advantage_penalties (super-v3.5): only NeMo Gym flags invalid
    tool calls and malformed thinking, so without it these advantages would never apply."""
    grpo = ctx.config.grpo
    for key in ("invalid_tool_call_advantage", "malformed_thinking_advantage"):
        value = value_of(grpo, key)
        if on_super35(ctx) and is_set(value) and not ctx.uses_nemo_gym:
            yield Issue(
                f"grpo.{key}",
                "NeMo-RL's GRPO refuses it without env.should_use_nemo_gym: only NeMo Gym marks "
                "the messages it penalises",
                value=value,
            )
            return


def checkpoint_metric_names_its_source(ctx: CheckContext) -> Iterator[Issue]:
    """grpo.py, grpo_train (both versions) and the async loop, async_grpo_train: a ranking
    metric says whether it is a training or a validation metric."""
    line = cite(
        ctx,
        v3="nemo-rl.v3.algorithms.grpo.grpo-train.ranking-metric-starts-train-val",
        v35="nemo-rl.algorithms.grpo.grpo-train.ranking-metric-starts-train-val",
    )
    yield from metric_without_its_source(ctx.config.checkpointing, "NeMo-RL", line)


def async_grpo_enabled(ctx: CheckContext) -> bool:
    """Whether the stage trains with asynchronous GRPO (grpo.async_grpo.enabled), whose loop
    (async_grpo_train) states rules of its own."""
    return value_of(value_of(ctx.config.grpo, "async_grpo"), "enabled") is True


def checkpoint_metric_is_one_it_reports(ctx: CheckContext) -> Iterator[Issue]:
    """grpo.py, grpo_train and async_grpo_train (both versions): the ranking metric is one the
    run collects, else the first save raises. Only the job knows what its environment reports;
    a name close to one of the loop's own (generated/metric_names.json) is a typo to warn of."""
    rule = (
        "grpo.async-grpo-train.ranking-metric-one-run-collects-async"
        if async_grpo_enabled(ctx)
        else "grpo.grpo-train.ranking-metric-one-run-collects"
    )
    label = SUPER35_TYPES if on_super35(ctx) else SUPER_V3_TYPES
    yield from metric_close_to_a_reported_one(
        ctx.config.checkpointing,
        reported_metrics(label, "grpo"),
        "NeMo-RL",
        cite(ctx, v3=f"nemo-rl.v3.algorithms.{rule}", v35=f"nemo-rl.algorithms.{rule}"),
    )


def checkpoint_saved_without_its_validation_metric(ctx: CheckContext) -> Iterator[Issue]:
    """grpo.py, grpo_train (both versions) and the async loop, async_grpo_train: a
    checkpoint ranked by a ``val:`` metric, saved at a step that ran no validation, is left
    out of the top-k. Saves the config cannot fix (checkpoint_must_save_by's time limit, the
    last step of a dataset that runs out before max_num_steps) are not foreseen."""
    grpo = ctx.config.grpo
    # The async loop saves and warns at lines of its own.
    line = (
        cite(
            ctx,
            v3="nemo-rl.v3.algorithms.grpo.async-grpo-train.val-ranking-metric-save-step-ran",
            v35="nemo-rl.algorithms.grpo.async-grpo-train.val-ranking-metric-save-step-ran",
        )
        if async_grpo_enabled(ctx)
        else cite(
            ctx,
            v3="nemo-rl.v3.algorithms.grpo.grpo-train.val-ranking-metric-save-step-ran",
            v35="nemo-rl.algorithms.grpo.grpo-train.val-ranking-metric-save-step-ran",
        )
    )
    yield from unranked_saves(ctx.config.checkpointing, grpo, "grpo", "NeMo-RL", line)


@mirrors(
    v3="nemo-rl.v3.algorithms.reward-functions.apply-reward-shaping.dapo-reward-shaping-needs-three-lengths",
    v35="nemo-rl.reward-shaping.dapo-needs-its-lengths",
)
def dapo_reward_shaping_needs_its_lengths(ctx: CheckContext) -> Iterator[Issue]:
    """reward_functions.py, apply_reward_shaping (super-v3 and super-v3.5): the only shaping besides
    the stop-properly penalty is DAPO's overlong penalty, which needs all three of its values."""
    # Either version's section (main's is not a subclass of super-v3's); absent is UNSET.
    shaping = ctx.config.grpo.reward_shaping
    if isinstance(shaping, Marker) or shaping.enabled is not True:
        return
    if is_set(shaping.stop_properly_penalty_coef):
        return  # the stop-properly penalty replaces DAPO's; its lengths are not read
    for key in ("overlong_buffer_length", "overlong_buffer_penalty", "max_response_length"):
        if not is_set(getattr(shaping, key)):
            yield Issue(
                f"grpo.reward_shaping.{key}",
                "NeMo-RL's reward shaping refuses a missing one: enabled shaping without "
                "stop_properly_penalty_coef is DAPO's overlong penalty, which needs it",
                hint="set it, or disable grpo.reward_shaping",
            )


@mirrors(v35="nemo-rl.algorithms.grpo.grpo-train.several-dataloaders-ignore-max-num-epochs")
def multiple_dataloaders_ignore_max_num_epochs(ctx: CheckContext) -> Iterator[Issue]:
    """grpo.py, grpo_train (super-v3.5): several dataloaders cycle without end, so only
    max_num_steps stops training."""
    if value_of(ctx.config.data, "use_multiple_dataloader") is True:
        yield Issue(
            "grpo.max_num_epochs",
            "NeMo-RL ignores it with data.use_multiple_dataloader: the dataloaders never run "
            "out, so only grpo.max_num_steps ends training",
            value=ctx.config.grpo.max_num_epochs,
        )


@mirrors(
    v3="nemo-rl.v3.algorithms.reward-functions.apply-reward-shaping.stop-properly-penalty-dapo-overlong-settings",
    v35="nemo-rl.algorithms.reward-functions.apply-reward-shaping.stop-properly-penalty-dapo-overlong-settings",
)
def stop_properly_penalty_ignores_dapo_lengths(ctx: CheckContext) -> Iterator[Issue]:
    """reward_functions.py, apply_reward_shaping (both versions), a printed warning: with the
    stop-properly penalty, DAPO's overlong settings are not read."""
    shaping = ctx.config.grpo.reward_shaping
    if isinstance(shaping, Marker) or shaping.enabled is not True:
        return
    if not is_set(shaping.stop_properly_penalty_coef):
        return
    # A derived max_response_length has a value (policy.max_total_sequence_length's).
    ignored = [
        key
        for key in ("overlong_buffer_length", "overlong_buffer_penalty", "max_response_length")
        if getattr(shaping, key) not in (None, UNSET)
    ]
    if ignored:
        yield Issue(
            f"grpo.reward_shaping.{ignored[0]}",
            "NeMo-RL warns that with stop_properly_penalty_coef set it ignores DAPO's "
            f"{', '.join(ignored)}",
            hint="set grpo.reward_shaping.stop_properly_penalty_coef null for DAPO's overlong "
            "penalty, or leave these out",
        )


# grpo.py's _REWARD_PENALTY_FLAGS: the reward penalties only NeMo Gym's rollouts apply.
REWARD_PENALTY_FLAGS = allowed("nemo_rl.reward_penalty_flag", SUPER35_TYPES).values


@mirrors(v35="nemo-rl.algorithms.grpo.validate-reward-penalties.reward-penalties-run-nemo-gym-path")
def reward_penalties_need_nemo_gym(ctx: CheckContext) -> Iterator[Issue]:
    """grpo.py, _raise_if_reward_penalties_enabled_without_nemo_gym (super-v3.5): the reward-zeroing
    penalties run in NeMo Gym's rollouts only, so GRPO setup refuses them on the native generation
    path."""
    penalties = value_of(ctx.config, "reward_penalties")
    if not on_super35(ctx) or ctx.uses_nemo_gym or penalties is None:
        return
    for flag in REWARD_PENALTY_FLAGS:
        if value_of(penalties, flag) is True:
            yield Issue(
                f"reward_penalties.{flag}",
                "NeMo-RL's GRPO setup refuses it without env.should_use_nemo_gym: the reward "
                "penalties run on the NeMo Gym path only",
                value=True,
            )
            return


ERROR_CHECKS = (
    message_penalties_need_nemo_gym,
    checkpoint_metric_names_its_source,
    dapo_reward_shaping_needs_its_lengths,
    reward_penalties_need_nemo_gym,
)
WARNING_CHECKS = (
    stop_properly_penalty_ignores_dapo_lengths,
    multiple_dataloaders_ignore_max_num_epochs,
    checkpoint_saved_without_its_validation_metric,
    checkpoint_metric_is_one_it_reports,
)
