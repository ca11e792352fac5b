"""Asynchronous GRPO (``grpo.async_grpo.enabled``): what the runners and the async training
loop refuse, since rollouts of an older policy train the current one."""

from __future__ import annotations

from collections.abc import Iterator

from recipekit.errors import Issue
from recipekit.nemo_rl.checks import CheckContext
from recipekit.nemo_rl.keys import value_of
from recipekit.nemo_rl.rules.citation import cite, mirrors, on_super35
from recipekit.nemo_rl.rules.generation import gym_runner_sets_the_server_on
from recipekit.nemo_rl.rules.grpo_setup import GYM_RUNNER, RUN_GRPO, async_grpo_enabled
from recipekit.nemo_rl.schema_super_v3 import AsyncGRPO

VLLM = "policy.generation.vllm_cfg"


def async_rollouts(ctx: CheckContext) -> bool:
    """Whether generation runs an async engine: vLLM's async_engine on both versions; on
    super-v3.5 also Megatron inference, Dynamo and TRT-LLM (always async: TRT-LLM's synchronous
    engine is gone) and SGLang's use_async_rollouts (models/generation/interfaces.py,
    should_use_async_rollouts @ super-v3.5-posttraining; grpo.py, _should_use_async_rollouts @
    super-v3)."""
    gen, vllm = ctx.generation, ctx.vllm
    if gen is None:
        return False
    if gen.backend == "vllm":
        return vllm is not None and (
            vllm.async_engine is True or gym_runner_sets_the_server_on(ctx)
        )
    if not on_super35(ctx):
        return False
    if gen.backend in ("megatron", "dynamo", "trtllm"):
        return True
    return gen.backend == "sglang" and value_of(gen, "use_async_rollouts") is True


# super-v3's run_grpo.py, main: async GRPO takes none of DAPO's features (key, feature, rule).
# It checks them in a loop, which the replay of the runner does not follow; super-v3.5's
# runners check each in straight-line code, which it evaluates.
_DAPO_FEATURES = (
    ("grpo.use_dynamic_sampling", "dynamic sampling", "async-grpo-does-not-take-dynamic"),
    ("grpo.reward_scaling.enabled", "reward scaling", "async-grpo-does-not-take-reward"),
    ("grpo.reward_shaping.enabled", "reward shaping", "async-grpo-does-not-take-reward"),
)


def async_grpo_without_dapo_features(ctx: CheckContext) -> Iterator[Issue]:
    """run_grpo.py, main (super-v3): async GRPO takes no dynamic sampling, reward scaling or
    reward shaping."""
    if on_super35(ctx) or not async_grpo_enabled(ctx):
        return
    grpo = ctx.config.grpo
    on = (
        grpo.use_dynamic_sampling is True,
        value_of(grpo.reward_scaling, "enabled") is True,
        value_of(grpo.reward_shaping, "enabled") is True,
    )
    for (key, feature, rule), enabled in zip(_DAPO_FEATURES, on, strict=True):
        if enabled:
            yield Issue(
                key,
                "NeMo-RL's runner refuses it with grpo.async_grpo.enabled: async GRPO does not "
                f"support {feature} ({cite(ctx, v3=RUN_GRPO + rule)})",
                value=True,
            )


def async_grpo_with_one_dataloader(ctx: CheckContext) -> Iterator[Issue]:
    """run_grpo_nemo_gym.py, main (super-v3.5): async GRPO reads one dataloader."""
    several = value_of(ctx.config.data, "use_multiple_dataloader") is True
    if async_grpo_enabled(ctx) and several:
        yield Issue(
            "data.use_multiple_dataloader",
            "NeMo-RL's runner refuses it with grpo.async_grpo.enabled: async GRPO reads one "
            "dataloader ("
            + cite(
                ctx,
                v35=f"{GYM_RUNNER}async-grpo-reads-one-dataloader",
            )
            + ")",
            value=True,
        )


@mirrors(
    v3="nemo-rl.v3.algorithms.grpo.async-grpo-train.async-grpo-needs-vllm-async-engine",
    v35="nemo-rl.algorithms.grpo.async-grpo-train.async-grpo-needs-asynchronous-generation-engine",
)
def async_grpo_needs_async_rollouts(ctx: CheckContext) -> Iterator[Issue]:
    """grpo.py, async_grpo_train (super-v3 and super-v3.5): the trajectory collector needs an engine
    that generates while training runs."""
    gen = ctx.generation
    if not async_grpo_enabled(ctx) or gen is None or async_rollouts(ctx):
        return
    on_vllm = gen.backend == "vllm"
    vllm = ctx.vllm
    yield Issue(
        f"{VLLM}.async_engine" if on_vllm else "policy.generation.backend",
        "NeMo-RL's async GRPO refuses it: it needs an asynchronous generation engine",
        value=(vllm.async_engine if vllm is not None else None) if on_vllm else gen.backend,
        hint="set policy.generation.vllm_cfg.async_engine: true" if on_vllm else "",
    )


@mirrors(
    v3="nemo-rl.v3.algorithms.grpo.async-grpo-train.async-grpo-needs-importance-sampling-correction",
    v35="nemo-rl.algorithms.grpo.async-grpo-train.async-grpo-needs-importance-sampling-correction",
)
def async_grpo_needs_importance_sampling(ctx: CheckContext) -> Iterator[Issue]:
    """grpo.py, async_grpo_train (super-v3 and super-v3.5): off-policy samples need the
    correction."""
    loss = ctx.config.loss_fn
    if async_grpo_enabled(ctx) and loss.use_importance_sampling_correction is not True:
        yield Issue(
            "loss_fn.use_importance_sampling_correction",
            "NeMo-RL's async GRPO refuses it false: rollouts from an older policy need the "
            "importance-sampling correction",
            value=loss.use_importance_sampling_correction,
            hint="set it true",
        )


@mirrors(
    v3="nemo-rl.v3.algorithms.grpo.async-grpo-train.async-grpo-excludes-colocated-generation",
    v35="nemo-rl.algorithms.grpo.async-grpo-train.colocated-async-grpo-only-megatron-generation",
)
def async_grpo_colocated_generation(ctx: CheckContext) -> Iterator[Issue]:
    """grpo.py, async_grpo_train (super-v3): async GRPO refuses colocated generation; on
    super-v3.5 only Megatron generation, which runs inside the training workers, may be
    colocated."""
    gen = ctx.generation
    if not async_grpo_enabled(ctx) or gen is None:
        return
    if value_of(gen.colocated, "enabled") is not True:
        return
    if on_super35(ctx) and gen.backend == "megatron":
        return
    what = (
        f"takes colocated generation only on the Megatron backend, not {gen.backend}"
        if on_super35(ctx)
        else "refuses colocated generation"
    )
    yield Issue(
        "policy.generation.colocated.enabled",
        f"NeMo-RL's async GRPO {what}",
        value=True,
        hint="set it false and give generation its own resources",
    )


@mirrors(
    v3="nemo-rl.v3.algorithms.grpo.async-grpo-train.trajectories-older-one-step-want-flight",
    v35="nemo-rl.algorithms.grpo.async-grpo-train.trajectories-older-one-step-want-flight",
)
def stale_rollouts_want_in_flight_weight_updates(ctx: CheckContext) -> Iterator[Issue]:
    """grpo.py, async_grpo_train (both versions), a printed warning: rollouts older than one
    step buy nothing unless weights reach vLLM while it generates."""
    section = ctx.config.grpo.async_grpo
    if not async_grpo_enabled(ctx) or not isinstance(section, AsyncGRPO):
        return
    if section.max_trajectory_age_steps > 1 and section.in_flight_weight_updates is not True:
        yield Issue(
            "grpo.async_grpo.in_flight_weight_updates",
            "NeMo-RL warns that with grpo.async_grpo.max_trajectory_age_steps = "
            f"{section.max_trajectory_age_steps} in-flight weight updates must be on, or the "
            "older trajectories give no speed-up",
            value=section.in_flight_weight_updates,
            hint="set it true, or max_trajectory_age_steps 1",
        )


@mirrors(v35="nemo-rl.algorithms.grpo.async-grpo-train.async-grpo-runs-vllm-megatron-trt")
def async_grpo_backend_has_a_replay_path(ctx: CheckContext) -> Iterator[Issue]:
    """grpo.py, async_grpo_train (super-v3.5): SGLang's async rollouts have no async GRPO replay
    path."""
    gen = ctx.generation
    if not on_super35(ctx) or not async_grpo_enabled(ctx) or gen is None:
        return
    if gen.backend not in ("vllm", "megatron", "trtllm", "dynamo"):
        yield Issue(
            "policy.generation.backend",
            "NeMo-RL's async GRPO supports the vLLM, Megatron, TRT-LLM and Dynamo generation "
            "backends only",
            value=gen.backend,
        )


ERROR_CHECKS = (
    async_grpo_without_dapo_features,
    async_grpo_with_one_dataloader,
    async_grpo_needs_async_rollouts,
    async_grpo_needs_importance_sampling,
    async_grpo_colocated_generation,
    async_grpo_backend_has_a_replay_path,
)
WARNING_CHECKS = (stale_rollouts_want_in_flight_weight_updates,)
