"""One test per mirrored rule: a value that breaks it is refused, naming the key."""

# The catalogued checks these tests break, which the rule catalogue's meta-test finds by name
# (recorded from the checks that produced an issue while these tests ran):
# batched_tokens_cover_the_sequences, runner_refusals,
# engine_config_guards_hold, runner_warnings,
# forced_ratio_with_threshold_still_computes_logprobs, fused_logprobs_without_sampling_filter,
# nemo_gym_takes_no_val_top_k, sequence_divisible_for_parallelism.

from __future__ import annotations

import attrs
import pytest

from recipekit.errors import RecipeError
from recipekit.nemo_rl import SUPER35_BRANCH
from recipekit.nemo_rl.rule_lines import where
from recipekit.nemo_rl.rules.generation import GYM_SETS_THE_SERVER_ON, NEMO_GYM_PY
from recipekit.plan import make_plan
from recipekit.vllm.rules import cite as vllm_cite
from recipes.super3.dapo import dapo_h100
from recipes.super35.rl import rlvr


def _errors(stage: object, *overrides: str) -> list[str]:
    with pytest.raises(RecipeError) as exc:
        make_plan(stage, overrides)  # type: ignore[arg-type]
    return [issue.render() for issue in exc.value.issues]


def _warnings(stage: object, *overrides: str) -> list[str]:
    return [issue.render() for issue in make_plan(stage, overrides).warnings]  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("overrides", "key", "reason"),
    [
        (
            ("policy.generation.val_top_k=5",),
            "policy.generation.val_top_k",
            where("nemo-rl.grpo.nemo-gym-takes-no-val-top-k"),
        ),
        (
            ("policy.megatron_cfg.use_fused_linear_logprobs=true",),
            # The replay of GRPO's setup names the key its failing test reads.
            "policy.sequence_packing.enabled",
            where("nemo-rl.grpo.fused-logprobs-without-packing"),
        ),
        (
            (
                "grpo.skip_reference_policy_logprobs_calculation=true",
                "loss_fn.reference_policy_kl_penalty=0.01",
            ),
            "loss_fn.reference_policy_kl_penalty",
            where("nemo-rl.grpo.skipped-reference-logprobs-need-zero-kl"),
        ),
        (
            (
                "grpo.stop_at_validation_metric=pass_k",
                "grpo.stop_at_validation_threshold=0.5",
                "grpo.val_num_generations_per_prompt=1",
            ),
            "grpo.stop_at_validation_metric",
            where("nemo-rl.grpo.pass-k-needs-several-val-generations"),
        ),
        (
            ("grpo.stop_at_validation_metric=accuracy",),
            "grpo.stop_at_validation_threshold",
            where("nemo-rl.grpo.early-stop-needs-threshold"),
        ),
        (
            ("grpo.max_val_samples=16",),
            "grpo.max_val_samples",
            where("nemo-rl.gym-runner.no-max-val-samples"),
        ),
        (
            ("loss_fn.force_on_policy_ratio=true", "policy.train_global_batch_size=64"),
            "grpo.num_prompts_per_step",
            "force_on_policy_ratio",
        ),
        (
            ("policy.generation.vllm_cfg.max_model_len=1024",),
            "data.max_input_seq_length",
            "RL#796",
        ),
        (
            ("policy.generation.vllm_kwargs={max_num_batched_tokens: 8, max_num_seqs: 64}",),
            "policy.generation.vllm_kwargs.max_num_batched_tokens",
            vllm_cite("vllm.scheduler.batched-tokens-cover-sequences"),
        ),
        (
            (
                "policy.generation.vllm_kwargs={enable_eplb: true}",
                "policy.generation.vllm_cfg.expert_parallel_size=1",
            ),
            "policy.generation.vllm_kwargs.enable_eplb",
            vllm_cite("vllm.parallel.eplb-needs-expert-parallel"),
        ),
    ],
)
def test_rlvr_refuses(overrides: tuple[str, ...], key: str, reason: str) -> None:
    errors = _errors(rlvr, *overrides)
    assert [e for e in errors if e.startswith(key) and reason in e], errors


def test_fused_logprobs_refuse_sampling_filters() -> None:
    errors = _errors(
        rlvr,
        "policy.sequence_packing.enabled=false",
        "policy.megatron_cfg.use_fused_linear_logprobs=true",
        "policy.generation.top_p=0.9",
    )
    # GRPO's setup asserts it (replayed); the refusal gives the sampling settings it read.
    assert any(
        where("nemo-rl.grpo.fused-logprobs-without-sampling-filter") in e
        and "policy.generation.top_p=0.9" in e
        for e in errors
    ), errors


def test_expandable_segments_with_colocated_vllm_are_refused() -> None:
    # The stage's environment reaches every worker, vLLM's too (a training backend's own
    # env_vars reach its processes only: job_rules_test).
    expandable = {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}
    errors = _errors(attrs.evolve(dapo_h100, environment=expandable))
    assert any(e.startswith("environment.PYTORCH_CUDA_ALLOC_CONF") for e in errors), errors


def test_super_v3_skipped_reference_logprobs_need_zero_kl() -> None:
    errors = _errors(
        dapo_h100,
        "grpo.skip_reference_policy_logprobs_calculation=true",
        "loss_fn.reference_policy_kl_penalty=0.01",
    )
    # The replay of GRPO's training loop refuses it at the key its failing test reads.
    assert any(
        e.startswith("loss_fn.reference_policy_kl_penalty")
        and where("nemo-rl.grpo.v3.skipped-reference-logprobs-need-zero-kl") in e
        for e in errors
    ), errors


def test_a_node_local_path_on_a_multi_node_run_is_a_warning() -> None:
    # The plan cannot see the cluster's mounts (the profile is chosen at submit): /tmp is
    # node-local on a real cluster, while a local test cluster shares it; preflight decides.
    found = [
        w
        for w in _warnings(rlvr, "checkpointing.checkpoint_dir=/tmp/ckpt")
        if w.startswith("checkpointing.checkpoint_dir")
    ]
    assert found and "RL#1770" in found[0]  # and it plans: make_plan raised no error


def test_pad_token_id_is_a_warning() -> None:
    assert any(
        w.startswith("policy.generation._pad_token_id")
        for w in _warnings(rlvr, "policy.generation._pad_token_id=0")
    )


@pytest.mark.parametrize("key", ["async_engine", "expose_http_server"])
def test_nemo_gyms_runner_overwrites_a_false_server_setting(key: str) -> None:
    """run_grpo_nemo_gym.py's main calls setup_nemo_gym_config, which sets both true before
    nemo_gym.py's should_use_nemo_gym asserts them."""
    found = [
        w
        for w in _warnings(rlvr, f"policy.generation.vllm_cfg.{key}=false")
        if w.startswith(f"policy.generation.vllm_cfg.{key} = False")
    ]
    assert found and f"{NEMO_GYM_PY}:{GYM_SETS_THE_SERVER_ON} @ {SUPER35_BRANCH}" in found[0]
