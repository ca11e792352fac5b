"""How a Megatron-Bridge stage splits the model over its GPUs.

Every GPU runs one rank (``launch="per-gpu"``); Megatron-Core groups the ranks into tensor,
pipeline and context parallel groups, and what is left over is data parallel. The MoE layers
regroup the same ranks: expert parallel x expert tensor parallel within each pipeline stage.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import attrs

from recipekit.hardware import Hardware
from recipekit.megatron_bridge.schema import MegatronBridgeConfig
from recipekit.parallelism import megatron_layouts


@attrs.frozen(kw_only=True)
class Layout:
    nodes: int
    gpus_per_node: int
    tensor_parallel: int
    pipeline_parallel: int
    context_parallel: int
    expert_parallel: int
    expert_tensor_parallel: int

    @property
    def total_gpus(self) -> int:
        return self.nodes * self.gpus_per_node

    @property
    def model_parallel(self) -> int:
        return self.tensor_parallel * self.pipeline_parallel * self.context_parallel

    @property
    def fits(self) -> bool:
        return self.total_gpus % self.model_parallel == 0

    @property
    def data_parallel(self) -> int:
        """GPUs / (TP x PP x CP); 0 when that does not divide (the plan reports it)."""
        return self.total_gpus // self.model_parallel if self.fits else 0

    @property
    def expert_group(self) -> int:
        return self.expert_parallel * self.expert_tensor_parallel * self.pipeline_parallel

    def as_json(self) -> dict[str, Any]:
        return {
            **attrs.asdict(self),
            "total_gpus": self.total_gpus,
            "data_parallel": self.data_parallel,
        }


def compute_layout(config: MegatronBridgeConfig | Any, hardware: Hardware) -> Layout:
    """The layout of a config whose ``model`` section holds Megatron-Core's parallel sizes
    (a training stage's, or the HF export's, which has no context parallelism)."""
    model = config.model
    return Layout(
        nodes=hardware.num_nodes,
        gpus_per_node=hardware.gpus_per_node,
        tensor_parallel=model.tensor_model_parallel_size,
        pipeline_parallel=model.pipeline_model_parallel_size,
        context_parallel=getattr(model, "context_parallel_size", 1),
        expert_parallel=model.expert_model_parallel_size,
        expert_tensor_parallel=model.expert_tensor_parallel_size,
    )


MEGATRON_KEYS = {
    "tp": "model.tensor_model_parallel_size",
    "pp": "model.pipeline_model_parallel_size",
    "cp": "model.context_parallel_size",
    "ep": "model.expert_model_parallel_size",
    "etp": "model.expert_tensor_parallel_size",
}
FIRST_STAGE = "model.num_layers_in_first_pipeline_stage"


def layout_candidates(
    base: Layout, hardware: Hardware, num_layers: int, num_experts: int
) -> Iterator[tuple[Layout, dict[str, Any]]]:
    """Every Megatron-Core layout of the stage's GPUs, with the overrides that make it. A
    pipeline split other than the recipe's is an even one (the first stage's layer count,
    tuned for the recipe's, is dropped)."""
    for sizes in megatron_layouts(base.total_gpus, hardware.node, num_layers, num_experts):
        layout = attrs.evolve(
            base,
            nodes=hardware.num_nodes,
            gpus_per_node=hardware.gpus_per_node,
            tensor_parallel=sizes.tp,
            pipeline_parallel=sizes.pp,
            context_parallel=sizes.cp,
            expert_parallel=sizes.ep,
            expert_tensor_parallel=sizes.etp,
        )
        overrides: dict[str, Any] = {
            MEGATRON_KEYS[name]: getattr(sizes, name) for name in MEGATRON_KEYS
        }
        if sizes.pp != base.pipeline_parallel:
            overrides[FIRST_STAGE] = None
        yield layout, overrides
