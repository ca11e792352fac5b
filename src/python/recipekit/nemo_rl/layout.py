"""Which GPUs generate and which train, and the parallel sizes that result.

NeMo-RL (GRPO, non-colocated) gives generation ``colocated.resources.num_nodes`` whole nodes and
trains on the rest; on a single node it splits the node's GPUs instead. Colocated, both share
every GPU.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import attrs

from recipekit.hardware import Hardware
from recipekit.markers import Marker
from recipekit.nemo_rl.schema_main import GRPOMasterConfigMain
from recipekit.nemo_rl.schema_super_v3 import GRPOMasterConfig, Megatron, VllmConfig
from recipekit.parallelism import SIZES, megatron_layouts


@attrs.frozen(kw_only=True)
class Layout:
    total_gpus: int
    colocated: bool
    generation_nodes: int
    generation_gpus: int
    training_nodes: int
    training_gpus: int
    backend: str
    tensor_parallel: int
    pipeline_parallel: int
    context_parallel: int
    expert_parallel: int
    expert_tensor_parallel: int
    vllm_tensor_parallel: int
    vllm_pipeline_parallel: int
    # MOPD: nodes of the non-colocated teachers' log-probability workers, one group per
    # distinct teacher checkpoint.
    teachers: int = 0
    teacher_nodes: int = 0
    # NeMo Gym's own GPU nodes (its judges: the GenRM), allocated beside NeMo-RL's cluster.
    gym_nodes: int = 0

    @property
    def model_parallel(self) -> int:
        return self.tensor_parallel * self.pipeline_parallel * self.context_parallel

    @property
    def data_parallel(self) -> int:
        return self.training_gpus // self.model_parallel if self.model_parallel else 0

    @property
    def vllm_instances(self) -> int:
        per_instance = self.vllm_tensor_parallel * self.vllm_pipeline_parallel
        return self.generation_gpus // per_instance if per_instance else 0

    def as_json(self) -> dict[str, Any]:
        return {
            **attrs.asdict(self),
            "data_parallel": self.data_parallel,
            "vllm_instances": self.vllm_instances,
        }


def _int(value: object, fallback: int = 1) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else fallback


def _teacher_groups(config: object) -> tuple[int, int]:
    """(distinct teachers, their nodes) when MOPD runs its teachers on their own nodes."""
    opd = getattr(config, "on_policy_distillation", None)
    if opd is None or isinstance(opd, Marker) or opd.enabled is not True:
        return 0, 0
    routes = opd.teacher_model_by_agent_name
    teachers = opd.non_colocated_teachers
    if isinstance(routes, Marker) or teachers is None or isinstance(teachers, Marker):
        return 0, 0
    if teachers.enabled is not True or isinstance(teachers.default_teacher_cfg, Marker):
        return 0, 0
    distinct = len(set(routes.values()))
    return distinct, distinct * _int(teachers.default_teacher_cfg.num_nodes)


def gym_nodes(config: object) -> int:
    """The nodes NeMo Gym serves its judges on outside NeMo-RL's cluster: main and
    super-v3.5-posttraining place nothing of NeMo-RL's there (``derivations_main``); super-v3's
    GRPO carves them out of ``cluster.num_nodes`` itself, so there they are inside it (0)."""
    if not isinstance(config, GRPOMasterConfigMain):
        return 0
    env = config.env
    nemo_gym = None if isinstance(env, Marker) else env.nemo_gym
    if nemo_gym is None or isinstance(nemo_gym, Marker):
        return 0
    return _int(nemo_gym.num_gpu_nodes, 0)


def compute_layout(config: GRPOMasterConfig | GRPOMasterConfigMain, hardware: Hardware) -> Layout:
    policy = config.policy
    teachers, teacher_nodes = _teacher_groups(config)
    gym = gym_nodes(config)
    nodes = _int(config.cluster.num_nodes, hardware.num_nodes - gym) - teacher_nodes
    per_node = _int(config.cluster.gpus_per_node, hardware.gpus_per_node)
    total = nodes * per_node
    generation = policy.generation
    colocation = None if isinstance(generation, Marker) else generation.colocated
    colocated = colocation is None or isinstance(colocation, Marker) or colocation.enabled
    if colocated or colocation is None or isinstance(colocation, Marker):
        gen_nodes, gen_gpus, train_nodes, train_gpus = nodes, total, nodes, total
    else:
        resources = colocation.resources
        gen_per_node = _int(resources.gpus_per_node, per_node)
        if nodes == 1:
            gen_nodes, gen_gpus = 1, gen_per_node
            train_nodes, train_gpus = 1, per_node - gen_per_node
        else:
            gen_nodes = _int(resources.num_nodes)
            gen_gpus = gen_nodes * gen_per_node
            train_nodes = nodes - gen_nodes
            train_gpus = train_nodes * per_node

    megatron = policy.megatron_cfg
    if isinstance(megatron, Megatron) and megatron.enabled:
        backend = "megatron"
        tp, pp, cp = (
            megatron.tensor_model_parallel_size,
            megatron.pipeline_model_parallel_size,
            megatron.context_parallel_size,
        )
        ep, etp = megatron.expert_model_parallel_size, megatron.expert_tensor_parallel_size
    else:
        backend = "dtensor"
        tp = _int(policy.dtensor_cfg.tensor_parallel_size)
        cp = _int(policy.dtensor_cfg.context_parallel_size)
        pp, ep, etp = 1, 1, 1
    vllm = None if isinstance(generation, Marker) else generation.vllm_cfg
    vtp, vpp = (
        (vllm.tensor_parallel_size, vllm.pipeline_parallel_size)
        if isinstance(vllm, VllmConfig)
        else (1, 1)
    )
    return Layout(
        total_gpus=total + teacher_nodes * per_node,
        colocated=colocated,
        generation_nodes=gen_nodes,
        generation_gpus=gen_gpus,
        training_nodes=train_nodes,
        training_gpus=max(train_gpus, 0),
        backend=backend,
        tensor_parallel=tp,
        pipeline_parallel=pp,
        context_parallel=cp,
        expert_parallel=ep,
        expert_tensor_parallel=etp,
        vllm_tensor_parallel=vtp,
        vllm_pipeline_parallel=vpp,
        teachers=teachers,
        teacher_nodes=teacher_nodes,
        gym_nodes=gym,
    )


MEGATRON_KEYS = {
    "tp": "policy.megatron_cfg.tensor_model_parallel_size",
    "pp": "policy.megatron_cfg.pipeline_model_parallel_size",
    "cp": "policy.megatron_cfg.context_parallel_size",
    "ep": "policy.megatron_cfg.expert_model_parallel_size",
    "etp": "policy.megatron_cfg.expert_tensor_parallel_size",
}
VLLM_TP = "policy.generation.vllm_cfg.tensor_parallel_size"
GENERATION_NODES = "policy.generation.colocated.resources.num_nodes"
# Shares of the nodes the search gives generation when it may move the split.
GENERATION_SHARES = (1 / 4, 1 / 3, 1 / 2, 2 / 3, 3 / 4)


def layout_candidates(
    base: Layout, hardware: Hardware, num_layers: int, num_experts: int
) -> Iterator[tuple[Layout, dict[str, Any]]]:
    """Every layout the search tries for a GRPO stage with Megatron training: the generation
    and training split (non-colocated), vLLM's TP inside a node, and each Megatron-Core layout
    of the training GPUs; each with the overrides that make it."""
    if base.backend != "megatron":
        return
    per_node = hardware.gpus_per_node
    nodes = hardware.num_nodes - base.teacher_nodes - base.gym_nodes
    if base.colocated:
        splits = [(nodes, nodes)]
    else:
        counts = {round(nodes * share) for share in GENERATION_SHARES}
        if base.training_nodes + base.generation_nodes == nodes:
            counts.add(base.generation_nodes)
        splits = sorted((g, nodes - g) for g in counts if 0 < g < nodes)
    vllm_sizes = [v for v in SIZES if v <= per_node and per_node % v == 0]
    for gen_nodes, train_nodes in splits:
        train_gpus = train_nodes * per_node
        for sizes in megatron_layouts(train_gpus, hardware.node, num_layers, num_experts):
            for vtp in vllm_sizes:
                layout = attrs.evolve(
                    base,
                    total_gpus=(nodes + base.teacher_nodes) * per_node,
                    generation_nodes=gen_nodes,
                    generation_gpus=gen_nodes * per_node,
                    training_nodes=train_nodes,
                    training_gpus=train_gpus,
                    tensor_parallel=sizes.tp,
                    pipeline_parallel=sizes.pp,
                    context_parallel=sizes.cp,
                    expert_parallel=sizes.ep,
                    expert_tensor_parallel=sizes.etp,
                    vllm_tensor_parallel=vtp,
                )
                overrides: dict[str, Any] = {
                    MEGATRON_KEYS[name]: getattr(sizes, name) for name in MEGATRON_KEYS
                }
                overrides[VLLM_TP] = vtp
                if not base.colocated:
                    overrides[GENERATION_NODES] = gen_nodes
                yield layout, overrides
