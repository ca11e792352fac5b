"""A value that breaks each NeMo-RL rule no other test broke (found by recording which checks
produce an issue across the rule tests): the plan refuses it, naming the key and the line.
Each case names the check it breaks (the catalogue's meta-test finds every check by name)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from recipekit.errors import Issue
from recipekit.nemo_rl.config_guards import runner_refusals
from recipekit.nemo_rl.rule_lines import where
from recipekit.nemo_rl.rules.conftest import COLOCATED_MEGATRON_GENERATION, Plan, RefusedAt
from recipekit.nemo_rl.rules.generation import (
    fp8_kv_cache_needs_megatron,
    fp8_kv_cache_needs_one_pipeline_stage,
    fp8_kv_cache_without_async_rollouts,
)
from recipekit.nemo_rl.rules.loss import distillation_needs_prev_logprobs
from recipekit.nemo_rl.rules.megatron_setup import colocated_reshard_without_draft
from recipekit.nemo_rl.rules.validation import validation_sampling_only_on_gym_vllm
from recipekit.stage import Stage
from recipes.super3.dapo import dapo_h100
from recipes.super35.mopd import mopd_phase1
from recipes.super35.rl import rlvr

VLLM = "policy.generation.vllm_cfg"
FP8_KV_CACHE = (f"{VLLM}.precision=fp8", f"{VLLM}.kv_cache_dtype=fp8")
DTENSOR = ("policy.megatron_cfg.enabled=false", "policy.dtensor_cfg.enabled=true")
# Forcing the on-policy ratio without an error threshold skips the student's log-probabilities.
ZEROED_LOGPROBS = ("loss_fn.force_on_policy_ratio=true", "grpo.seq_logprob_error_threshold=null")

Check = Callable[..., Iterator[Issue]]
CASES: list[tuple[Check, Stage, tuple[str, ...], str, str]] = [
    # (the check, the stage, the overrides that break it, the key named, the line quoted;
    # runner_refusals: the runner's own checks, replayed from the pinned source)
    (
        fp8_kv_cache_needs_megatron,
        dapo_h100,
        (*FP8_KV_CACHE, *DTENSOR),
        f"{VLLM}.kv_cache_dtype",
        where("nemo-rl.grpo.v3.fp8-kv-cache-needs-megatron"),
    ),
    (
        fp8_kv_cache_without_async_rollouts,
        dapo_h100,
        (*FP8_KV_CACHE, f"{VLLM}.async_engine=true"),
        f"{VLLM}.kv_cache_dtype",
        where("nemo-rl.grpo.v3.fp8-kv-cache-without-async"),
    ),
    (
        fp8_kv_cache_needs_one_pipeline_stage,
        dapo_h100,
        (*FP8_KV_CACHE, "policy.megatron_cfg.pipeline_model_parallel_size=2"),
        "policy.megatron_cfg.pipeline_model_parallel_size",
        where("nemo-rl.grpo.v3.fp8-kv-cache-needs-pp1"),
    ),
    (
        validation_sampling_only_on_gym_vllm,
        rlvr,
        (*COLOCATED_MEGATRON_GENERATION, "policy.generation.val_temperature=0.5"),
        "policy.generation.val_temperature",
        where("nemo-rl.grpo.validation-sampling-only-on-gym-vllm"),
    ),
    (
        runner_refusals,
        rlvr,
        ("policy.is_vlm=true", f"{VLLM}.skip_tokenizer_init=true"),
        f"{VLLM}.skip_tokenizer_init",
        where("nemo-rl.gym-runner.vlm-needs-vllm-tokenizer"),
    ),
    (
        runner_refusals,
        rlvr,
        ("data.use_multiple_dataloader=true", "data.num_prompts_per_dataloader=100"),
        "grpo.num_prompts_per_step",
        where("nemo-rl.grpo.dataloaders-split-the-step"),
    ),
    (
        runner_refusals,
        rlvr,
        (
            *ZEROED_LOGPROBS,
            "loss_fn.use_kl_in_reward=true",
            "loss_fn.reference_policy_kl_penalty=0.01",
        ),
        "loss_fn.use_kl_in_reward",
        where("nemo-rl.grpo.kl-in-reward-needs-prev-logprobs"),
    ),
    (
        distillation_needs_prev_logprobs,
        mopd_phase1,
        ZEROED_LOGPROBS,
        "loss_fn.force_on_policy_ratio",
        where("nemo-rl.opd.needs-prev-logprobs"),
    ),
    (
        colocated_reshard_without_draft,
        rlvr,
        (*COLOCATED_MEGATRON_GENERATION, "policy.draft.enabled=true"),
        "policy.draft.enabled",
        where(
            "nemo-rl.models.megatron.setup.setup-model-and-optimizer.colocated-megatron-reshard-excludes-draft-model"
        ),
    ),
]


@pytest.mark.parametrize(
    ("check", "stage", "overrides", "key", "reason"),
    CASES,
    ids=[case[0].__name__ for case in CASES],
)
def test_the_broken_rule_is_refused_at_its_key(
    refused_at: RefusedAt,
    check: Check,
    stage: Stage,
    overrides: tuple[str, ...],
    key: str,
    reason: str,
) -> None:
    refused_at(stage, overrides, key, reason)


# super-v3 reads NeMo Gym's rollouts only through its examples' schema (rules/conftest.py).
GYM_V3 = "env.should_use_nemo_gym=true"
GYM_V3_NEEDS = "nemo-rl.grpo.v3.nemo-gym-needs-"


@pytest.mark.parametrize(
    ("check", "override", "key", "rule"),
    [
        (
            runner_refusals,
            f"{VLLM}.async_engine=false",
            "async_engine",
            GYM_V3_NEEDS + "async-engine",
        ),
        (
            runner_refusals,
            f"{VLLM}.expose_http_server=false",
            "expose_http",
            GYM_V3_NEEDS + "http-server",
        ),
    ],
    ids=lambda value: getattr(value, "__name__", None),
)
def test_super_v3_gym_rollouts_need_the_async_http_engine(
    refused_at: RefusedAt, v3_examples: Stage, check: Check, override: str, key: str, rule: str
) -> None:
    refused_at(v3_examples, (GYM_V3, override), f"{VLLM}.{key}", where(rule))


def test_opd_without_the_importance_sampling_correction_warns(warned: Plan) -> None:
    """opd_recommends_importance_sampling (grpo.py, _create_advantage_estimator @ super-v3.5): a
    warning where async GRPO (which refuses the correction off) is not on."""
    key = "loss_fn.use_importance_sampling_correction"
    # mopd's truncated importance sampling needs the correction (loss_functions.py,
    # ClippedPGLossFn.__init__): off too.
    tis = "loss_fn.truncated_importance_sampling_type=null"
    overrides = (f"{key}=false", "grpo.async_grpo.enabled=false", tis)
    found = [w for w in warned(mopd_phase1, *overrides) if w.startswith(key)]
    assert (
        found
        and where(
            "nemo-rl.algorithms.grpo.create-advantage-estimator.opd-recommends-importance-sampling-correction"
        )
        in found[0]
    )
