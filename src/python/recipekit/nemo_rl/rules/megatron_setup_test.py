"""NeMo-RL's Megatron setup rules: a value that breaks each is refused (or warned about)."""

# The catalogued checks these tests break, which the rule catalogue's meta-test finds by
# name (recorded from the checks that produced an issue while these tests ran):
# cpu_offload_needs_distributed_optimizer, d2h_overlap_needs_cpu_offload,
# float32_optimizer_takes_no_half_flags, fp8_cfg_names_every_key, fp8_param_may_give_nan,
# fused_logprobs_without_context_parallel, fused_logprobs_without_param_gather_overlap,
# precision_aware_optimizer_states_bf16, precision_aware_optimizer_states_fp16,
# yarn_rope_scaling_names_every_field.

from __future__ import annotations

import pytest

from recipekit.markers import UNSET
from recipekit.nemo_rl.rule_lines import where
from recipekit.nemo_rl.rules.conftest import Plan, RefusedAt
from recipekit.stage import Stage
from recipes.super3.dapo import dapo_h100
from recipes.super35.rl import rlvr

OPT = "policy.megatron_cfg.optimizer"
FP8_ON = "policy.megatron_cfg.fp8_cfg.enabled=true"
FUSED = "policy.megatron_cfg.use_fused_linear_logprobs=true"
UNPACKED = "policy.sequence_packing.enabled=false"


@pytest.mark.parametrize(
    ("stage", "overrides", "key", "reason"),
    [
        (
            dapo_h100,
            (f"{OPT}.bf16=false",),
            f"{OPT}.bf16",
            where(
                "nemo-rl.v3.models.megatron.setup.validate-dtype-config.bfloat16-precision-aware-optimizer-has-bf16"
            ),
        ),
        (
            rlvr,
            (f"{OPT}.bf16=false",),
            f"{OPT}.bf16",
            where(
                "nemo-rl.models.megatron.setup.validate-dtype-config.bfloat16-precision-aware-optimizer-has-bf16"
            ),
        ),
        (
            rlvr,
            ("policy.precision=float16", f"{OPT}.bf16=false"),
            f"{OPT}.fp16",
            where(
                "nemo-rl.models.megatron.setup.validate-dtype-config.float16-precision-aware-optimizer-has-fp16"
            ),
        ),
        (
            dapo_h100,
            ("policy.precision=float32",),
            f"{OPT}.bf16",
            where(
                "nemo-rl.v3.models.megatron.setup.validate-dtype-config.float32-policy-optimizer-has-bf16-fp16"
            ),
        ),
        (
            dapo_h100.with_values({"policy.megatron_cfg.fp8_cfg.fp8_param": UNSET}),
            (FP8_ON,),
            "policy.megatron_cfg.fp8_cfg.fp8_param",
            where(
                "nemo-rl.v3.models.megatron.setup.apply-performance-config.enabled-fp8-cfg-names-fp8-fp8"
            ),
        ),
        (
            rlvr,
            (f"{OPT}.optimizer_cpu_offload=true", f"{OPT}.use_distributed_optimizer=false"),
            f"{OPT}.use_distributed_optimizer",
            where(
                "nemo-rl.models.megatron.setup.validate-optimizer-config.cpu-offloaded-optimizer-needs-distributed-optimizer"
            ),
        ),
        (
            rlvr,
            (f"{OPT}.overlap_cpu_optimizer_d2h_h2d=true",),
            f"{OPT}.overlap_cpu_optimizer_d2h_h2d",
            where(
                "nemo-rl.models.megatron.setup.validate-optimizer-config.overlapped-host-copies-need-cpu-offloaded"
            ),
        ),
        (
            rlvr,
            (FUSED, "policy.megatron_cfg.context_parallel_size=2"),
            "policy.megatron_cfg.use_fused_linear_logprobs",
            where(
                "nemo-rl.models.megatron.setup.apply-parallelism-config.context-parallelism-excludes-fused-linear-logprobs"
            ),
        ),
        (
            rlvr,
            (
                FUSED,
                UNPACKED,
                "policy.megatron_cfg.distributed_data_parallel_config." "overlap_param_gather=true",
            ),
            "policy.megatron_cfg.distributed_data_parallel_config.overlap_param_gather",
            where(
                "nemo-rl.models.megatron.setup.create-megatron-config.fused-linear-logprobs-exclude-overlapped-parameter"
            ),
        ),
    ],
)
def test_refused(
    refused_at: RefusedAt, stage: Stage, overrides: tuple[str, ...], key: str, reason: str
) -> None:
    refused_at(stage, overrides, key, reason)


def test_fp8_parameters_warn_on_super_v3(warned: Plan) -> None:
    warnings = warned(dapo_h100, FP8_ON, "policy.megatron_cfg.fp8_cfg.fp8_param=true")
    assert any(w.startswith("policy.megatron_cfg.fp8_cfg.fp8_param") for w in warnings)


def test_an_optimizer_without_precision_awareness_takes_any_flags(warned: Plan) -> None:
    warned(rlvr, f"{OPT}.use_precision_aware_optimizer=false", f"{OPT}.bf16=false")


def test_a_yarn_override_names_every_field_setup_requires(
    refused_at: RefusedAt, errors: Plan
) -> None:
    from recipekit.nemo_rl.rules.megatron_setup import YARN_FIELDS

    rule = "nemo-rl.models.megatron.setup.validate-and-set-config.yarn-rope-scaling-complete"
    partial = "policy.hf_config_overrides={rope_scaling: {rope_type: yarn, factor: 4.0}}"
    [found] = refused_at(rlvr, (partial,), "policy.hf_config_overrides.rope_scaling", where(rule))
    assert "without rope_theta, original_max_position_embeddings" in found
    whole = ", ".join(f"{f}: 1" for f in YARN_FIELDS)
    full = f"policy.hf_config_overrides={{rope_scaling: {{rope_type: yarn, {whole}}}}}"
    assert not [e for e in errors(rlvr, full) if "rope_scaling" in e]
