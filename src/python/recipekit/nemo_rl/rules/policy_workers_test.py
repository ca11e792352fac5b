"""The policy workers' rules: a value that breaks each is refused, naming the key."""

# The catalogued checks these tests break, which the rule catalogue's meta-test finds by
# name (recorded from the checks that produced an issue while these tests ran):
# runner_refusals,
# model_save_format_needs_dtensor_v2, hf_config_overrides_not_passed_twice.

# The catalogued checks these tests break (by the upstream line each cites), which the
# rule catalogue's meta-test finds by name:
# runner_refusals.

from __future__ import annotations

import pytest

from recipekit.nemo_rl.rule_lines import where
from recipekit.nemo_rl.rules.conftest import Plan, RefusedAt
from recipekit.stage import Stage
from recipes.super3.dapo import dapo_h100
from recipes.super35.rl import rlvr

DTENSOR_V1 = (
    "policy.megatron_cfg.enabled=false",
    "policy.dtensor_cfg.enabled=true",
    "policy.dtensor_cfg._v2=false",
)

DYNAMIC_OVER_TWO_STAGES = (
    "policy.sequence_packing.enabled=false",
    "policy.dynamic_batching.enabled=true",
    "policy.megatron_cfg.context_parallel_size=1",
    "policy.megatron_cfg.pipeline_model_parallel_size=2",
)


@pytest.mark.parametrize(
    ("stage", "overrides", "key", "reason"),
    [
        # Policy.__init__'s own test is the pipeline's: the refusal names that key.
        (
            dapo_h100,
            DYNAMIC_OVER_TWO_STAGES,
            "policy.megatron_cfg.pipeline_model_parallel_size",
            where(
                "nemo-rl.v3.models.policy.lm-policy.init.dynamic-batching-needs-single-pipeline-stage"
            ),
        ),
        (
            rlvr,
            DYNAMIC_OVER_TWO_STAGES,
            "policy.megatron_cfg.pipeline_model_parallel_size",
            where(
                "nemo-rl.models.policy.lm-policy.init.dynamic-batching-needs-single-pipeline-stage"
            ),
        ),
        (
            dapo_h100,
            (*DTENSOR_V1, "policy.dtensor_cfg.lora_cfg.enabled=true"),
            "policy.dtensor_cfg.lora_cfg.enabled",
            where("nemo-rl.v3.models.policy.lm-policy.init.lora-needs-v2-dtensor-worker"),
        ),
        (
            dapo_h100,
            ("policy.dtensor_cfg._v2=false",),
            "checkpointing.model_save_format",
            where(
                "nemo-rl.v3.models.policy.lm-policy.save-checkpoint.save-format-needs-dtensor-cfg-v2"
            ),
        ),
        (
            rlvr,
            ("policy.dtensor_cfg._v2=false", "checkpointing.model_save_format=safetensors"),
            "checkpointing.model_save_format",
            where(
                "nemo-rl.models.policy.lm-policy.save-checkpoint.save-format-needs-dtensor-cfg-v2"
            ),
        ),
        # Policy.__init__'s own tests read the other key (the hint gives policy.draft.enabled).
        (
            rlvr,
            ("policy.draft={enabled: true}",),
            "policy.sequence_packing.enabled",
            where("nemo-rl.models.policy.lm-policy.init.draft-model-excludes-sequence-packing"),
        ),
        (
            rlvr,
            (
                "policy.draft={enabled: true}",
                "policy.megatron_cfg.enabled=false",
                "policy.dtensor_cfg.enabled=true",
            ),
            "policy.megatron_cfg.enabled",
            where("nemo-rl.models.policy.lm-policy.init.draft-model-needs-megatron-backend"),
        ),
    ],
)
def test_refused(
    refused_at: RefusedAt, stage: Stage, overrides: tuple[str, ...], key: str, reason: str
) -> None:
    refused_at(stage, overrides, key, reason)


def test_the_v2_worker_takes_a_save_format(warned: Plan) -> None:
    warned(rlvr, "checkpointing.model_save_format=safetensors")


HF = "policy.hf_config_overrides"


@pytest.mark.parametrize(
    ("stage", "overrides", "key", "site"),
    [
        # Megatron-Core imports the HF checkpoint through AutoBridge.from_hf_pretrained.
        (
            rlvr,
            (f"{HF}={{trust_remote_code: false}}",),
            f"{HF}.trust_remote_code",
            "nemo-rl.models.megatron.community-import.import-model-from-hf-name."
            "hf-config-overrides-keywords",
        ),
        (
            dapo_h100,
            (f"{HF}={{trust_remote_code: false}}",),
            f"{HF}.trust_remote_code",
            "nemo-rl.v3.models.megatron.community-import.import-model-from-hf-name."
            "hf-config-overrides-keywords",
        ),
        # ... and import_model_from_hf_name's own parameters.
        (
            rlvr,
            (f"{HF}={{transformer_layer_spec: x}}",),
            f"{HF}.transformer_layer_spec",
            "nemo-rl.models.megatron.setup.handle-model-import.import-hf-config-overrides-keywords",
        ),
        # Each DTensor worker builds the model's config with AutoConfig.from_pretrained.
        (
            rlvr,
            (*DTENSOR_V1, f"{HF}={{attn_implementation: sdpa}}"),
            f"{HF}.attn_implementation",
            "nemo-rl.models.policy.workers.dtensor-policy-worker.init.hf-config-overrides-keywords",
        ),
        (
            rlvr,
            (*DTENSOR_V1[:2], "policy.dtensor_cfg._v2=true", f"{HF}={{torch_dtype: bfloat16}}"),
            f"{HF}.torch_dtype",
            "nemo-rl.models.automodel.setup.validate-and-prepare-config.hf-config-overrides-keywords",
        ),
    ],
)
def test_an_override_the_call_passes_itself_is_refused(
    refused_at: RefusedAt, stage: Stage, overrides: tuple[str, ...], key: str, site: str
) -> None:
    refused_at(stage, overrides, key, where(site))


def test_overrides_the_calls_do_not_pass_plan(errors: Plan) -> None:
    assert not [e for e in errors(rlvr, f"{HF}={{rope_theta: 10000.0}}") if HF in e]
    # A keyword only the DTensor worker passes is no duplicate on the Megatron path.
    assert not [e for e in errors(rlvr, f"{HF}={{attn_implementation: sdpa}}") if HF in e]
