"""The Megatron performance keys of NeMo-RL's examples schema
(``schema_common.MegatronExamplesMain``: activation offloading and CUDA graphs), which
NeMo-RL's ``apply_performance_config`` copies onto the model provider before the workers start
(super-v3.5-posttraining only)."""

from __future__ import annotations

from collections.abc import Iterator

from recipekit.errors import Issue
from recipekit.nemo_rl.checks import CheckContext
from recipekit.nemo_rl.keys import value_of
from recipekit.nemo_rl.rules.citation import mirrors

MEGATRON = "policy.megatron_cfg"
# The offloadable modules that exist only in MoE layers (setup.py, _apply_performance_config's
# moe_only_modules @ super-v3.5).
MOE_ONLY_OFFLOAD_MODULES = ("expert_fc1", "moe_act", "fused_group_mlp")


def _offloaded_modules(ctx: CheckContext) -> tuple[str, ...] | None:
    """The modules whose activations go to the host, when fine-grained offloading is on;
    None when it is off (NeMo-RL then ignores offload_modules)."""
    m = ctx.megatron
    if value_of(m, "fine_grained_activation_offloading") is not True:
        return None
    modules = value_of(m, "offload_modules")
    return modules if isinstance(modules, tuple) else ()


@mirrors(
    v35="nemo-rl.models.megatron.setup.apply-performance-config.moe-only-offload-module-needs-moe"
)
def moe_only_offload_modules_need_moe_model(ctx: CheckContext) -> Iterator[Issue]:
    """setup.py, _apply_performance_config (super-v3.5): the expert modules exist only in a MoE
    model."""
    modules = _offloaded_modules(ctx) or ()
    moe_only = sorted(set(modules) & set(MOE_ONLY_OFFLOAD_MODULES))
    if moe_only and ctx.model.is_dense:
        yield Issue(
            f"{MEGATRON}.offload_modules",
            f"NeMo-RL's Megatron setup refuses {', '.join(moe_only)} on {ctx.model.name}, a "
            "dense model: they are MoE-only modules",
            value=list(modules),
            hint=f"drop {', '.join(moe_only)}",
        )


@mirrors(
    v35="nemo-rl.models.policy.workers.megatron-policy-worker.init.full-iteration-cuda-graphs-turn-nan"
)
def full_iteration_cuda_graph_skips_nan_check(ctx: CheckContext) -> Iterator[Issue]:
    """megatron_policy_worker.py, MegatronPolicyWorkerImpl.__init__ (super-v3.5): a graph of the
    whole iteration cannot stop at a NaN loss, so NeMo-RL turns Megatron's NaN-in-loss check off."""
    if value_of(ctx.megatron, "cuda_graph_impl") == "full_iteration":
        yield Issue(
            f"{MEGATRON}.cuda_graph_impl",
            "NeMo-RL's Megatron worker warns and disables check_for_nan_in_loss: a "
            "full-iteration CUDA graph cannot be interrupted, so a NaN loss goes unnoticed",
            value="full_iteration",
        )


ERROR_CHECKS = (moe_only_offload_modules_need_moe_model,)
WARNING_CHECKS = (full_iteration_cuda_graph_skips_nan_check,)
