"""The engine NeMo-RL's vLLM worker starts, as vLLM's rules read it (``recipekit.vllm.engine``):
the arguments of the call that builds it (``BaseVllmGenerationWorker._load_model``,
vllm_worker.py @ super-v3.5-posttraining), and the key of NeMo-RL's config that sets each.

The keywords the worker passes itself, the setting each reads and which it passes as it is
come from the pinned source (``recipekit.vllm.generated.nemo_rl_workers``);
``policy.generation.vllm_kwargs`` are spread into the same call as given. What the worker
derives is below, each with the words a message gives.
"""

from __future__ import annotations

from typing import Any

import attrs

from recipekit.markers import Marker
from recipekit.memo import last_call
from recipekit.nemo_rl.checks import CheckContext
from recipekit.nemo_rl.keys import value_of
from recipekit.nemo_rl.rules.allocator import env_var_sections
from recipekit.nemo_rl.rules.vllm_kwargs import KWARGS, given_kwargs, starts_async_engine, worker_of
from recipekit.upstream.values import OPAQUE, plain
from recipekit.vllm.engine import EngineStart, Setting
from recipekit.vllm.generated.nemo_rl_workers import WORKERS

VLLM = "policy.generation.vllm_cfg"


def _known(value: Any) -> bool:
    """A value the plan tells: not unset, and not one only the job resolves."""
    return not isinstance(value, Marker) and plain(value) is not OPAQUE


def worker_engine(branch: str, kwargs: dict[str, Any], asynchronous: bool) -> EngineStart:
    """What the worker of the NeMo-RL version ``branch`` hands the engine of vllm_kwargs
    ``kwargs``: them as given, beside the keywords it passes itself, less the keys it takes out
    of a mapping first (vllm_worker_async.py pops a deprecated compilation_config.use_inductor)
    and what it writes over them."""
    worker = WORKERS[branch]
    engine = "async" if asynchronous else "sync"
    taken_out = {
        field: frozenset(k for k, (_f, _l, only) in keys.items() if only == engine)
        for field, keys in worker.get("popped", {}).items()
    }
    return EngineStart(
        {k: plain(v) for k, v in kwargs.items() if _known(v)},
        {},
        given_in=KWARGS,
        given=kwargs,
        asynchronous=asynchronous,
        passed=frozenset(worker["passed"]),
        taken_out=taken_out,
        undetermined=frozenset(
            {*worker["passed"], *worker["replaced"]}
            | {k for k, v in kwargs.items() if not _known(v)}
        ),
    )


@last_call  # a plan's vLLM rules (about 30) read one
def engine_start(ctx: CheckContext) -> EngineStart | None:
    """The arguments NeMo-RL's vLLM worker starts the engine with; None where the policy does
    not generate with vLLM."""
    vllm = ctx.vllm
    if vllm is None or ctx.generation is None or ctx.generation.backend != "vllm":
        return None
    branch, worker = worker_of(ctx)
    given = worker_engine(branch, given_kwargs(ctx), starts_async_engine(ctx))
    arguments, settings = dict(given.arguments), {}
    for keyword in worker["as_is"]:
        setting = worker["passed"][keyword][0]
        if not setting.startswith(f"{VLLM}."):
            continue  # the model's name: no rule reads it
        value = value_of(vllm, setting.removeprefix(f"{VLLM}."))
        if _known(value):
            arguments[keyword], settings[keyword] = value, Setting(setting, value)
    tp, pp, ep = vllm.tensor_parallel_size, vllm.pipeline_parallel_size, vllm.expert_parallel_size
    expert = Setting(f"{VLLM}.expert_parallel_size", ep)
    # vllm_worker.py: enable_expert_parallel = expert_parallel_size > 1; above
    # tensor_parallel_size the worker starts ep / tp vLLM data-parallel engines (VLLM_DP_SIZE),
    # and worker_utils.resolve_distributed_executor_backend picks Ray workers for TP x PP > 1.
    arguments["enable_expert_parallel"] = ep > 1
    settings["enable_expert_parallel"] = attrs.evolve(
        expert, how="NeMo-RL turns it on for expert_parallel_size > 1"
    )
    if ep > tp:
        arguments["data_parallel_size"] = ep // tp
        settings["data_parallel_size"] = attrs.evolve(
            expert, how="NeMo-RL starts expert_parallel_size / tensor_parallel_size engines"
        )
    arguments["distributed_executor_backend"] = "ray" if tp * pp > 1 else "uni"
    settings["distributed_executor_backend"] = Setting(
        f"{VLLM}.tensor_parallel_size", tp, "NeMo-RL starts Ray workers only for TP x PP > 1"
    )
    # vllm_worker._resolve_enable_prefix_caching: the setting, or on from Ampere where unset.
    caching = value_of(vllm, "enable_prefix_caching")
    if isinstance(caching, bool):
        arguments["enable_prefix_caching"] = caching
        settings["enable_prefix_caching"] = Setting(f"{VLLM}.enable_prefix_caching", caching)
    # grpo.py's setup (configure_vllm_for_router_replay) writes it into vllm_kwargs.
    replay = value_of(value_of(ctx.config.policy, "router_replay"), "enabled")
    if replay is True:
        arguments["enable_return_routed_experts"] = True
        settings["enable_return_routed_experts"] = Setting(
            "policy.router_replay.enabled", True, "NeMo-RL sets it for router replay"
        )
    environment = {k: v for _, env in env_var_sections(ctx) for k, v in env.items()}
    return attrs.evolve(
        given,
        arguments=arguments,
        settings=settings,
        environment=environment,
        undetermined=given.undetermined - settings.keys(),
    )
