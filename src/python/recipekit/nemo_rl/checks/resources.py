"""The stage's GPUs against what NeMo-RL's cluster, generation and training ask for."""

from __future__ import annotations

from collections.abc import Iterator

from recipekit.errors import Issue
from recipekit.nemo_rl.checks.context import (
    RESOURCES,
    VLLM,
    CheckContext,
)
from recipekit.nemo_rl.layout import cluster_nodes
from recipekit.nemo_rl.rule_lines import where
from recipekit.nemo_rl.schema_super_v3 import (
    Colocation,
)


def cluster_matches_hardware(ctx: CheckContext) -> Iterator[Issue]:
    cluster, hw = ctx.config.cluster, ctx.hardware
    if cluster.gpus_per_node != hw.gpus_per_node:
        yield Issue(
            "cluster.gpus_per_node",
            f"the stage runs on {hw.node.name} nodes with {hw.gpus_per_node} GPUs each",
            value=cluster.gpus_per_node,
            hint="leave it derived, or change the stage's hardware",
        )
    gym = ctx.layout.nodes.gym_nodes
    if cluster.num_nodes != cluster_nodes(hw.num_nodes, gym):
        of_them = f", {gym} of them NeMo Gym's (env.nemo_gym.num_gpu_nodes)" if gym else ""
        yield Issue(
            "cluster.num_nodes",
            f"the stage's hardware is {hw.num_nodes} nodes{of_them}",
            value=cluster.num_nodes,
            hint="leave it derived, or change the stage's hardware",
        )
    if gym and gym >= hw.num_nodes:
        yield Issue(
            "env.nemo_gym.num_gpu_nodes",
            f"NeMo Gym's judges would take all {hw.num_nodes} nodes of the stage",
            value=gym,
            hint="add nodes to the stage's hardware",
        )


def nemo_gym_nodes_leave_the_policy_nodes(ctx: CheckContext) -> Iterator[Issue]:
    """grpo.py, setup (super-v3): NeMo Gym's judges take env.nemo_gym.num_gpu_nodes of
    cluster.num_nodes (only on more than one node), and the policy must keep at least one."""
    inside, nodes = ctx.layout.nodes.gym_inside, ctx.config.cluster.num_nodes
    if not inside or not isinstance(nodes, int):
        return
    if nodes <= 1:
        rule = "nemo-rl.grpo.v3.nemo-gym-nodes-need-a-multi-node-cluster"
        why = f"cluster.num_nodes = {nodes}: Gym's judge nodes need a cluster of more than one"
    elif nodes - inside <= 0:
        rule = "nemo-rl.grpo.v3.nemo-gym-nodes-leave-the-policy-nodes"
        why = f"{nodes} - {inside} = {nodes - inside} of cluster.num_nodes would be left the policy"
    else:
        return
    yield Issue(
        "env.nemo_gym.num_gpu_nodes",
        f"super-v3's GRPO serves NeMo Gym's judges on nodes of its own cluster: {why} "
        f"({where(rule)})",
        value=inside,
        hint="give the stage more nodes, or Gym fewer",
    )


def generation_resources_fit(ctx: CheckContext) -> Iterator[Issue]:
    gen = ctx.generation
    if gen is None or not isinstance(gen.colocated, Colocation) or gen.colocated.enabled:
        return
    res, hw = gen.colocated.resources, ctx.hardware
    if isinstance(res.gpus_per_node, int) and res.gpus_per_node > hw.gpus_per_node:
        yield Issue(
            f"{RESOURCES}.gpus_per_node",
            f"a {hw.node.name} node has {hw.gpus_per_node} GPUs",
            value=res.gpus_per_node,
        )
    if hw.num_nodes > 1 and isinstance(res.num_nodes, int) and res.num_nodes >= hw.num_nodes:
        yield Issue(
            f"{RESOURCES}.num_nodes",
            f"generation takes {res.num_nodes} of the {hw.num_nodes} nodes, "
            "leaving none to train on",
            value=res.num_nodes,
            hint=f"at most {hw.num_nodes - 1}, or colocate generation",
        )
    if (
        hw.num_nodes > 1
        and isinstance(res.gpus_per_node, int)
        and res.gpus_per_node != hw.gpus_per_node
    ):
        yield Issue(
            f"{RESOURCES}.gpus_per_node",
            f"on {hw.num_nodes} nodes generation gets whole nodes, so this must equal the "
            f"{hw.gpus_per_node} GPUs of a {hw.node.name} node",
            value=res.gpus_per_node,
        )
    if hw.num_nodes == 1 and res.num_nodes not in (None, 1):
        yield Issue(
            f"{RESOURCES}.num_nodes",
            "on a single node generation shares the node: leave this null or 1",
            value=res.num_nodes,
        )
    if hw.num_nodes == 1 and ctx.layout.nodes.training_gpus <= 0:
        yield Issue(
            f"{RESOURCES}.gpus_per_node",
            f"generation takes every GPU of the single node ({hw.gpus_per_node})",
            value=res.gpus_per_node,
        )
    if gen.backend == "megatron":
        yield Issue(
            "policy.generation.backend",
            "Megatron generation runs inside the training workers; it cannot be non-colocated",
            value=gen.backend,
        )


def vllm_fits_generation_gpus(ctx: CheckContext) -> Iterator[Issue]:
    vllm, nodes = ctx.vllm, ctx.layout.nodes
    if vllm is None or ctx.generation is None or ctx.generation.backend != "vllm":
        return
    per_instance = vllm.tensor_parallel_size * vllm.pipeline_parallel_size
    # No node left to the policy at all: nemo_gym_nodes_leave_the_policy_nodes names the key.
    if nodes.policy_nodes > 0 and (
        per_instance > nodes.generation_gpus or nodes.generation_gpus % per_instance
    ):
        yield Issue(
            f"{VLLM}.tensor_parallel_size",
            f"vLLM TP x PP = {vllm.tensor_parallel_size} x {vllm.pipeline_parallel_size} = "
            f"{per_instance} does not divide the {nodes.generation_gpus} generation GPUs",
            value=vllm.tensor_parallel_size,
        )
    if vllm.pipeline_parallel_size > 1 and not vllm.async_engine:
        yield Issue(
            f"{VLLM}.pipeline_parallel_size",
            "vLLM pipeline parallelism needs async_engine: true",
            value=vllm.pipeline_parallel_size,
        )
    ep, tp = vllm.expert_parallel_size, vllm.tensor_parallel_size
    if ep > 1 and ep % tp:
        yield Issue(
            f"{VLLM}.expert_parallel_size",
            f"must be a multiple of vLLM tensor_parallel_size ({tp})",
            value=ep,
        )
    if ep > 1 and ep != tp and vllm.async_engine:
        yield Issue(
            f"{VLLM}.expert_parallel_size",
            f"EP != TP ({tp}) is not supported with async_engine",
            value=ep,
        )
    if vllm.kv_cache_dtype != "auto" and vllm.precision != "fp8":
        yield Issue(
            f"{VLLM}.kv_cache_dtype",
            "an FP8 KV cache needs vllm_cfg.precision: fp8",
            value=vllm.kv_cache_dtype,
        )
    if vllm.precision == "fp8" and not ctx.config.loss_fn.use_importance_sampling_correction:
        yield Issue(
            f"{VLLM}.precision",
            "FP8 generation needs loss_fn.use_importance_sampling_correction: true",
            value=vllm.precision,
        )


def vllm_tensor_parallel_inside_nvlink(ctx: CheckContext) -> Iterator[Issue]:
    """recipekit's advice, not a refusal: vLLM runs a tensor-parallel group across nodes (Ray
    places its workers there), as NeMo-RL's DeepSeek-V3 examples do with TP 32 and 64, but
    every layer's all-reduce then crosses the network."""
    vllm, gen = ctx.vllm, ctx.generation
    if vllm is None or gen is None or gen.backend != "vllm":
        return
    problem = ctx.hardware.node.tensor_parallel_problem(vllm.tensor_parallel_size)
    if problem:
        yield Issue(
            f"{VLLM}.tensor_parallel_size",
            f"vLLM tensor parallelism leaves NVLink: {problem}; every layer's all-reduce "
            "crosses the network, which is slow",
            value=vllm.tensor_parallel_size,
        )
