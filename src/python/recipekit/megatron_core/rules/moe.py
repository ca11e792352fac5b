"""Mixture of experts: TransformerConfig.__post_init__'s checks on the token dispatcher, DeepEP,
shared-expert overlap and router precision."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from recipekit.errors import Issue
from recipekit.megatron_core.options import options_of, shared_experts
from recipekit.megatron_core.rules import cite


def deepep_needs_flex_dispatcher(ctx: Any) -> Iterator[Issue]:
    """transformer_config.py, TransformerConfig.__post_init__: DeepEP runs only under the flex token
    dispatcher."""
    o = options_of(ctx)
    if o is not None and o.moe_enable_deepep and o.moe_token_dispatcher_type != "flex":
        yield Issue(
            o.key("moe_token_dispatcher_type", "moe_enable_deepep"),
            "Megatron-Core runs DeepEP only with the flex token dispatcher "
            + cite("megatron-core.transformer-config.post-init.deepep-needs-flex-token-dispatcher"),
            value=o.moe_token_dispatcher_type,
            hint=f"set it to flex, or {o.key('moe_enable_deepep')}=false",
        )


def shared_expert_overlap_needs_alltoall_or_flex(ctx: Any) -> Iterator[Issue]:
    """transformer_config.py, TransformerConfig.__post_init__: overlapping the shared experts needs
    the alltoall or flex dispatcher."""
    o = options_of(ctx)
    if (
        o is not None
        and shared_experts(ctx.model)
        and o.moe_shared_expert_overlap
        and o.moe_token_dispatcher_type not in ("alltoall", "flex")
    ):
        yield Issue(
            o.key("moe_token_dispatcher_type"),
            "Megatron-Core overlaps the shared experts only under the alltoall or flex token "
            "dispatcher, and moe_shared_expert_overlap is on "
            + cite(
                "megatron-core.transformer-config.post-init.shared-expert-overlap-needs-alltoall-flex"
            ),
            value=o.moe_token_dispatcher_type,
        )


def deepep_flag_is_deprecated(ctx: Any) -> Iterator[Issue]:
    """transformer_config.py, TransformerConfig.__post_init__ (a warning): moe_enable_deepep is
    deprecated for the flex dispatcher's backend setting."""
    o = options_of(ctx)
    if o is not None and o.moe_enable_deepep and o.moe_token_dispatcher_type == "flex":
        yield Issue(
            o.key("moe_enable_deepep"),
            "Megatron-Core warns that it is deprecated in favour of "
            "moe_flex_dispatcher_backend=deepep "
            + cite(
                "megatron-core.transformer-config.post-init.moe-enable-deepep-deprecated-flex-backend"
            ),
            value=True,
        )


def many_experts_route_in_fp32(ctx: Any) -> Iterator[Issue]:
    """transformer_config.py, TransformerConfig.__post_init__ (a warning): 32 or more experts
    without a router dtype route in the model's precision."""
    o = options_of(ctx)
    if o is not None and ctx.model.num_experts >= 32 and not o.moe_router_dtype:
        yield Issue(
            o.key("moe_router_dtype"),
            f"Megatron-Core warns: {ctx.model.num_experts} experts routed without fp32 routing "
            "can be numerically unstable; set fp32 "
            + cite("megatron-core.transformer-config.post-init.32-more-experts-should-route-fp32"),
            value=o.moe_router_dtype,
        )
