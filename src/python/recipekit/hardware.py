"""The machines a stage runs on, as part of the recipe.

A layout that fits 8 GPUs per node does not fit 4; an arm64 container does not start on x86_64.
Writing the hardware into the recipe lets the plan check both before anything is queued.
"""

from __future__ import annotations

import enum

import attrs

from recipekit.validators import at_least, single_line


class CpuArch(enum.Enum):
    X86_64 = "x86_64"
    AARCH64 = "aarch64"

    @property
    def oci_platform(self) -> str:
        return {"x86_64": "linux/amd64", "aarch64": "linux/arm64"}[self.value]


class Interconnect(enum.Enum):
    INFINIBAND = "infiniband"
    # GB200 NVL72: NVLink spans the rack; cross-node GPU memory needs an IMEX channel.
    MULTI_NODE_NVLINK = "multi-node-nvlink"


@attrs.frozen
class Gpu:
    model: str = attrs.field(validator=single_line)
    hbm_gib: int


@attrs.frozen(kw_only=True)
class NodeType:
    """One kind of compute node: its GPUs, CPU architecture and how nodes talk."""

    # Written into the job script's comments, so one line (issue 39).
    name: str = attrs.field(validator=single_line)
    gpu: Gpu
    gpus_per_node: int = attrs.field(validator=at_least(1))
    cpu_arch: CpuArch
    interconnect: Interconnect
    needs_imex_channel: bool = False
    # Nodes whose GPUs share one NVLink domain: 1, except multi-node NVLink racks.
    nvlink_domain_nodes: int = attrs.field(default=1, validator=at_least(1))

    def tensor_parallel_problem(self, size: int) -> str:
        """Why a tensor-parallel group of ``size`` GPUs cannot run over NVLink here; "" if it can.

        A group fills part of one node, or whole nodes of one NVLink domain (GB200 NVL72:
        18 nodes of 4 GPUs), never straddling a domain's edge.
        """
        per_node, domain = self.gpus_per_node, self.nvlink_domain_nodes
        if size <= per_node:
            if per_node % size:
                return f"{size} does not divide the {per_node} GPUs of a {self.name} node"
            return ""
        if domain == 1:
            return f"a {self.name} node has {per_node} GPUs and NVLink ends at the node"
        if size % per_node or domain % (size // per_node):
            return (
                f"a group across nodes takes whole {self.name} nodes ({per_node} GPUs each) "
                f"and must tile the {domain}-node NVLink domain: {size} GPUs does not"
            )
        return ""

    def __str__(self) -> str:
        gpus = f"{self.gpus_per_node}x {self.gpu.model} {self.gpu.hbm_gib} GiB"
        return f"{self.name} ({gpus}, {self.cpu_arch.value})"


B200 = Gpu("B200", hbm_gib=180)
GB200_GPU = Gpu("B200 (GB200 superchip)", hbm_gib=186)
H100 = Gpu("H100", hbm_gib=80)

B200_NODE = NodeType(
    name="B200",
    gpu=B200,
    gpus_per_node=8,
    cpu_arch=CpuArch.X86_64,
    interconnect=Interconnect.INFINIBAND,
)
GB200_NODE = NodeType(
    name="GB200",
    gpu=GB200_GPU,
    gpus_per_node=4,
    cpu_arch=CpuArch.AARCH64,
    interconnect=Interconnect.MULTI_NODE_NVLINK,
    needs_imex_channel=True,
    # NVL72: 72 GPUs, 18 compute trays of 4, one NVLink domain.
    nvlink_domain_nodes=18,
)
H100_NODE = NodeType(
    name="H100",
    gpu=H100,
    gpus_per_node=8,
    cpu_arch=CpuArch.X86_64,
    interconnect=Interconnect.INFINIBAND,
)


@attrs.frozen
class Hardware:
    """``num_nodes`` nodes of one ``node`` type: what the Slurm allocation holds."""

    node: NodeType
    num_nodes: int = attrs.field(validator=at_least(1))

    @property
    def gpus_per_node(self) -> int:
        return self.node.gpus_per_node

    @property
    def total_gpus(self) -> int:
        return self.num_nodes * self.node.gpus_per_node

    def __str__(self) -> str:
        return f"{self.num_nodes} x {self.node}"
