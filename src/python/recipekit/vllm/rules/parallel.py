"""ParallelConfig's and EPLBConfig's checks (vllm/config/parallel.py) that the replay of the
class (``recipekit.vllm.guards``) cannot evaluate: they read the model, or an argument the
framework derives."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from recipekit.errors import Issue
from recipekit.vllm.engine import engine_of
from recipekit.vllm.rules import mirrors


@mirrors("vllm.parallel.external-dp-needs-moe")
def external_data_parallel_needs_moe(ctx: Any) -> Iterator[Issue]:
    """ParallelConfig.__post_init__: data-parallel engine replicas serve a model with experts
    only."""
    engine = engine_of(ctx)
    if engine is None or not ctx.model.is_dense:
        return
    replicas = engine.integer("data_parallel_size", 1)
    if replicas is not None and replicas > 1:
        yield Issue(
            engine.key("data_parallel_size"),
            f"vLLM refuses {replicas} data-parallel replicas{engine.how('data_parallel_size')}: "
            f"{ctx.model.name} has no experts to spread over them",
            value=engine.value("data_parallel_size"),
        )


@mirrors("vllm.parallel.async-eplb-not-over-nccl")
def async_eplb_communicator_is_not_nccl(ctx: Any) -> Iterator[Issue]:
    """EPLBConfig._validate_eplb_config: async EPLB (eplb_config.use_async, on by default) cannot
    move experts over an NCCL communicator."""
    engine = engine_of(ctx)
    eplb = engine.section("eplb_config") if engine is not None else {}
    communicator = eplb.get("communicator")
    if engine is not None and eplb.get("use_async", True) is not False:
        if communicator in ("torch_nccl", "pynccl"):
            yield Issue(
                engine.key("eplb_config.communicator"),
                "vLLM refuses it with async EPLB (eplb_config.use_async, on unless set false): "
                "NCCL streams conflict",
                value=communicator,
                hint="torch_gloo, nixl or unset; or eplb_config.use_async: false",
            )


@mirrors("vllm.parallel.redundant-experts-need-eplb")
def redundant_experts_need_eplb(ctx: Any) -> Iterator[Issue]:
    """ParallelConfig._validate_parallel_config: redundant experts are placed by EPLB only."""
    engine = engine_of(ctx)
    if engine is None:
        return
    redundant = engine.section("eplb_config").get("num_redundant_experts")
    if isinstance(redundant, int) and redundant and engine.get("enable_eplb") is not True:
        yield Issue(
            engine.key("eplb_config.num_redundant_experts"),
            "vLLM refuses it without enable_eplb",
            value=redundant,
        )


@mirrors("vllm.parallel.removed-all2all-backend")
def removed_all2all_backend_falls_back(ctx: Any) -> Iterator[Issue]:
    """ParallelConfig._validate_parallel_config: a warning; the pplx and naive all2all backends
    are gone and vLLM uses allgather_reducescatter instead."""
    engine = engine_of(ctx)
    backend = engine.get("all2all_backend") if engine is not None else None
    if engine is not None and backend in ("pplx", "naive"):
        yield Issue(
            engine.key("all2all_backend"),
            "vLLM warns: removed; it runs allgather_reducescatter instead",
            value=backend,
        )


@mirrors("vllm.parallel.parallel-loading-workers-ignored")
def parallel_loading_workers_are_ignored(ctx: Any) -> Iterator[Issue]:
    """ParallelConfig.__post_init__: a warning; max_parallel_loading_workers has no effect."""
    engine = engine_of(ctx)
    workers = engine.get("max_parallel_loading_workers") if engine is not None else None
    if engine is not None and workers is not None:
        yield Issue(
            engine.key("max_parallel_loading_workers"),
            "vLLM warns: not supported, ignored",
            value=workers,
        )


@mirrors("vllm.parallel.nsight-needs-ray")
def nsight_workers_need_ray(ctx: Any) -> Iterator[Issue]:
    """ParallelConfig._verify_args: nsight profiling of vLLM's workers needs the Ray
    executor."""
    engine = engine_of(ctx)
    if engine is None or engine.get("ray_workers_use_nsight") is not True:
        return
    backend = engine.get("distributed_executor_backend")
    if backend is not None and backend != "ray":
        yield Issue(
            engine.key("ray_workers_use_nsight"),
            "vLLM refuses it: the engine runs without Ray workers"
            + engine.how("distributed_executor_backend"),
            value=True,
        )
