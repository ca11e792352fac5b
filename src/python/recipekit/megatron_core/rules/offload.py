"""Layer-wise CPU offloading of activations: TransformerConfig.__post_init__'s checks on
cpu_offloading. No stage key sets it; NeMo-RL's policy.megatron_cfg.model_overrides can."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from recipekit.errors import Issue
from recipekit.megatron_core.options import options_of
from recipekit.megatron_core.rules import cite


def cpu_offloading_layers_fit_the_model(ctx: Any) -> Iterator[Issue]:
    """transformer_config.py, TransformerConfig.__post_init__: the layers offloaded are 0 up to one
    less than the model's."""
    o = options_of(ctx)
    layers = ctx.model.num_layers
    if o is None or not o.cpu_offloading or not layers:
        return
    if not 0 <= o.cpu_offloading_num_layers < layers:
        yield Issue(
            o.key("cpu_offloading_num_layers", "cpu_offloading"),
            f"Megatron-Core offloads 0 up to {layers - 1} of {ctx.model.name}'s {layers} layers "
            + cite(
                "megatron-core.transformer-config.post-init.cpu-offloading-cpu-offloading-num-layers-num-layers"
            ),
            value=o.cpu_offloading_num_layers,
        )


def cpu_offloading_excludes_pipeline_parallelism(ctx: Any) -> Iterator[Issue]:
    """transformer_config.py, TransformerConfig.__post_init__: no CPU offloading with pipeline
    parallelism."""
    o = options_of(ctx)
    if o is not None and o.cpu_offloading and o.parallel.pp > 1:
        yield Issue(
            o.key("cpu_offloading"),
            f"Megatron-Core refuses CPU offloading with pipeline parallelism (PP = "
            f"{o.parallel.pp}) "
            + cite(
                "megatron-core.transformer-config.post-init.cpu-offloading-pipeline-model-parallel-size"
            ),
            value=True,
            hint=f"drop it, or set {o.key('pp')}=1",
        )


def cpu_offloading_excludes_recompute(ctx: Any) -> Iterator[Issue]:
    """transformer_config.py, TransformerConfig.__post_init__: no CPU offloading while activations
    are recomputed (NeMo-RL turns recomputation on with
    policy.megatron_cfg.activation_checkpointing)."""
    o = options_of(ctx)
    if o is not None and o.cpu_offloading and o.recompute_granularity is not None:
        yield Issue(
            o.key("cpu_offloading"),
            f"Megatron-Core refuses CPU offloading while activations are recomputed "
            f"({o.key('recompute_granularity')} is {o.recompute_granularity}) "
            + cite(
                "megatron-core.transformer-config.post-init.cpu-offloading-recompute-granularity"
            ),
            value=True,
            hint=f"drop it, or turn recomputation off: {_recompute_switch(o)}",
        )


def _recompute_switch(o: Any) -> str:
    if o.keys.framework == "nemo-rl":
        return "policy.megatron_cfg.activation_checkpointing=false"
    return f"{o.key('recompute_granularity')}=null"
