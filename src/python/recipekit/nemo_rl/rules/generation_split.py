"""How an entry point with non-colocated generation splits NeMo-RL's cluster between generation
and training, as the setups of PPO (ppo.py, setup) and distillation (distillation.py, setup)
each assert it at super-v3.5-posttraining: on one node, generation takes a stated number of its
GPUs and no other node; on several, a stated number of whole nodes. PPO also asserts that
training keeps some (``SplitRules.leaves_*``); distillation does not.

Each entry point cites its own lines; the rule is written once here.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import attrs

from recipekit.errors import Issue
from recipekit.markers import Marker, given
from recipekit.nemo_rl.keys import value_of

RESOURCES = "policy.generation.colocated.resources"


@attrs.frozen
class SplitRules:
    """One entry point's citations of the split's asserts (``file:line @ commit``); None where
    its setup does not assert that part."""

    who: str  # "PPO", "distillation": whose setup refuses
    gpus_stated: str  # one node: generation's GPU count given, above 0
    one_node_only: str  # one node: generation's node count null or 1
    nodes_stated: str  # several nodes: generation's node count given, above 0
    whole_nodes: str  # several nodes: generation takes whole nodes
    leaves_gpus: str | None = None  # one node: some GPUs left to train on
    leaves_nodes: str | None = None  # several nodes: some nodes left to train on


def _number(value: object) -> object:
    return None if isinstance(value, Marker) else value


def split_issues(resources: Any, cluster: tuple[int, int], rules: SplitRules) -> Iterator[Issue]:
    """The split's issues for non-colocated generation's ``resources`` on a cluster of
    ``cluster`` = (nodes, GPUs per node)."""
    nodes, per_node = cluster
    gpus, gen_nodes = resources.gpus_per_node, resources.num_nodes
    setup = f"{rules.who}'s setup"
    if nodes == 1:
        if not isinstance(gpus, int) or gpus <= 0:
            yield Issue(
                f"{RESOURCES}.gpus_per_node",
                f"on a one-node cluster {setup} needs the GPUs non-colocated generation takes "
                f"stated, above 0 ({rules.gpus_stated})",
                value=_number(gpus),
                hint=f"fewer than cluster.gpus_per_node ({per_node})",
            )
        elif rules.leaves_gpus is not None and gpus >= per_node:
            yield Issue(
                f"{RESOURCES}.gpus_per_node",
                f"generation would take all {per_node} GPUs of the one node, leaving none to "
                f"train on ({rules.leaves_gpus})",
                value=gpus,
                hint=f"at most {per_node - 1}",
            )
        if gen_nodes not in (None, 1):
            yield Issue(
                f"{RESOURCES}.num_nodes",
                f"on a one-node cluster generation shares that node; {setup} refuses another "
                f"count ({rules.one_node_only})",
                value=_number(gen_nodes),
                hint="null or 1",
            )
        return
    if not isinstance(gen_nodes, int) or gen_nodes <= 0:
        yield Issue(
            f"{RESOURCES}.num_nodes",
            f"on {nodes} nodes {setup} needs the nodes non-colocated generation takes stated, "
            f"above 0 ({rules.nodes_stated})",
            value=_number(gen_nodes),
            hint=f"between 1 and {nodes - 1}",
        )
    elif rules.leaves_nodes is not None and gen_nodes >= nodes:
        yield Issue(
            f"{RESOURCES}.num_nodes",
            f"generation would take {gen_nodes} of the cluster's {nodes} nodes, leaving none to "
            f"train on ({rules.leaves_nodes})",
            value=gen_nodes,
            hint=f"at most {nodes - 1}",
        )
    if gpus != per_node:
        yield Issue(
            f"{RESOURCES}.gpus_per_node",
            f"on several nodes generation takes whole nodes: {setup} needs this to equal "
            f"cluster.gpus_per_node ({per_node}) ({rules.whole_nodes})",
            value=_number(gpus),
            hint=str(per_node),
        )


def stated_cluster(config: Any) -> tuple[int, int] | None:
    """(nodes, GPUs per node) of NeMo-RL's cluster section, or None where either is open."""
    nodes, per_node = config.cluster.num_nodes, config.cluster.gpus_per_node
    if isinstance(nodes, int) and isinstance(per_node, int):
        return nodes, per_node
    return None


def policy_generation(config: Any) -> Any:
    """The policy's generation section, or None where the config has none."""
    generation = config.policy.generation
    return None if isinstance(generation, Marker) else generation


def generation_colocated(config: Any) -> bool | None:
    """Whether generation shares the training GPUs (``colocated.enabled``); None where the
    config has no generation or does not say."""
    generation = policy_generation(config)
    colocated = None if generation is None else given(generation.colocated, None)
    enabled = value_of(colocated, "enabled")
    return enabled if isinstance(enabled, bool) else None


def non_colocated_generation(config: Any) -> Any:
    """The generation section where it runs on GPUs of its own; None where it is colocated or
    the config does not say."""
    return policy_generation(config) if generation_colocated(config) is False else None


def training_gpus(config: Any) -> tuple[int, str] | None:
    """The GPUs an entry point with ``policy.generation`` trains on (the cluster, less what
    non-colocated generation takes) and how they were counted; None where the config leaves
    them open or its split is refused (``split_issues``). ``NemoRLRun.training_gpus`` of PPO
    and distillation: the policy's layout must hold on these."""
    cluster, colocated = stated_cluster(config), generation_colocated(config)
    if cluster is None or colocated is None:
        return None
    nodes, per_node = cluster
    if colocated:
        return nodes * per_node, f"the cluster's {nodes} x {per_node}"
    resources = non_colocated_generation(config).colocated.resources
    if nodes == 1:
        gpus = resources.gpus_per_node
        if not isinstance(gpus, int) or not 0 < gpus < per_node:
            return None
        return per_node - gpus, f"the {per_node - gpus} GPUs generation leaves on the node"
    if not isinstance(resources.num_nodes, int) or not 0 < resources.num_nodes < nodes:
        return None
    train_nodes = nodes - resources.num_nodes
    return train_nodes * per_node, f"the {train_nodes} x {per_node} generation leaves"
