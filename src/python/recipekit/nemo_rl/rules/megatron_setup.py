"""NeMo-RL's Megatron setup (``nemo_rl/models/megatron/setup.py``): precision flags of the
optimizer, FP8, CPU offloading, and what the fused linear log-probabilities exclude."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from recipekit.errors import Issue
from recipekit.markers import UNSET, Marker, Unset, given_at
from recipekit.nemo_rl import SUPER35_TYPES
from recipekit.nemo_rl.checks import CheckContext
from recipekit.nemo_rl.keys import value_of
from recipekit.nemo_rl.rules.citation import cite, mirrors
from recipekit.nemo_rl.rules.loss import fused_linear_logprobs
from recipekit.nemo_rl.schema_super_v3 import FP8, Colocation
from recipekit.upstream.allowed import allowed

if TYPE_CHECKING:
    # The examples' schema is imported by the stages that run an example, not by every plan.
    from recipekit.nemo_rl.schema_common import MegatronPeft

MEGATRON = "policy.megatron_cfg"
OPTIMIZER = f"{MEGATRON}.optimizer"
FP8_KEYS = ("fp8", "fp8_recipe", "fp8_param")
# The keys whose difference between training and the Megatron inference model makes NeMo-RL
# build a second model and reshard into it (generation/megatron/config.py,
# dedicated_inference_megatron_cfg's layout_keys @ super-v3.5).
INFERENCE_LAYOUT_KEYS = (
    "tensor_model_parallel_size",
    "pipeline_model_parallel_size",
    "expert_model_parallel_size",
    "expert_tensor_parallel_size",
)


def enabled_peft(ctx: CheckContext) -> MegatronPeft | Mapping[str, Any] | None:
    """The Megatron LoRA section (``policy.megatron_cfg.peft``, which NeMo-RL reads with
    ``.get("peft", {})``) when it is on: a ``MegatronPeft`` where the stage's schema states it,
    else the mapping upstream's declared ``PeftConfig`` checked."""
    peft: MegatronPeft | Mapping[str, Any] | Unset | None = value_of(ctx.megatron, "peft")
    if peft is None or peft is UNSET:
        return None
    enabled = peft.get("enabled") if isinstance(peft, Mapping) else peft.enabled
    return peft if enabled is True else None


def _half_precision_optimizer(
    ctx: CheckContext, precision: str, flag: str, v3: str, v35: str
) -> Iterator[Issue]:
    """The precision-aware optimizer keeps its states in the policy's half precision, which
    NeMo-RL asks the optimizer section to state (the model's flags it sets itself)."""
    m = ctx.megatron
    if m is None or ctx.config.policy.precision != precision:
        return
    opt = m.optimizer
    if opt.use_precision_aware_optimizer and getattr(opt, flag) is not True:
        yield Issue(
            f"{OPTIMIZER}.{flag}",
            f"NeMo-RL's Megatron setup refuses it false with policy.precision {precision} and "
            f"use_precision_aware_optimizer ({cite(ctx, v3=v3, v35=v35)})",
            value=getattr(opt, flag),
            hint="set it true, or use_precision_aware_optimizer false",
        )


def precision_aware_optimizer_states_bf16(ctx: CheckContext) -> Iterator[Issue]:
    """setup.py, _validate_dtype_config: a precision-aware optimizer keeps its states in bf16."""
    yield from _half_precision_optimizer(
        ctx,
        "bfloat16",
        "bf16",
        v3="nemo-rl.v3.models.megatron.setup.validate-dtype-config.bfloat16-precision-aware-optimizer-has-bf16",
        v35="nemo-rl.models.megatron.setup.validate-dtype-config.bfloat16-precision-aware-optimizer-has-bf16",
    )


def precision_aware_optimizer_states_fp16(ctx: CheckContext) -> Iterator[Issue]:
    """setup.py, _validate_dtype_config: a precision-aware optimizer keeps its states in fp16."""
    yield from _half_precision_optimizer(
        ctx,
        "float16",
        "fp16",
        v3="nemo-rl.v3.models.megatron.setup.validate-dtype-config.float16-precision-aware-optimizer-has-fp16",
        v35="nemo-rl.models.megatron.setup.validate-dtype-config.float16-precision-aware-optimizer-has-fp16",
    )


@mirrors(
    v3="nemo-rl.v3.models.megatron.setup.validate-dtype-config.float32-policy-optimizer-has-bf16-fp16",
    v35="nemo-rl.models.megatron.setup.validate-dtype-config.float32-policy-optimizer-has-bf16-fp16",
)
def float32_optimizer_takes_no_half_flags(ctx: CheckContext) -> Iterator[Issue]:
    """setup.py, _validate_dtype_config (super-v3 and super-v3.5): a float32 policy's optimizer is
    float32."""
    m = ctx.megatron
    if m is None or ctx.config.policy.precision != "float32":
        return
    for flag in ("bf16", "fp16"):
        if getattr(m.optimizer, flag) is True:
            yield Issue(
                f"{OPTIMIZER}.{flag}",
                "NeMo-RL's Megatron setup refuses it with policy.precision float32",
                value=True,
                hint="set it false",
            )


# What Megatron setup requires of a yarn rope_scaling override, read from the pinned source.
YARN_FIELDS = allowed("nemo_rl.yarn_required_field", SUPER35_TYPES).values


@mirrors(v35="nemo-rl.models.megatron.setup.validate-and-set-config.yarn-rope-scaling-complete")
def yarn_rope_scaling_names_every_field(ctx: CheckContext) -> Iterator[Issue]:
    """setup.py, validate_and_set_config: a yarn rope_scaling override gives every field yarn
    needs; Megatron-Core does not fill the rest from the checkpoint's config."""
    if ctx.megatron is None:
        return
    rope = given_at(ctx.config.policy, "hf_config_overrides")
    rope = rope.get("rope_scaling") if isinstance(rope, dict) else None
    if not isinstance(rope, dict) or rope.get("rope_type") != "yarn":
        return
    missing = [f for f in YARN_FIELDS if f not in rope]
    if missing:
        yield Issue(
            "policy.hf_config_overrides.rope_scaling",
            f"NeMo-RL's Megatron setup refuses a yarn override without {', '.join(missing)}",
            hint=f"give all of {', '.join(YARN_FIELDS)}",
        )


def _fp8(ctx: CheckContext) -> FP8 | None:
    m = ctx.megatron
    cfg = m.fp8_cfg if m is not None else None
    return cfg if isinstance(cfg, FP8) and cfg.enabled else None


def fp8_cfg_names_every_key(ctx: CheckContext) -> Iterator[Issue]:
    """setup.py, _apply_performance_config (super-v3 and super-v3.5): an enabled fp8_cfg is read key
    by key."""
    fp8 = _fp8(ctx)
    missing = [key for key in FP8_KEYS if fp8 is not None and getattr(fp8, key) is UNSET]
    if missing:
        yield Issue(
            f"{MEGATRON}.fp8_cfg.{missing[0]}",
            f"NeMo-RL's Megatron setup fails with a KeyError when an enabled fp8_cfg lacks it "
            f"(it reads {', '.join(FP8_KEYS)}; "
            + cite(
                ctx,
                v3="nemo-rl.v3.models.megatron.setup.apply-performance-config.enabled-fp8-cfg-names-fp8-fp8",
                v35="nemo-rl.models.megatron.setup.apply-performance-config.enabled-fp8-cfg-names-fp8-fp8",
            )
            + ")",
        )


def fp8_param_may_give_nan(ctx: CheckContext) -> Iterator[Issue]:
    """setup.py, _apply_performance_config (super-v3): FP8 parameters sometimes make
    token_mult_prob_error NaN (NVIDIA-NeMo/RL#1164)."""
    fp8 = _fp8(ctx)
    if fp8 is not None and fp8.fp8_param is True:
        yield Issue(
            f"{MEGATRON}.fp8_cfg.fp8_param",
            "NeMo-RL warns that FP8 parameters sometimes give a NaN token_mult_prob_error "
            "(NVIDIA-NeMo/RL#1164; "
            + cite(
                ctx,
                v3="nemo-rl.v3.models.megatron.setup.apply-performance-config.fp8-parameters-may-make-token-mult",
            )
            + ")",
            value=True,
        )


@mirrors(
    v35="nemo-rl.models.megatron.setup.apply-parallelism-config.context-parallelism-excludes-fused-linear-logprobs"
)
def fused_logprobs_without_context_parallel(ctx: CheckContext) -> Iterator[Issue]:
    """setup.py, _apply_parallelism_config (super-v3.5): the linear cross-entropy fusion does not
    split over CP."""
    m = ctx.megatron
    if m is not None and fused_linear_logprobs(ctx) and m.context_parallel_size > 1:
        yield Issue(
            f"{MEGATRON}.use_fused_linear_logprobs",
            f"NeMo-RL's Megatron setup refuses it with context_parallel_size = "
            f"{m.context_parallel_size}: the fused loss does not support context parallelism",
            value=True,
        )


def _colocated_reshard(ctx: CheckContext) -> bool:
    """Colocated Megatron generation whose inference model differs from training's
    (another layout, another transformer_impl, or training CP > 1, since inference runs at
    CP 1), which NeMo-RL reshards into (setup.py, setup_model_and_optimizer's
    colocated_reshard_plan @ super-v3.5)."""
    m, gen = ctx.megatron, ctx.generation
    if m is None or gen is None or gen.backend != "megatron":
        return False
    if not isinstance(gen.colocated, Colocation) or not gen.colocated.enabled:
        return False
    inference = gen.mcore_generation_config
    if isinstance(inference, Marker):
        return m.context_parallel_size > 1
    differs = any(
        not isinstance(value_of(inference, key, UNSET), Marker)
        and getattr(inference, key) != getattr(m, key)
        for key in INFERENCE_LAYOUT_KEYS
    )
    impl = value_of(inference, "transformer_impl", UNSET)
    return differs or not isinstance(impl, Marker) or m.context_parallel_size > 1


@mirrors(
    v35="nemo-rl.models.megatron.setup.setup-model-and-optimizer.colocated-megatron-reshard-excludes-draft-model"
)
def colocated_reshard_without_draft(ctx: CheckContext) -> Iterator[Issue]:
    """setup.py, setup_model_and_optimizer (super-v3.5): resharding into a separate inference model
    does not carry a draft model."""
    if ctx.trains_a_draft and _colocated_reshard(ctx):
        yield Issue(
            "policy.draft.enabled",
            "NeMo-RL's Megatron setup refuses a draft model when colocated Megatron generation "
            "runs another layout than training (it reshards into a second model)",
            value=True,
            hint="give mcore_generation_config training's layout, or disable the draft",
        )


@mirrors(
    v35="nemo-rl.models.megatron.setup.setup-model-and-optimizer.colocated-megatron-reshard-excludes-peft"
)
def colocated_reshard_without_peft(ctx: CheckContext) -> Iterator[Issue]:
    """setup.py, setup_model_and_optimizer (super-v3.5): resharding into a separate inference model
    does not carry LoRA adapters."""
    if enabled_peft(ctx) is not None and _colocated_reshard(ctx):
        yield Issue(
            "policy.megatron_cfg.peft.enabled",
            "NeMo-RL's Megatron setup refuses PEFT when colocated Megatron generation runs "
            "another layout than training (it reshards into a second model)",
            value=True,
            hint="give mcore_generation_config training's layout, or disable peft",
        )


ERROR_CHECKS = (
    precision_aware_optimizer_states_bf16,
    precision_aware_optimizer_states_fp16,
    float32_optimizer_takes_no_half_flags,
    fp8_cfg_names_every_key,
    fused_logprobs_without_context_parallel,
    colocated_reshard_without_draft,
    colocated_reshard_without_peft,
)
WARNING_CHECKS = (fp8_param_may_give_nan,)
