"""The ``${...}`` of NeMo-RL ``main``'s GRPO + Gym configs (``examples/nemo_gym/grpo_nanov3.yaml``
and the Super Omni VL recipes built on it), computed here as ``derivations`` does for super-v3.

Most rules are super-v3's. What differs: the sequence is padded to ``2 * TP * CP`` (context
parallelism splits each sequence into ``2 * CP`` chunks), validation sampling follows training
sampling, Gym's prompt budget and Megatron generation's token budget follow the sequence, and
NeMo-RL's cluster leaves out the nodes Gym serves its judges on.
"""

from __future__ import annotations

from typing import Any

from recipekit.launch.placement import training_segment_size
from recipekit.markers import UNSET
from recipekit.nemo_rl.derivations import (
    RULES,
    SEQ,
    Derivation,
    same_rule,
)
from recipekit.nemo_rl.layout import cluster_nodes


def _without_gym_nodes(nodes: Any, gym_nodes: Any) -> Any:
    if not isinstance(gym_nodes, int) or not isinstance(nodes, int):
        return nodes
    # None left: nothing to follow; the checks name env.nemo_gym.num_gpu_nodes.
    return cluster_nodes(nodes, gym_nodes) if nodes > gym_nodes else UNSET


def _sequence_divisor(megatron_enabled: Any, tp: Any, cp: Any, dtensor_tp: Any) -> Any:
    if megatron_enabled is True:
        return 2 * tp * cp if isinstance(tp, int) and isinstance(cp, int) else tp
    return dtensor_tp


def _segment_size(node: Any, tp: Any, cp: Any, ep: Any, etp: Any, megatron: Any) -> Any:
    # The nodes NeMo-RL keeps inside one NVLink domain (virtual_cluster.py select_segment_nodes
    # @ super-v3.5-posttraining): its largest training group's; null (off) where every group
    # stays in a node or the node has no multi-node NVLink.
    if megatron is not True or not all(isinstance(v, int) for v in (tp, cp, ep, etp)):
        return None
    layout = {"tensor_parallel": tp, "context_parallel": cp, "expert_parallel": ep,
              "expert_tensor_parallel": etp}
    if node.nvlink_domain_nodes < 2:
        return None
    return training_segment_size(layout, node.gpus_per_node, node.nvlink_domain_nodes)


_MEGATRON = "policy.megatron_cfg"
_DIVISOR = "policy.make_sequence_length_divisible_by"
_NODES = "cluster.num_nodes"
GEN = "policy.generation"

RULES_MAIN: tuple[Derivation, ...] = (
    # On main (and super-v3.5-posttraining) GRPO places the policy, vLLM, RM and OPD teachers on
    # cluster.num_nodes and Gym's actor on the Ray node it starts on
    # (nemo_rl/algorithms/grpo.py, environments/nemo_gym.py): the job allocates Gym's GPU
    # nodes on top, as Nemotron 3 Ultra's configs do (rlhf_teacher.yaml: cluster.num_nodes 60,
    # env.nemo_gym.num_gpu_nodes 20, "read by ultra_launch.sh to size the SLURM allocation").
    # super-v3's grpo.py counted them inside cluster.num_nodes instead.
    Derivation(
        _NODES,
        ("hardware.num_nodes", "env.nemo_gym.num_gpu_nodes"),
        _without_gym_nodes,
        "hardware.num_nodes - env.nemo_gym.num_gpu_nodes (Gym's judges' nodes)",
    ),
    *(rule for rule in RULES if rule.target not in (_DIVISOR, _NODES)),
    Derivation(
        "cluster.segment_size",
        (
            "hardware.node",
            f"{_MEGATRON}.tensor_model_parallel_size",
            f"{_MEGATRON}.context_parallel_size",
            f"{_MEGATRON}.expert_model_parallel_size",
            f"{_MEGATRON}.expert_tensor_parallel_size",
            f"{_MEGATRON}.enabled",
        ),
        _segment_size,
        "nodes of the largest TP, TP x CP or EP x ETP group on multi-node NVLink, else null",
        nullable=True,
    ),
    Derivation(
        _DIVISOR,
        (
            "policy.megatron_cfg.enabled",
            "policy.megatron_cfg.tensor_model_parallel_size",
            "policy.megatron_cfg.context_parallel_size",
            "policy.dtensor_cfg.tensor_parallel_size",
        ),
        _sequence_divisor,
        "2 * TP * CP of the Megatron back-end (TP of DTensor)",
    ),
    same_rule(f"{GEN}.val_temperature", f"{GEN}.temperature"),
    same_rule(f"{GEN}.val_top_p", f"{GEN}.top_p"),
    same_rule(f"{GEN}.val_top_k", f"{GEN}.top_k", nullable=True),
    same_rule(f"{GEN}.mcore_generation_config.max_tokens", SEQ),
    same_rule(f"{GEN}.mcore_generation_config.max_model_len", SEQ),
    same_rule("env.nemo_gym.policy_max_input_tokens", SEQ),
)
