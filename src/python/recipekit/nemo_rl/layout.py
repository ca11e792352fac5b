"""Which nodes generate, which train, which serve teachers and judges, and how the policy's
training GPUs are split.

NeMo-RL's cluster (``cluster.num_nodes``) is the stage's nodes less NeMo Gym's judges (main and
super-v3.5-posttraining place Gym outside it; super-v3 has none). Inside it, MOPD's
non-colocated teachers take their own nodes; what is left is the policy's. GRPO non-colocated
gives generation ``colocated.resources.num_nodes`` whole nodes and trains on the rest (on a
single node it splits the node's GPUs instead); colocated, both share every GPU. The training
GPUs carry one Megatron-Core layout (:class:`recipekit.parallelism.ParallelLayout`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import attrs

from recipekit.hardware import Hardware
from recipekit.markers import Marker
from recipekit.nemo_rl import runs_super35
from recipekit.nemo_rl.keys import value_of
from recipekit.nemo_rl.schema_super_v3 import GRPOMasterConfig, Megatron, VllmConfig
from recipekit.parallelism import (
    DTENSOR,
    NEMO_RL,
    SIZES,
    ParallelKeys,
    ParallelLayout,
    megatron_layouts,
)

if TYPE_CHECKING:
    from recipekit.nemo_rl.schema_main import GRPOMasterConfigMain


def cluster_nodes(stage_nodes: int, gym_nodes: int) -> int:
    """NeMo-RL's ``cluster.num_nodes``: the stage's nodes less NeMo Gym's judges' nodes."""
    return stage_nodes - gym_nodes


@attrs.frozen(kw_only=True)
class NodeSplit:
    """How a GRPO stage's nodes are shared out, each count computed here once."""

    gpus_per_node: int
    # NeMo-RL's cluster: every node but NeMo Gym's.
    cluster_nodes: int
    # NeMo Gym's own GPU nodes (its judges: the GenRM), allocated beside NeMo-RL's cluster.
    gym_nodes: int = 0
    # NeMo Gym's nodes inside NeMo-RL's cluster: super-v3's GRPO takes them from the policy's
    # (grpo.py's setup: policy_nodes -= nemo_gym_num_nodes when Gym runs).
    gym_inside: int = 0
    # MOPD: distinct teacher checkpoints, each with its own log-probability workers' nodes.
    teachers: int = 0
    teacher_nodes: int = 0
    colocated: bool
    generation_nodes: int
    generation_gpus: int
    training_nodes: int
    training_gpus: int

    @property
    def policy_nodes(self) -> int:
        """The nodes generation and training share out: the cluster less the teachers' (and,
        on super-v3, less NeMo Gym's)."""
        return self.cluster_nodes - self.teacher_nodes - self.gym_inside

    @property
    def total_gpus(self) -> int:
        return self.cluster_nodes * self.gpus_per_node

    def colocated_on_every_gpu(self) -> NodeSplit:
        """Colocated: generation and training share every GPU of the policy's nodes."""
        gpus = self.policy_nodes * self.gpus_per_node
        return attrs.evolve(
            self,
            colocated=True,
            generation_nodes=self.policy_nodes,
            generation_gpus=gpus,
            training_nodes=self.policy_nodes,
            training_gpus=max(gpus, 0),
        )

    def with_generation_nodes(self, generation_nodes: int, gpus_on_one_node: int) -> NodeSplit:
        """Non-colocated: generation on ``generation_nodes`` whole nodes, training on the rest
        of the policy's. On a single policy node there is no whole node to give: generation
        takes ``gpus_on_one_node`` of its GPUs (``colocated.resources.gpus_per_node``) and
        training the rest."""
        if self.policy_nodes == 1:
            return attrs.evolve(
                self,
                colocated=False,
                generation_nodes=1,
                generation_gpus=gpus_on_one_node,
                training_nodes=1,
                training_gpus=max(self.gpus_per_node - gpus_on_one_node, 0),
            )
        training_nodes = self.policy_nodes - generation_nodes
        return attrs.evolve(
            self,
            colocated=False,
            generation_nodes=generation_nodes,
            generation_gpus=generation_nodes * self.gpus_per_node,
            training_nodes=training_nodes,
            training_gpus=max(training_nodes * self.gpus_per_node, 0),
        )


@attrs.frozen(kw_only=True)
class Layout:
    nodes: NodeSplit
    backend: str
    # The training GPUs' layout, and how this backend's config spells its sizes.
    parallel: ParallelLayout
    keys: ParallelKeys = attrs.field(eq=False)
    vllm_tensor_parallel: int
    vllm_pipeline_parallel: int

    @property
    def vllm_instances(self) -> int:
        per_instance = self.vllm_tensor_parallel * self.vllm_pipeline_parallel
        return self.nodes.generation_gpus // per_instance if per_instance else 0

    def as_json(self) -> dict[str, Any]:
        n, t = self.nodes, self.parallel
        return {
            "total_gpus": n.total_gpus,
            "colocated": n.colocated,
            "generation_nodes": n.generation_nodes,
            "generation_gpus": n.generation_gpus,
            "training_nodes": n.training_nodes,
            "training_gpus": n.training_gpus,
            "backend": self.backend,
            **t.plan_sizes(),
            "vllm_tensor_parallel": self.vllm_tensor_parallel,
            "vllm_pipeline_parallel": self.vllm_pipeline_parallel,
            "teachers": n.teachers,
            "teacher_nodes": n.teacher_nodes,
            "gym_nodes": n.gym_nodes,
            **t.plan_data_parallel(),
            "vllm_instances": self.vllm_instances,
        }


def _int(value: object, fallback: int = 1) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else fallback


def _teacher_groups(config: object) -> tuple[int, int]:
    """(distinct teachers, their nodes) when MOPD runs its teachers on their own nodes."""
    opd = value_of(config, "on_policy_distillation", None)
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


def _judge_nodes(config: object) -> int:
    """env.nemo_gym.num_gpu_nodes, 0 without a Gym section (super-v3 declares none: its
    examples' env, schema_common's, carries main's)."""
    nemo_gym = value_of(value_of(config, "env", None), "nemo_gym", None)
    if nemo_gym is None or isinstance(nemo_gym, Marker):
        return 0
    return _int(nemo_gym.num_gpu_nodes, 0)


def gym_nodes_inside(config: object) -> int:
    """super-v3's GRPO with NeMo Gym (env.should_use_nemo_gym) serves Gym's judges on
    env.nemo_gym.num_gpu_nodes of cluster.num_nodes, which the policy does not get."""
    if (
        runs_super35(config)
        or value_of(value_of(config, "env", None), "should_use_nemo_gym") is not True
    ):
        return 0
    return _judge_nodes(config)


def gym_nodes(config: object) -> int:
    """The nodes NeMo Gym serves its judges on outside NeMo-RL's cluster: main and
    super-v3.5-posttraining place nothing of NeMo-RL's there (``derivations_main``); super-v3's
    GRPO carves them out of ``cluster.num_nodes`` itself (``gym_nodes_inside``), so there 0."""
    return _judge_nodes(config) if runs_super35(config) else 0


def node_split(config: GRPOMasterConfig | GRPOMasterConfigMain, hardware: Hardware) -> NodeSplit:
    teachers, teacher_nodes = _teacher_groups(config)
    gym = gym_nodes(config)
    nodes = _int(config.cluster.num_nodes, cluster_nodes(hardware.num_nodes, gym))
    per_node = _int(config.cluster.gpus_per_node, hardware.gpus_per_node)
    generation = config.policy.generation
    colocation = None if isinstance(generation, Marker) else generation.colocated
    split = NodeSplit(
        gpus_per_node=per_node,
        cluster_nodes=nodes,
        gym_nodes=gym,
        gym_inside=gym_nodes_inside(config),
        teachers=teachers,
        teacher_nodes=teacher_nodes,
        colocated=True,
        generation_nodes=0,
        generation_gpus=0,
        training_nodes=0,
        training_gpus=0,
    )
    if colocation is None or isinstance(colocation, Marker) or colocation.enabled:
        return split.colocated_on_every_gpu()
    resources = colocation.resources
    return split.with_generation_nodes(
        _int(resources.num_nodes), _int(resources.gpus_per_node, per_node)
    )


def compute_layout(config: GRPOMasterConfig | GRPOMasterConfigMain, hardware: Hardware) -> Layout:
    policy = config.policy
    nodes = node_split(config, hardware)
    megatron = policy.megatron_cfg
    section: object
    if isinstance(megatron, Megatron) and megatron.enabled:
        backend, keys, section = "megatron", NEMO_RL, megatron
    else:
        backend, keys, section = "dtensor", DTENSOR, policy.dtensor_cfg
    generation = policy.generation
    vllm = None if isinstance(generation, Marker) else generation.vllm_cfg
    vtp, vpp = (
        (vllm.tensor_parallel_size, vllm.pipeline_parallel_size)
        if isinstance(vllm, VllmConfig)
        else (1, 1)
    )
    return Layout(
        nodes=nodes,
        backend=backend,
        parallel=keys.read(section, nodes.training_gpus),
        keys=keys,
        vllm_tensor_parallel=vtp,
        vllm_pipeline_parallel=vpp,
    )


VLLM_TP = "policy.generation.vllm_cfg.tensor_parallel_size"
GENERATION_NODES = "policy.generation.colocated.resources.num_nodes"
GENERATION_GPUS = "policy.generation.colocated.resources.gpus_per_node"
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
    split = attrs.evolve(
        base.nodes,
        gpus_per_node=per_node,
        cluster_nodes=cluster_nodes(hardware.num_nodes, base.nodes.gym_nodes),
    )
    if split.colocated:
        splits = [split.colocated_on_every_gpu()]
    elif split.policy_nodes == 1:
        # One node: generation takes a share of its GPUs, training the rest.
        gpus = {round(per_node * share) for share in GENERATION_SHARES}
        if base.nodes.policy_nodes == 1:
            gpus.add(base.nodes.generation_gpus)
        splits = [split.with_generation_nodes(1, g) for g in sorted(gpus) if 0 < g < per_node]
    else:
        policy = split.policy_nodes
        counts = {round(policy * share) for share in GENERATION_SHARES}
        if base.nodes.training_nodes + base.nodes.generation_nodes == policy:
            counts.add(base.nodes.generation_nodes)
        splits = [
            split.with_generation_nodes(g, per_node) for g in sorted(counts) if 0 < g < policy
        ]
    # attrs.evolve of ``base``, its fields read once (thousands of candidates).
    kept = {f.name: getattr(base, f.name) for f in attrs.fields(Layout) if f.init}
    for nodes in splits:
        # Generation's GPUs on each of its nodes (a share of the one node, or whole nodes);
        # vLLM's TP stays inside them.
        generation_per_node = min(nodes.generation_gpus, per_node)
        vllm_sizes = [v for v in SIZES if v <= generation_per_node and generation_per_node % v == 0]
        for training in megatron_layouts(
            nodes.training_gpus, hardware.node, num_layers, num_experts, base.parallel
        ):
            sizes = base.keys.overrides(training, base.parallel)
            for vtp in vllm_sizes:
                layout = Layout(
                    **{**kept, "nodes": nodes, "parallel": training, "vllm_tensor_parallel": vtp}
                )
                overrides = {**sizes, VLLM_TP: vtp}
                if not nodes.colocated:
                    overrides[GENERATION_NODES] = nodes.generation_nodes
                    overrides[GENERATION_GPUS] = generation_per_node
                yield layout, overrides
