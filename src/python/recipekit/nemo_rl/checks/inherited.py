"""Warnings: settings NeMo-RL silently ignores, or that look inherited from another config."""

from __future__ import annotations

import re
from collections.abc import Iterator

from recipekit.errors import Issue
from recipekit.markers import UNSET
from recipekit.nemo_rl.checks.context import (
    MEGATRON,
    CheckContext,
)
from recipekit.nemo_rl.schema_super_v3 import (
    AdvantageEstimator,
)

_DENSE_MOE_DEFAULTS = {
    "freeze_moe_router": True,
    "moe_router_dtype": "fp64",
    "moe_router_load_balancing_type": "none",
    "moe_router_bias_update_rate": 0.0,
}

_DENSE_CONVERTERS = re.compile(r"(Qwen2|Llama|Mistral|Gemma\d?)ForCausalLM")

_GPU_NAMES = re.compile(r"(gb200|b200|h100|h200|a100)", re.IGNORECASE)

_UNREAD_MEGATRON_KEYS = ("moe_aux_loss_coeff",)


def leave_one_out_shadowed_by_adv_estimator(ctx: CheckContext) -> Iterator[Issue]:
    grpo = ctx.config.grpo
    est = grpo.adv_estimator
    if not isinstance(est, AdvantageEstimator):
        return
    for key in ("use_leave_one_out_baseline", "normalize_rewards"):
        top, inner = getattr(grpo, key), getattr(est, key)
        if isinstance(inner, bool) and top != inner:
            also = (
                "; the top-level value still drives dynamic sampling's per-sample std filter"
                if key == "use_leave_one_out_baseline"
                else ""
            )
            yield Issue(
                f"grpo.{key}",
                f"shadowed on super-v3: advantages use grpo.adv_estimator.{key} = {inner}{also}",
                value=top,
                hint=f"set grpo.adv_estimator.{key} if {top} is what you want",
            )


# What grpo_math_1B.yaml sets for its 1B dense model; on an MoE model they are a trap.


def dense_settings_on_moe_model(ctx: CheckContext) -> Iterator[Issue]:
    m = ctx.megatron
    if m is None or not ctx.model.is_moe:
        return
    if isinstance(m.converter_type, str) and _DENSE_CONVERTERS.fullmatch(m.converter_type):
        yield Issue(
            f"{MEGATRON}.converter_type",
            f"a dense-model converter on {ctx.model.name} (MoE), inherited from "
            "grpo_math_1B.yaml; super-v3 never reads it",
            value=m.converter_type,
        )
    inherited = [k for k, v in _DENSE_MOE_DEFAULTS.items() if getattr(m, k) == v]
    if len(inherited) >= 2:
        shown = ", ".join(f"{k}={getattr(m, k)!r}" for k in inherited)
        yield Issue(
            MEGATRON,
            f"{shown} are grpo_math_1B.yaml's settings for a 1B dense model; on "
            f"{ctx.model.name} ({ctx.model.num_experts} experts) they freeze or disable the router",
            hint="set them for this model deliberately (the H100 recipe shows MoE values)",
        )


def tracking_names_mention_other_hardware(ctx: CheckContext) -> Iterator[Issue]:
    wandb = ctx.config.logger.wandb
    here = ctx.hardware.node.name.lower()
    for key in ("project", "name"):
        value = getattr(wandb, key)
        if not isinstance(value, str):
            continue
        named = {m.lower() for m in _GPU_NAMES.findall(value)}
        if named and here not in named:
            yield Issue(
                f"logger.wandb.{key}",
                f"names {'/'.join(sorted(named))} but this stage runs on {ctx.hardware.node.name}; "
                "copied from another variant?",
                value=value,
            )


# Keys that appear in upstream configs but that super-v3 never reads.


def megatron_keys_never_read(ctx: CheckContext) -> Iterator[Issue]:
    m = ctx.megatron
    if m is None:
        return
    for key in _UNREAD_MEGATRON_KEYS:
        value = getattr(m, key)
        if value is not UNSET:
            yield Issue(
                f"{MEGATRON}.{key}",
                "super-v3 never reads this key; the value comes from the converted checkpoint",
                value=value,
            )
