"""A Megatron-Bridge training run as memory: one phase, the Megatron-Core rank that holds most.

The config holds only what the stage changes from the recipe function. Where it says nothing,
the estimate takes what Megatron-Bridge's Nemotron 3 Super recipe runs with, as its
verification card records (NVIDIA-NeMo/Megatron-Bridge, ``examples/model_verification_cards/
nemotron-3-super-120b-a12b/card.yaml``, pretrain.H100): selective recompute of layernorm,
moe_act, moe and core_attn, no optimizer offload, fp32 gradient reduction, the distributed
optimizer.
"""

from __future__ import annotations

from recipekit.hardware import Hardware
from recipekit.markers import given, given_at
from recipekit.megatron_bridge.layout import Layout
from recipekit.megatron_bridge.schema import LoRA, MegatronBridgeConfig, Model, Optimizer
from recipekit.memory.estimate import MemoryEstimate, Phase
from recipekit.memory.megatron import (
    FP32,
    AdamState,
    MegatronSetup,
    adam_state,
    dtype_bytes,
    training_terms,
)
from recipekit.memory.switches import allocator_conf, expandable
from recipekit.model_card import Architecture, ModelCard

RECIPE_RECOMPUTE = "selective"
RECIPE_RECOMPUTE_MODULES = ("layernorm", "moe_act", "moe", "core_attn")


def megatron_setup(
    config: MegatronBridgeConfig, layout: Layout, arch: Architecture
) -> MegatronSetup:
    model, train = config.model, config.train
    optimizer = given(config.optimizer, Optimizer())
    offload = given(optimizer.optimizer_offload_fraction, 0.0)
    modules = given(model.recompute_modules, None)
    return MegatronSetup.of(
        layout.parallel,
        tokens=model.seq_length * train.micro_batch_size,
        # A pipeline stage holds at most the step's micro-batches in flight.
        microbatches=max(
            1, train.global_batch_size // (train.micro_batch_size * layout.parallel.dp)
        )
        if layout.parallel.dp
        else None,
        recompute=given(model.recompute_granularity, None) or RECIPE_RECOMPUTE,
        recompute_modules=tuple(modules or RECIPE_RECOMPUTE_MODULES),
        # Megatron-Core requires both under full recompute (TransformerConfig.__post_init__).
        recompute_method=given(model.recompute_method, None) or "uniform",
        recompute_num_layers=given(model.recompute_num_layers, None) or 1,
        # The stage sets neither (no ddp section): the recipes' distributed optimizer and fp32
        # gradient reduction.
        distributed_optimizer=True,
        optimizer_offload=float(offload) if given(optimizer.optimizer_cpu_offload, False) else 0.0,
        adam=optimizer_state(optimizer, model, config),
        grad_bytes=FP32,
        # No key of the stage sets MTP: the model's bridge takes it from the HF config
        # (Megatron-Bridge models/nemotronh/nemotron_h_bridge.py, hf_config_to_model_config:
        # mtp_num_layers = num_nextn_predict_layers), so a model with MTP depths trains them.
        mtp=arch.mtp_depth > 0,
        # Unset, the depths share one block, as the Nemotron recipes set it and the cards count.
        mtp_shared=given_at(model, "mtp_use_repeated_layer") is not False,
        train_language=not (is_peft(config) or model.freeze_language_model),
        train_vision=not (model.freeze_vision_model and model.freeze_vision_projection),
        # The job's environment first: Megatron-Bridge only setdefaults its env_vars.
        expandable_segments=expandable(
            allocator_conf(given(getattr(config, "env_vars", None), None), config_first=False)
        ),
        cross_entropy=cross_entropy(model),
        keys={
            **layout.keys.size_keys(),
            "dp": "the number of nodes",
            "optimizer_offload": "optimizer.optimizer_cpu_offload",
            "recompute": "model.recompute_granularity",
            "recompute_method": "model.recompute_method",
            "recompute_num_layers": "model.recompute_num_layers",
            "tokens": "model.seq_length",
            "cross_entropy": "model.cross_entropy_loss_fusion",
        },
    )


def optimizer_state(optimizer: Optimizer, model: Model, config: MegatronBridgeConfig) -> AdamState:
    """Adam's state as the stage's optimizer section sets Megatron-Core's precision-aware
    optimizer (``adam_state``); a key it leaves unset is Megatron-Core's default. Parameters
    are bf16 unless the stage trains in fp16 (``model.fp16``, or an fp16 mixed-precision
    preset)."""
    preset = given(getattr(config, "mixed_precision", None), None)
    fp16 = given_at(model, "fp16") is True or (
        isinstance(preset, str) and preset.startswith("fp16")
    )
    recipe = given_at(optimizer, "fp8_recipe")
    return adam_state(
        precision_aware=given_at(optimizer, "use_precision_aware_optimizer") is True,
        main_params=given_at(optimizer, "main_params_dtype"),
        exp_avg=given_at(optimizer, "exp_avg_dtype"),
        exp_avg_sq=given_at(optimizer, "exp_avg_sq_dtype"),
        bf16_params=not fp16,
        store_param_remainders=given_at(optimizer, "store_param_remainders") is not False,
        # Megatron-Core's use_precision_aware_optimizer_no_fp8_or_ds_fp8 (optimizer_config.py):
        # the optimizer's own fp8_recipe, None unless the stage sets it.
        te_master_weights=dtype_bytes(given_at(optimizer, "main_params_dtype")) != FP32
        or recipe in (None, "delayed")
        or given(optimizer.optimizer_cpu_offload, False) is True,
    )


def cross_entropy(model: Model) -> str:
    """The loss's cross entropy as MegatronSetup names it. Megatron-Bridge's providers fuse it
    (GPTModelProvider and HybridModelProvider declare ``cross_entropy_loss_fusion: bool = True``
    @ 067f987df) with Megatron-Core's default implementation (ModelParallelConfig's
    ``cross_entropy_fusion_impl = 'native'`` @ 0.19.2), where the stage sets neither."""
    if given_at(model, "cross_entropy_loss_fusion") is False:
        return "unfused"
    return str(given_at(model, "cross_entropy_fusion_impl") or "native")


def is_peft(config: MegatronBridgeConfig) -> bool:
    """The stage trains adapters (``peft`` set; null turns the recipe's adapter off)."""
    return isinstance(config.peft, LoRA)


def estimate(
    config: MegatronBridgeConfig, hardware: Hardware, card: ModelCard, layout: Layout
) -> MemoryEstimate | None:
    arch = card.architecture
    if arch is None or not layout.parallel.dp:
        return None
    setup = megatron_setup(config, layout, arch)
    phase = Phase("training", "all GPUs", training_terms(arch, setup), hardware.node.gpu.hbm_gib)
    assumed = (
        []
        if given(config.model.recompute_granularity, None)
        else [
            "recompute: the recipe's selective recompute of " + ", ".join(RECIPE_RECOMPUTE_MODULES)
        ]
    )
    if is_peft(config):
        assumed.append("PEFT: the adapters' own parameters and state are not counted")
    return MemoryEstimate(phases=(phase,), assumptions=tuple(assumed))
