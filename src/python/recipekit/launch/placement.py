"""GB200 placement by rack: which groups of a plan must stay inside one NVLink domain, the
segment Slurm is asked for (``#SBATCH --segment``), and the check preflight makes of the nodes
Slurm gave.

On GB200 NVL72 a rack is one NVLink domain (18 compute trays of 4 GPUs). A tensor-, context- or
expert-parallel group, or a generation instance, that spans two racks runs its collectives over
InfiniBand: an expert all-to-all across racks stalls NCCL until its watchdog fires (NeMo-RL
#2986). The plan already checks that each group *fits* in a domain
(``NodeType.tensor_parallel_problem``); this module asks Slurm to *place* it there, and refuses
a node set where it would not be.

Slurm places by rack with its ``topology/block`` plugin (Slurm 23.11+; ``--segment`` since
24.05): ``--segment=S`` makes the allocation out of S-node segments, each inside one block; the
job's node count must be a multiple of S (sbatch: "--segment=S does not fit the job size";
``src/common/slurm_opt.c``). On a cluster with another topology plugin Slurm keeps the value and
ignores it (only the block, ring and torus3d plugins read ``segment_size``), and an sbatch older
than 24.05 refuses the script ("unrecognized option"): preflight's check is what stands then.

How ranks meet nodes decides what "inside a domain" means for the node set:

- ``"node-order"``: ranks fill the allocation's nodes in Slurm's order (Megatron-Bridge, one task
  per GPU), so each run of S consecutive nodes must share a domain; and a Ray stage whose NeMo-RL
  has no ``cluster.segment_size`` orders nodes by Ray's node ids, so every node must share one
  (S is the whole job).
- ``"by-domain"``: NeMo-RL with ``cluster.segment_size`` (super-v3.5-posttraining,
  ``nemo_rl/distributed/virtual_cluster.py``: ``select_segment_nodes``) picks its training nodes
  as whole S-node segments of each domain, from the ``nvlink_domain_<ClusterUUID>`` Ray resource
  each node registers; the domains must hold enough whole segments.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import attrs

Order = Literal["node-order", "by-domain"]

# Where the job script writes each node's `nvidia-smi -q` (one file per node, srun's %N).
INVENTORY_DIR = "nvlink-domains"
# NeMo-RL's Ray resource naming a node's NVLink domain (virtual_cluster.py: NVLINK_DOMAIN_PREFIX
# @ super-v3.5-posttraining; ray.sub registers "nvlink_domain_<ClusterUUID>": 1 on each node).
RAY_DOMAIN_PREFIX = "nvlink_domain_"


def inventory_file(node: str) -> str:
    """A node's `nvidia-smi -q`, relative to the run directory."""
    return f"{INVENTORY_DIR}/{node}.txt"


@attrs.frozen
class Group:
    name: str  # "tensor x context parallel (16 GPUs)"
    nodes: int


@attrs.frozen(kw_only=True)
class Placement:
    """What a plan asks of Slurm and checks in preflight."""

    # The groups that cross a node and fit in one domain, by what they are.
    groups: tuple[Group, ...]
    # Nodes that must share one domain, consecutive in Slurm's order ("node-order") or taken
    # as whole segments by the framework ("by-domain").
    span: int
    order: Order
    # Slurm's --segment: a multiple of ``span`` ("node-order") or at least it, dividing the job.
    segment: int
    # "by-domain": the nodes the framework places in segments (NeMo-RL's training nodes).
    placed_nodes: int

    def as_json(self) -> dict[str, Any]:
        return {
            "segment": self.segment,
            "span": self.span,
            "order": self.order,
            "placed_nodes": self.placed_nodes,
            "groups": {g.name: g.nodes for g in self.groups},
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Placement:
        return cls(
            groups=tuple(Group(k, int(v)) for k, v in data["groups"].items()),
            span=int(data["span"]),
            order=data["order"],
            segment=int(data["segment"]),
            placed_nodes=int(data["placed_nodes"]),
        )


def _groups(layout: Mapping[str, Any], gpus_per_node: int) -> list[tuple[str, int]]:
    """(name, GPUs) of each group the layout names: the plan's own layout keys."""

    def size(*keys: str) -> int:
        values = [layout.get(k) for k in keys]
        if not all(isinstance(v, int) for v in values):
            return 0
        return math.prod(values)  # type: ignore[arg-type]

    found = [
        ("tensor parallel", size("tensor_parallel")),
        ("tensor x context parallel", size("tensor_parallel", "context_parallel")),
        ("expert parallel", size("expert_parallel", "expert_tensor_parallel")),
        ("generation instance", size("vllm_tensor_parallel", "vllm_pipeline_parallel")),
    ]
    return [(name, gpus) for name, gpus in found if gpus > gpus_per_node]


def plan_placement(plan: Mapping[str, Any], domain: int) -> Placement | str | None:
    """The placement a plan (``Plan.as_json()`` without it) asks for on nodes whose NVLink
    domain holds ``domain`` nodes; None where nothing crosses a node in a way one domain could
    hold (not multi-node NVLink, one node, every group inside a node); the reason where no
    segment fits the job."""
    hardware = plan["hardware"]
    if hardware.get("interconnect") != "multi-node-nvlink" or hardware["num_nodes"] < 2:
        return None
    per_node, nodes = int(hardware["gpus_per_node"]), int(hardware["num_nodes"])
    groups = tuple(
        Group(f"{name} ({gpus} GPUs)", -(-gpus // per_node))
        for name, gpus in _groups(plan.get("layout", {}), per_node)
        if -(-gpus // per_node) <= domain
    )
    if not groups:
        return None
    segment_size = _segment_size(plan)
    if segment_size is not None:
        order: Order = "by-domain"
        span = segment_size
        placed = int(plan["layout"].get("training_nodes", nodes))
    elif plan["framework"]["launch"] == "ray":
        # Ray's node ids order the ranks: only a job inside one domain keeps every group there.
        order, span, placed = "node-order", nodes, nodes
    else:
        order, span, placed = "node-order", math.lcm(*(g.nodes for g in groups)), nodes
    if span > domain:
        return (
            f"the groups need {span} nodes in one NVLink domain, which holds {domain}: "
            "no --segment can keep them there"
        )
    for segment in range(span, domain + 1):
        fits_job = nodes % segment == 0 or segment == nodes
        if not fits_job:
            continue
        if order == "node-order" and segment % span == 0:
            return Placement(
                groups=groups, span=span, order=order, segment=segment, placed_nodes=placed
            )
        if order == "by-domain" and (nodes // segment) * (segment // span) * span >= placed:
            return Placement(
                groups=groups, span=span, order=order, segment=segment, placed_nodes=placed
            )
    return (
        f"no segment of {span} to {domain} nodes divides the job's {nodes} nodes and keeps "
        f"the {span}-node groups inside one NVLink domain (sbatch --segment needs a divisor)"
    )


def _segment_size(plan: Mapping[str, Any]) -> int | None:
    """NeMo-RL's ``cluster.segment_size`` where the rendered config sets it."""
    cluster = plan.get("config", {}).get("cluster")
    value = cluster.get("segment_size") if isinstance(cluster, Mapping) else None
    return value if isinstance(value, int) and value > 1 else None


def training_segment_size(
    layout: Mapping[str, Any], gpus_per_node: int, domain_nodes: int
) -> int | None:
    """NeMo-RL's ``cluster.segment_size`` for a layout: the nodes its largest training group
    spans (the smallest multiple of every one), None when every group stays in a node or one
    cannot fit a domain. Generation instances are NeMo-RL's own to place (grpo.py:
    ``nodes_per_instance``)."""
    training = [
        -(-gpus // gpus_per_node)
        for name, gpus in _groups(layout, gpus_per_node)
        if name != "generation instance"
    ]
    spans = [n for n in training if n <= domain_nodes]
    if not spans:
        return None
    span = math.lcm(*spans)
    return span if span <= domain_nodes else None


# --- the node inventory: `nvidia-smi -q`'s Fabric section --------------------------------------

_FIELD = re.compile(r"^(?P<indent>\s*)(?P<key>[^:]+?)\s*:\s*(?P<value>.*?)\s*$")
_ZERO_UUID = "00000000-0000-0000-0000-000000000000"


@attrs.frozen(order=True)
class Domain:
    """One NVLink domain: NCCL's MNNVL test compares both (a ClusterUUID alone is not unique
    where an admin splits a rack into partitions, NCCL #1301)."""

    cluster_uuid: str
    clique_id: str

    def __str__(self) -> str:
        return f"{self.cluster_uuid}/{self.clique_id}"


def fabric_domain(text: str) -> Domain | str:
    """The NVLink domain `nvidia-smi -q` reports for a node's GPUs, or why there is none.

    Each GPU's block has a ``Fabric`` section (``State``, ``Status``, ``CliqueId``,
    ``ClusterUUID``); a GPU outside a multi-node NVLink fabric reports ``N/A``, or an all-zero
    ClusterUUID (H100 with State Completed). Every GPU of a node must name the same domain.
    """
    domains: list[Domain] = []
    gpus = 0
    fabric: dict[str, str] | None = None
    fabric_indent = -1

    def close() -> None:
        nonlocal fabric
        if fabric is not None:
            domains.append(Domain(fabric.get("ClusterUUID", "N/A"), fabric.get("CliqueId", "N/A")))
            problems.append(_fabric_problem(fabric, gpus))
        fabric = None

    problems: list[str] = []
    for line in text.splitlines():
        if line.startswith("GPU "):
            close()
            gpus += 1
            continue
        if line.strip() == "Fabric":
            close()
            fabric, fabric_indent = {}, len(line) - len(line.lstrip())
            continue
        if fabric is None:
            continue
        match = _FIELD.match(line)
        indent = len(line) - len(line.lstrip())
        if line.strip() and indent <= fabric_indent:
            close()
            continue
        if match and indent == fabric_indent + 4:
            fabric[match["key"].strip()] = match["value"]
    close()
    if not domains:
        return "no Fabric section in nvidia-smi -q (a driver before multi-node NVLink?)"
    bad = [p for p in problems if p]
    if bad:
        return bad[0]
    if len(set(domains)) > 1:
        listed = ", ".join(str(d) for d in sorted(set(domains)))
        return f"its GPUs report different NVLink domains ({listed})"
    return domains[0]


def _fabric_problem(fabric: Mapping[str, str], gpu: int) -> str:
    state, status = fabric.get("State", "N/A"), fabric.get("Status", "N/A")
    uuid = fabric.get("ClusterUUID", "N/A")
    where = f"GPU {gpu - 1}" if gpu else "a GPU"
    if state == "N/A" or uuid in ("N/A", _ZERO_UUID):
        return f"{where} is in no multi-node NVLink fabric (ClusterUUID {uuid})"
    if state != "Completed" or status != "Success":
        return f"{where}'s fabric registration is State {state}, Status {status}"
    return ""


def placement_problem(
    placement: Placement, nodes: Sequence[str], domains: Mapping[str, Domain | str]
) -> str | None:
    """Why the groups would span two domains on ``nodes`` (Slurm's order), or None. One line,
    naming the nodes and their domains."""
    unknown = [f"{n} ({domains[n]})" for n in nodes if not isinstance(domains.get(n), Domain)]
    if unknown:
        return "no NVLink domain for " + "; ".join(unknown)
    known = {n: d for n, d in domains.items() if isinstance(d, Domain)}
    span, what = placement.span, _what(placement)
    if placement.order == "node-order":
        for start in range(0, len(nodes) - len(nodes) % span, span):
            chunk = nodes[start : start + span]
            if len({known[n] for n in chunk}) > 1:
                return (
                    f"{what} on nodes {start + 1}-{start + span} would span NVLink domains: "
                    + _by_domain(chunk, known)
                )
        return None
    whole = {d: sum(1 for n in nodes if known[n] == d) // span for d in set(known.values())}
    needed = -(-placement.placed_nodes // span)
    if sum(whole.values()) < needed:
        return (
            f"{what}: {needed} segments of {span} nodes inside one NVLink domain each are "
            f"needed, the nodes form {sum(whole.values())}: " + _by_domain(nodes, known)
        )
    return None


def _what(placement: Placement) -> str:
    groups = ", ".join(f"{g.name} over {g.nodes} nodes" for g in placement.groups)
    return f"the plan's groups ({groups})"


def _by_domain(nodes: Sequence[str], known: Mapping[str, Domain]) -> str:
    parts = []
    for domain in sorted({known[n] for n in nodes}):
        members = [n for n in nodes if known[n] == domain]
        parts.append(f"{','.join(members)} in {domain}")
    return "; ".join(parts)


def ray_domain_resource(
    plan: Mapping[str, Any], run_path: Path, node: str, log: Callable[[str], None]
) -> list[str]:
    """``ray start``'s ``--resources`` naming this node's NVLink domain, as NeMo-RL's ray.sub
    registers it: NeMo-RL's ``cluster.segment_size`` reads it to place training groups by rack
    (``get_ray_cluster_topology``), and without it falls back to any order. Only for a plan
    placed "by-domain"; preflight has already refused a node without a domain."""
    found = plan.get("placement")
    if found is None or "unplaced" in found or found.get("order") != "by-domain":
        return []
    try:
        domain = fabric_domain((run_path / inventory_file(node)).read_text(errors="replace"))
    except OSError as exc:
        domain = f"no {inventory_file(node)} ({exc.strerror})"
    if not isinstance(domain, Domain):
        log(f"no NVLink domain for Ray's placement by rack: {domain}")
        return []
    return ["--resources=" + json.dumps({RAY_DOMAIN_PREFIX + domain.cluster_uuid: 1})]
