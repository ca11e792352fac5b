"""Which GPUs generate and which train, and the parallel sizes that result.

NeMo-RL (GRPO, non-colocated) gives generation ``colocated.resources.num_nodes`` whole nodes and
trains on the rest; on a single node it splits the node's GPUs instead. Colocated, both share
every GPU.
"""

from __future__ import annotations

from typing import Any

import attrs

from recipekit.hardware import Hardware
from recipekit.markers import Marker
from recipekit.nemo_rl.schema_main import GRPOMasterConfigMain
from recipekit.nemo_rl.schema_super_v3 import GRPOMasterConfig, Megatron, VllmConfig


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


def compute_layout(config: GRPOMasterConfig | GRPOMasterConfigMain, hardware: Hardware) -> Layout:
    policy = config.policy
    teachers, teacher_nodes = _teacher_groups(config)
    nodes = _int(config.cluster.num_nodes, hardware.num_nodes) - teacher_nodes
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
    )
