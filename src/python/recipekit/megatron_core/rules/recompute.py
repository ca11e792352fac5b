"""Activation recomputation: TransformerConfig.__post_init__'s checks on recompute_*."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from recipekit.errors import Issue
from recipekit.megatron_core.options import options_of, shared_experts
from recipekit.megatron_core.rules import cite

# TransformerConfig.__post_init__'s allowed_modules: the modules selective recomputation knows
# (megatron-core.transformer-config.post-init.recompute-module-one-megatron-core-knows).
RECOMPUTE_MODULES = frozenset(
    {
        "core_attn",
        "moe_act",
        "layernorm",
        "mla_up_proj",
        "mlp",
        "moe",
        "shared_experts",
        "gdn_norm_out",
    }
)


def _selective_modules(ctx: Any) -> tuple[Any, tuple[str, ...]] | None:
    o = options_of(ctx)
    if o is None or o.recompute_granularity != "selective":
        return None
    # TransformerConfig.__post_init__: no modules named is ["core_attn"].
    modules = o.recompute_modules if o.recompute_modules is not None else ("core_attn",)
    return o, modules


def full_recompute_names_a_method(ctx: Any) -> Iterator[Issue]:
    """transformer_config.py, TransformerConfig.__post_init__: full recomputation needs
    recompute_method block or uniform."""
    o = options_of(ctx)
    if o is not None and o.recompute_granularity == "full" and o.recompute_method is None:
        yield Issue(
            o.key("recompute_method", "recompute_granularity"),
            "Megatron-Core refuses full recomputation without a recompute_method: set "
            '"block" or "uniform" '
            + cite(
                "megatron-core.transformer-config.post-init.full-recomputation-needs-recompute-method-block"
            ),
            value=None,
        )


def full_recompute_names_its_layer_count(ctx: Any) -> Iterator[Issue]:
    """transformer_config.py, TransformerConfig.__post_init__: full recomputation needs
    recompute_num_layers."""
    o = options_of(ctx)
    if o is not None and o.recompute_granularity == "full" and o.recompute_num_layers is None:
        yield Issue(
            o.key("recompute_num_layers", "recompute_granularity"),
            "Megatron-Core refuses full recomputation without recompute_num_layers (1 up to "
            "the layers of one pipeline rank) "
            + cite(
                "megatron-core.transformer-config.post-init.full-recomputation-needs-recompute-num-layers"
            ),
            value=None,
        )


def selective_recompute_takes_no_layer_count(ctx: Any) -> Iterator[Issue]:
    """transformer_config.py, TransformerConfig.__post_init__: selective recomputation takes no
    recompute_num_layers."""
    o = options_of(ctx)
    if (
        o is not None
        and o.recompute_granularity == "selective"
        and o.recompute_num_layers is not None
    ):
        yield Issue(
            o.key("recompute_num_layers"),
            "Megatron-Core refuses a layer count with selective recomputation: it must be null "
            + cite(
                "megatron-core.transformer-config.post-init.selective-recomputation-takes-no-recompute-num"
            ),
            value=o.recompute_num_layers,
        )


def recompute_modules_are_known(ctx: Any) -> Iterator[Issue]:
    """transformer_config.py, TransformerConfig.__post_init__: every selective recompute module must
    be one it knows."""
    found = _selective_modules(ctx)
    if found is None:
        return
    o, modules = found
    unknown = sorted(set(modules) - RECOMPUTE_MODULES)
    if unknown:
        yield Issue(
            o.key("recompute_modules"),
            f"Megatron-Core does not know {', '.join(unknown)}: the modules are "
            f"{', '.join(sorted(RECOMPUTE_MODULES))} "
            + cite(
                "megatron-core.transformer-config.post-init.recompute-module-one-megatron-core-knows"
            ),
            value=list(modules),
        )


def moe_act_recompute_needs_grouped_gemm(ctx: Any) -> Iterator[Issue]:
    """transformer_config.py, TransformerConfig.__post_init__: moe_act recomputation needs
    grouped-GEMM experts, which the Nemotron-H provider uses (nemotron_h_bridge.py @
    067f987df)."""
    found = _selective_modules(ctx)
    if found is None:
        return
    o, modules = found
    arch = ctx.model.architecture
    grouped = arch is not None and arch.moe is not None and arch.mamba is not None
    if "moe_act" in modules and not grouped:
        yield Issue(
            o.key("recompute_modules"),
            "Megatron-Core recomputes moe_act only with grouped-GEMM experts, which "
            f"{ctx.model.name}'s provider does not use "
            + cite(
                "megatron-core.transformer-config.post-init.recomputing-moe-act-needs-grouped-gemm"
            ),
            value=list(modules),
        )


def mla_up_proj_recompute_needs_mla(ctx: Any) -> Iterator[Issue]:
    """transformer_config.py, TransformerConfig.__post_init__: mla_up_proj recomputation needs
    multi-latent attention, which no model recipekit knows has."""
    found = _selective_modules(ctx)
    if found is None:
        return
    o, modules = found
    if "mla_up_proj" in modules:
        yield Issue(
            o.key("recompute_modules"),
            f"Megatron-Core recomputes mla_up_proj only with multi-latent attention, which "
            f"{ctx.model.name} does not use "
            + cite(
                "megatron-core.transformer-config.post-init.recomputing-mla-up-proj-needs-multi"
            ),
            value=list(modules),
        )


def shared_experts_recompute_excludes_overlap(ctx: Any) -> Iterator[Issue]:
    """transformer_config.py, TransformerConfig.__post_init__: recomputing the shared experts cannot
    overlap them."""
    found = _selective_modules(ctx)
    if found is None:
        return
    o, modules = found
    if "shared_experts" in modules and shared_experts(ctx.model) and o.moe_shared_expert_overlap:
        yield Issue(
            o.key("recompute_modules"),
            "Megatron-Core cannot recompute shared_experts while moe_shared_expert_overlap is "
            "on "
            + cite(
                "megatron-core.transformer-config.post-init.shared-experts-cannot-recomputed-while-they"
            ),
            value=list(modules),
            hint=f"drop shared_experts, or set {o.key('moe_shared_expert_overlap')}=false",
        )


def delayed_fp8_recompute_excludes_moe_act_and_layernorm(ctx: Any) -> Iterator[Issue]:
    """transformer_config.py, TransformerConfig.__post_init__: selective recomputation of moe_act or
    layernorm under FP8 needs a recipe other than delayed scaling (NeMo-RL sets fp8 and fp8_recipe
    from an enabled policy.megatron_cfg.fp8_cfg; the Megatron-Bridge stages have no FP8 key)."""
    found = _selective_modules(ctx)
    if found is None:
        return
    o, modules = found
    clashing = [name for name in ("moe_act", "layernorm") if name in modules]
    if o.fp8 and o.fp8_recipe == "delayed" and clashing:
        yield Issue(
            o.key("recompute_modules"),
            f"Megatron-Core refuses recomputing {' and '.join(clashing)} with delayed-scaling "
            f'FP8: "Delayed scaling does not support moe_act and layernorm recompute for fp8" '
            + cite(
                "megatron-core.transformer-config.post-init.selective-recomputation-moe-act-layernorm-under-fp8"
            ),
            value=list(modules),
            hint=f"drop {', '.join(clashing)}, or set {o.key('fp8_recipe')} to another recipe "
            "(tensorwise, blockwise or mxfp8)",
        )


def core_attn_recompute_may_be_fused(ctx: Any) -> Iterator[Issue]:
    """transformer_config.py, TransformerConfig.__post_init__ (a warning): Transformer Engine's
    attention may already be fused, so recomputing core_attn may buy nothing."""
    found = _selective_modules(ctx)
    if found is None:
        return
    o, modules = found
    if "core_attn" in modules:
        yield Issue(
            o.key("recompute_modules", "recompute_granularity"),
            "Megatron-Core warns: with Transformer Engine the core attention may be the fused "
            "kernel, which needs no recomputation "
            + cite(
                "megatron-core.transformer-config.post-init.recomputing-core-attn-may-needless-under-transformer"
            ),
            value=list(modules),
        )
