"""A Megatron-Bridge training run as memory: one phase, the Megatron-Core rank that holds most.

The config holds only what the stage changes from the recipe function. Where it says nothing,
the estimate takes what Megatron-Bridge's Nemotron 3 Super recipe runs with, as its
verification card records (NVIDIA-NeMo/Megatron-Bridge, ``examples/model_verification_cards/
nemotron-3-super-120b-a12b/card.yaml``, pretrain.H100): selective recompute of layernorm,
moe_act, moe and core_attn, no optimizer offload, fp32 gradient reduction, the distributed
optimizer.
"""

from __future__ import annotations

from typing import Any

from recipekit.hardware import Hardware
from recipekit.megatron_bridge.layout import Layout
from recipekit.memory.estimate import MemoryEstimate, Phase
from recipekit.memory.megatron import FP32, MegatronSetup, training_terms
from recipekit.model_card import ModelCard

RECIPE_RECOMPUTE_MODULES = ("layernorm", "moe_act", "moe", "core_attn")


def megatron_setup(rendered: dict[str, Any], layout: Layout) -> MegatronSetup:
    model = rendered.get("model") or {}
    train = rendered.get("train") or {}
    optimizer = rendered.get("optimizer") or {}
    ddp = rendered.get("ddp") or {}
    granularity = model.get("recompute_granularity") or "selective"
    modules = model.get("recompute_modules") or RECIPE_RECOMPUTE_MODULES
    offload = optimizer.get("optimizer_offload_fraction") or 0.0
    peft = bool(rendered.get("peft"))
    return MegatronSetup.of(
        layout.parallel,
        tokens=int(model.get("seq_length") or 4096) * int(train.get("micro_batch_size") or 1),
        recompute=str(granularity),
        recompute_modules=tuple(modules),
        distributed_optimizer=optimizer.get("use_distributed_optimizer", True) is not False,
        optimizer_offload=float(offload) if optimizer.get("optimizer_cpu_offload") else 0.0,
        grad_bytes=FP32 if ddp.get("grad_reduce_in_fp32", True) else 2,
        mtp=bool(model.get("mtp_num_layers")),
        train_language=not (peft or model.get("freeze_language_model")),
        train_vision=not (
            model.get("freeze_vision_model") and model.get("freeze_vision_projection")
        ),
        keys={
            **layout.keys.size_keys(),
            "dp": "the number of nodes",
            "optimizer_offload": "optimizer.optimizer_cpu_offload",
            "recompute": "model.recompute_granularity",
            "tokens": "model.seq_length",
        },
    )


def estimate(
    rendered: dict[str, Any], hardware: Hardware, card: ModelCard, layout: Layout
) -> MemoryEstimate | None:
    arch = card.architecture
    if arch is None or not layout.parallel.dp:
        return None
    setup = megatron_setup(rendered, layout)
    phase = Phase("training", "all GPUs", training_terms(arch, setup), hardware.node.gpu.hbm_gib)
    assumed = [] if rendered.get("model", {}).get("recompute_granularity") else [
        "recompute: the recipe's selective recompute of " + ", ".join(RECIPE_RECOMPUTE_MODULES)
    ]
    if rendered.get("peft"):
        assumed.append("PEFT: the adapters' own parameters and state are not counted")
    return MemoryEstimate(phases=(phase,), assumptions=tuple(assumed))
