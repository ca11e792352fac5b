"""What the plan must know about the model being trained to check a layout against it."""

from __future__ import annotations

import attrs


@attrs.frozen(kw_only=True)
class ModelCard:
    name: str
    total_params_b: float
    active_params_b: float
    num_layers: int
    # Routed experts per MoE layer; 0 for a dense model.
    num_experts: int = 0

    @property
    def is_moe(self) -> bool:
        return self.num_experts > 0


NEMOTRON_3_SUPER_120B = ModelCard(
    name="NVIDIA-Nemotron-3-Super-120B-A12B",
    total_params_b=120,
    active_params_b=12,
    num_layers=88,
    num_experts=512,
)

# Seed 004, "Model Specifications": the Super 3 backbone plus the Omni image and video stack
# (C-RADIO encoder, projector, temporal embedder; no audio); 124.453B counted with them and MTP.
NEMOTRON_35_SUPER_VL_120B = ModelCard(
    name="NVIDIA-Nemotron-3.5-Super-VL-120B-A12B",
    total_params_b=120,
    active_params_b=12,
    num_layers=88,
    num_experts=512,
)
