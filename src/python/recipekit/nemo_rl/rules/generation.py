"""Rules on how generation is set up: NeMo Gym's server, the FP8 KV cache, speculative
decoding's weights, the backend's engine, internal keys."""

from __future__ import annotations

from collections.abc import Iterator

from recipekit.errors import Issue
from recipekit.markers import UNSET, Marker, given
from recipekit.nemo_rl.checks import CheckContext
from recipekit.nemo_rl.keys import value_of
from recipekit.nemo_rl.rules.citation import cite_line, mirrors, on_super35, where

VLLM = "policy.generation.vllm_cfg"
NEMO_GYM_PY = "nemo_rl/environments/nemo_gym.py"
# Where setup_nemo_gym_config (super-v3.5-posttraining) sets async_engine and expose_http_server
# true: an assignment, no rule site, so written here by hand, once (an upgrade must check it).
GYM_SETS_THE_SERVER_ON = 1116


def gym_runner_sets_the_server_on(ctx: CheckContext) -> bool:
    """super-v3.5's NeMo Gym runner sets vLLM's async_engine and expose_http_server true before
    setup reads them (nemo_gym.py, setup_nemo_gym_config, which run_grpo_nemo_gym.py's main
    calls)."""
    return on_super35(ctx) and ctx.uses_nemo_gym


def nemo_gym_runner_turns_the_server_on(ctx: CheckContext) -> Iterator[Issue]:
    """nemo_gym.py, setup_nemo_gym_config (super-v3.5), called by run_grpo_nemo_gym.py's main:
    the Gym runner sets async_engine and expose_http_server true before the asserts of
    nemo_gym.py's should_use_nemo_gym run, so a false there is overwritten, not refused."""
    vllm = ctx.vllm
    if not gym_runner_sets_the_server_on(ctx) or vllm is None:
        return
    for key, value in (
        ("async_engine", vllm.async_engine),
        ("expose_http_server", vllm.expose_http_server),
    ):
        if value is False:
            yield Issue(
                f"{VLLM}.{key}",
                "NeMo Gym's runner sets it true before setup, whatever the config says "
                f"({cite_line(ctx, NEMO_GYM_PY, v35=GYM_SETS_THE_SERVER_ON)})",
                value=False,
                hint="remove it, or set it true",
            )


def _fp8_kv_cache(ctx: CheckContext) -> bool:
    """An FP8 KV cache past upstream's first assert on it (precision fp8, which
    ``recipekit.nemo_rl.checks.resources.vllm_fits_generation_gpus`` reports): the asserts below run
    only then."""
    vllm, gen = ctx.vllm, ctx.generation
    return (
        vllm is not None
        and gen is not None
        and gen.backend == "vllm"
        and vllm.kv_cache_dtype.startswith("fp8")
        and vllm.precision == "fp8"
    )


@mirrors(
    v3="nemo-rl.grpo.v3.fp8-kv-cache-needs-megatron", v35="nemo-rl.grpo.fp8-kv-cache-needs-megatron"
)
def fp8_kv_cache_needs_megatron(ctx: CheckContext) -> Iterator[Issue]:
    """grpo.py, setup (super-v3 and super-v3.5): no FP8 KV cache with the DTensor backend."""
    if _fp8_kv_cache(ctx) and ctx.config.policy.dtensor_cfg.enabled:
        yield Issue(
            f"{VLLM}.kv_cache_dtype",
            "NeMo-RL's GRPO setup refuses an FP8 KV cache with policy.dtensor_cfg.enabled",
            value=ctx.vllm.kv_cache_dtype if ctx.vllm else None,
        )


@mirrors(
    v3="nemo-rl.grpo.v3.fp8-kv-cache-without-async", v35="nemo-rl.grpo.fp8-kv-cache-without-async"
)
def fp8_kv_cache_without_async_rollouts(ctx: CheckContext) -> Iterator[Issue]:
    """grpo.py, setup (super-v3 and super-v3.5): no FP8 KV cache with async rollouts."""
    vllm = ctx.vllm
    if _fp8_kv_cache(ctx) and vllm is not None and vllm.async_engine:
        yield Issue(
            f"{VLLM}.kv_cache_dtype",
            "NeMo-RL's GRPO setup refuses an FP8 KV cache with async rollouts "
            "(vllm_cfg.async_engine)",
            value=vllm.kv_cache_dtype,
        )


@mirrors(v3="nemo-rl.grpo.v3.fp8-kv-cache-needs-pp1", v35="nemo-rl.grpo.fp8-kv-cache-needs-pp1")
def fp8_kv_cache_needs_one_pipeline_stage(ctx: CheckContext) -> Iterator[Issue]:
    """grpo.py, setup (super-v3 and super-v3.5): FP8 KV cache scales sync only at PP = 1."""
    m = ctx.megatron
    if _fp8_kv_cache(ctx) and m is not None and m.pipeline_model_parallel_size != 1:
        yield Issue(
            "policy.megatron_cfg.pipeline_model_parallel_size",
            "NeMo-RL's GRPO setup refuses an FP8 KV cache in generation unless the Megatron "
            "policy has one pipeline stage",
            value=m.pipeline_model_parallel_size,
        )


def trtllm_needs_its_async_engine(ctx: CheckContext) -> Iterator[Issue]:
    """models/generation/interfaces.py, should_use_async_rollouts (super-v3.5; also
    experience/rollouts.py, generate_responses_async, and async_utils/trajectory_collector.py,
    AsyncTrajectoryCollector.prepare_for_refit): TRT-LLM runs only with its async engine.
    """
    gen = ctx.generation
    if gen is None or gen.backend != "trtllm":
        return
    trtllm_cfg = value_of(gen, "trtllm_cfg")
    if value_of(trtllm_cfg, "async_engine") is not True:
        yield Issue(
            "policy.generation.backend",
            "NeMo-RL refuses the TRT-LLM backend without trtllm_cfg.async_engine: true ("
            + where(
                "nemo-rl.models.generation.interfaces.should-use-async-rollouts.trt-llm-generation-needs-async-engine"
            )
            + ")",
            value=gen.backend,
            hint="set policy.generation.trtllm_cfg.async_engine=true, or use vllm",
        )


# virtual_cluster.py's DEFAULT_GYM_PORT_RANGE_LOW / _HIGH @ super-v3.5: the ports NeMo-RL
# leaves to NeMo Gym's servers.
GYM_PORT_RANGE = (5000, 5999)


@mirrors(v35="nemo-rl.environments.nemo-gym.spinup.gym-ports-stay-inside")
def gym_ports_stay_in_their_range(ctx: CheckContext) -> Iterator[Issue]:
    """nemo_gym.py, NemoGym._spinup (super-v3.5), a printed warning: Gym's ports outside the range
    NeMo-RL leaves them may collide with its own (virtual_cluster.py's port layout)."""
    gym = value_of(ctx.config.env, "nemo_gym")
    if not on_super35(ctx) or not ctx.uses_nemo_gym or gym is None or isinstance(gym, Marker):
        return
    low = given(value_of(gym, "port_range_low", UNSET), GYM_PORT_RANGE[0])
    high = given(value_of(gym, "port_range_high", UNSET), GYM_PORT_RANGE[1])
    if low < GYM_PORT_RANGE[0] or high > GYM_PORT_RANGE[1]:
        key = "port_range_low" if low < GYM_PORT_RANGE[0] else "port_range_high"
        yield Issue(
            f"env.nemo_gym.{key}",
            f"NeMo-RL warns that Gym's port range [{low}, {high}) lies outside the default "
            f"[{GYM_PORT_RANGE[0]}, {GYM_PORT_RANGE[1]}), where its own ports may collide",
            value=low if key == "port_range_low" else high,
        )


ERROR_CHECKS = (
    fp8_kv_cache_needs_megatron,
    fp8_kv_cache_without_async_rollouts,
    fp8_kv_cache_needs_one_pipeline_stage,
)
WARNING_CHECKS = (nemo_gym_runner_turns_the_server_on,)
SUPER35_ERROR_CHECKS = (trtllm_needs_its_async_engine,)
SUPER35_WARNING_CHECKS = (gym_ports_stay_in_their_range,)
