"""How a Megatron-Bridge stage splits the model over its GPUs.

Every GPU runs one rank (``launch="per-gpu"``); Megatron-Core groups the ranks into tensor,
pipeline and context parallel groups, and what is left over is data parallel. The MoE layers
regroup the same ranks: expert parallel x expert tensor parallel within each pipeline stage.
The sizes are one :class:`recipekit.parallelism.ParallelLayout`, read from the ``model``
section by the framework's key table.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import attrs

from recipekit.hardware import Hardware
from recipekit.parallelism import (
    MEGATRON_BRIDGE,
    ParallelKeys,
    ParallelLayout,
    megatron_layouts,
)

# The HF export's converter: no context parallelism, no interleaving, an even pipeline split.
EXPORT = ParallelKeys(
    "model", vpp=None, cp=None, sp=None, first_stage_layers=None, last_stage_layers=None
)


@attrs.frozen(kw_only=True)
class Layout:
    nodes: int
    gpus_per_node: int
    parallel: ParallelLayout
    keys: ParallelKeys = attrs.field(default=MEGATRON_BRIDGE, eq=False)

    @property
    def total_gpus(self) -> int:
        return self.nodes * self.gpus_per_node

    def as_json(self) -> dict[str, Any]:
        return {
            "nodes": self.nodes,
            "gpus_per_node": self.gpus_per_node,
            **self.parallel.plan_sizes(),
            "total_gpus": self.total_gpus,
            **self.parallel.plan_data_parallel(),
        }


def compute_layout(config: Any, hardware: Hardware, keys: ParallelKeys = MEGATRON_BRIDGE) -> Layout:
    """The layout of a config whose ``model`` section holds Megatron-Core's parallel sizes
    (a training stage's, or the HF export's with ``EXPORT``)."""
    return Layout(
        nodes=hardware.num_nodes,
        gpus_per_node=hardware.gpus_per_node,
        parallel=keys.read(config.model, hardware.total_gpus),
        keys=keys,
    )


def layout_candidates(
    base: Layout, hardware: Hardware, num_layers: int, num_experts: int
) -> Iterator[tuple[Layout, dict[str, Any]]]:
    """Every Megatron-Core layout of the stage's GPUs, with the overrides that make it."""
    for parallel in megatron_layouts(
        hardware.total_gpus, hardware.node, num_layers, num_experts, base.parallel
    ):
        if not base.keys.has("cp") and parallel.cp > 1:
            continue
        layout = attrs.evolve(
            base,
            nodes=hardware.num_nodes,
            gpus_per_node=hardware.gpus_per_node,
            parallel=parallel,
        )
        yield layout, base.keys.overrides(parallel, base.parallel)
