"""vLLM 0.25.1's engine checks on what NeMo-RL hands it: a value that breaks each is refused (or
warned), naming the key. rules_test covers max_num_batched_tokens < max_num_seqs and EPLB."""

# The catalogued checks these tests break, which the rule catalogue's meta-test finds by
# name (recorded from the checks that produced an issue while these tests ran):
# vllm_fits_generation_gpus, engine_config_guards_hold.

from __future__ import annotations

import attrs
import pytest

from recipekit.model_card import QWEN3_1_7B
from recipekit.nemo_rl.rules.conftest import Plan, RefusedAt
from recipekit.plan import make_plan
from recipekit.stage import Stage
from recipekit.vllm.checks import engine_config_guards_hold
from recipekit.vllm.rules import cite as vllm_cite
from recipekit.vllm.rules.model import (
    attention_dtype_override_needs_rocm,
    attention_heads_split_over_tensor_parallel,
    dcp_divides_queries_per_kv_head,
    dcp_tensor_parallel_above_kv_heads,
    dcp_within_tensor_parallel_per_kv_head,
    expert_parallel_needs_moe,
    long_max_model_len_allowed_by_its_variable,
    max_model_len_within_the_model,
)
from recipekit.vllm.rules.parallel import (
    async_eplb_communicator_is_not_nccl,
    external_data_parallel_needs_moe,
    nsight_workers_need_ray,
    parallel_loading_workers_are_ignored,
    redundant_experts_need_eplb,
    removed_all2all_backend_falls_back,
)
from recipekit.vllm.rules.scheduler import (
    batched_tokens_hold_a_sequence,
    custom_scheduler_class_is_not_public,
    long_partial_prefills_within_partial_prefills,
    long_prefill_threshold_within_max_model_len,
    partial_prefills_need_chunked_prefill,
)
from recipekit.vllm.rules.vllm_config import (
    dcp_interleave_overrides_cp_interleave,
    kv_scales_calculation_is_deprecated,
    kv_sharing_fast_prefill_needs_model_support,
    mamba_block_size_needs_prefix_caching,
    mamba_stochastic_rounding_needs_float16_cache,
    micro_batching_needs_an_expert_all2all,
    routed_experts_without_pipeline_parallel,
    sequence_parallelism_needs_tensor_parallel,
    sequence_parallelism_needs_vllm_compile,
)
from recipes.super35.rl import rlvr

VLLM = "policy.generation.vllm_cfg"
KWARGS = "policy.generation.vllm_kwargs"


@pytest.mark.parametrize(
    ("check", "overrides", "key", "reason"),
    [
        (
            attention_heads_split_over_tensor_parallel,
            (f"{VLLM}.tensor_parallel_size=3",),
            f"{VLLM}.tensor_parallel_size",
            vllm_cite("vllm.model.attention-heads-divide-tp"),
        ),
        (
            max_model_len_within_the_model,
            (f"{VLLM}.max_model_len=524288", "policy.max_total_sequence_length=524288"),
            f"{VLLM}.max_model_len",
            vllm_cite("vllm.model.max-model-len-within-positions"),
        ),
        (
            # vLLM reads the engine argument, which vllm_kwargs gives.
            routed_experts_without_pipeline_parallel,
            (f"{KWARGS}.enable_return_routed_experts=true", f"{VLLM}.pipeline_parallel_size=2"),
            f"{VLLM}.pipeline_parallel_size",
            vllm_cite("vllm.vllm.routed-experts-without-pp"),
        ),
        (
            # Router replay: GRPO's setup writes it into vllm_kwargs itself.
            routed_experts_without_pipeline_parallel,
            ("policy.router_replay={enabled: true}", f"{VLLM}.pipeline_parallel_size=2"),
            f"{VLLM}.pipeline_parallel_size",
            vllm_cite("vllm.vllm.routed-experts-without-pp"),
        ),
        (
            batched_tokens_hold_a_sequence,
            (
                f"{KWARGS}={{enable_chunked_prefill: false, max_num_batched_tokens: 8192, "
                "max_num_seqs: 32}",
            ),
            f"{KWARGS}.max_num_batched_tokens",
            vllm_cite("vllm.scheduler.batched-tokens-hold-a-sequence"),
        ),
        (
            # ParallelConfig's own check, replayed from the wheel.
            engine_config_guards_hold,
            (f"{KWARGS}.decode_context_parallel_size=3",),
            f"{KWARGS}.decode_context_parallel_size",
            vllm_cite("vllm.parallel.dcp-divides-tp"),
        ),
        (
            # ParallelConfig's own check, replayed from the wheel.
            engine_config_guards_hold,
            (f"{KWARGS}.dcp_comm_backend=a2a",),
            f"{KWARGS}.dcp_comm_backend",
            vllm_cite("vllm.parallel.dcp-a2a-needs-dcp"),
        ),
        (
            # Super's 2 KV heads: TP 2 leaves no rank for decode context parallelism.
            dcp_tensor_parallel_above_kv_heads,
            (f"{VLLM}.tensor_parallel_size=2", f"{KWARGS}.decode_context_parallel_size=2"),
            f"{KWARGS}.decode_context_parallel_size",
            vllm_cite("vllm.model.dcp-tp-above-kv-heads"),
        ),
        (
            dcp_within_tensor_parallel_per_kv_head,
            (f"{KWARGS}.decode_context_parallel_size=4",),
            f"{KWARGS}.decode_context_parallel_size",
            vllm_cite("vllm.model.dcp-within-tp-per-kv-head"),
        ),
        (
            partial_prefills_need_chunked_prefill,
            (f"{KWARGS}.max_num_partial_prefills=2", f"{KWARGS}.enable_chunked_prefill=false"),
            f"{KWARGS}.max_num_partial_prefills",
            vllm_cite("vllm.scheduler.partial-prefills-need-chunked-prefill"),
        ),
        (
            long_prefill_threshold_within_max_model_len,
            (
                f"{KWARGS}.max_num_partial_prefills=2",
                f"{KWARGS}.long_prefill_token_threshold=32768",
            ),
            f"{KWARGS}.long_prefill_token_threshold",
            vllm_cite("vllm.scheduler.long-prefill-threshold-within-max-model-len"),
        ),
        (
            long_partial_prefills_within_partial_prefills,
            (f"{KWARGS}.max_long_partial_prefills=2",),
            f"{KWARGS}.max_long_partial_prefills",
            vllm_cite("vllm.scheduler.long-partial-prefills-within-partial-prefills"),
        ),
        (
            async_eplb_communicator_is_not_nccl,
            (f"{KWARGS}.eplb_config={{communicator: torch_nccl}}",),
            f"{KWARGS}.eplb_config.communicator",
            vllm_cite("vllm.parallel.async-eplb-not-over-nccl"),
        ),
        (
            redundant_experts_need_eplb,
            (f"{KWARGS}.eplb_config={{num_redundant_experts: 32}}",),
            f"{KWARGS}.eplb_config.num_redundant_experts",
            vllm_cite("vllm.parallel.redundant-experts-need-eplb"),
        ),
        (
            nsight_workers_need_ray,
            (f"{VLLM}.tensor_parallel_size=1", f"{KWARGS}.ray_workers_use_nsight=true"),
            f"{KWARGS}.ray_workers_use_nsight",
            vllm_cite("vllm.parallel.nsight-needs-ray"),
        ),
        (
            mamba_stochastic_rounding_needs_float16_cache,
            (f"{KWARGS}.enable_mamba_cache_stochastic_rounding=true",),
            f"{KWARGS}.enable_mamba_cache_stochastic_rounding",
            vllm_cite("vllm.vllm.mamba-stochastic-rounding-float16"),
        ),
        (
            # The seed turns prefix caching off.
            mamba_block_size_needs_prefix_caching,
            (f"{KWARGS}.mamba_block_size=1024",),
            f"{KWARGS}.mamba_block_size",
            vllm_cite("vllm.vllm.mamba-block-size-needs-prefix-caching"),
        ),
        (
            micro_batching_needs_an_expert_all2all,
            (f"{KWARGS}.enable_dbo=true",),
            f"{KWARGS}.all2all_backend",
            vllm_cite("vllm.vllm.micro-batching-needs-expert-all2all"),
        ),
    ],
    ids=lambda value: getattr(value, "__name__", None),
)
def test_vllm_refuses(
    refused_at: RefusedAt, check: object, overrides: tuple[str, ...], key: str, reason: str
) -> None:
    refused_at(rlvr, overrides, key, reason)


def test_a_long_context_allowed_by_its_variable_plans_past_the_models_positions(
    errors: Plan,
) -> None:
    found = errors(
        rlvr,
        f"{VLLM}.max_model_len=524288",
        "policy.max_total_sequence_length=524288",
        "policy.megatron_cfg.env_vars={VLLM_ALLOW_LONG_MAX_MODEL_LEN: '1'}",
    )
    assert not [e for e in found if vllm_cite("vllm.model.max-model-len-within-positions") in e]


def test_more_batched_tokens_than_sequences_use_warns(warned: Plan) -> None:
    """batched_tokens_beyond_what_sequences_use: vLLM's scheduler config only warns."""
    found = [
        w
        for w in warned(rlvr, f"{KWARGS}={{max_num_batched_tokens: 32768, max_num_seqs: 1}}")
        if w.startswith(f"{KWARGS}.max_num_batched_tokens")
    ]
    assert found and vllm_cite("vllm.scheduler.batched-tokens-beyond-sequences") in found[0]


def _dense(attention_heads: int = 0, kv_heads: int = 0) -> Stage:
    """rlvr on a dense model card (Qwen3-1.7B: 16 heads, 8 KV heads), its heads changed."""
    arch = QWEN3_1_7B.architecture
    assert arch is not None
    heads = attrs.evolve(
        arch,
        attention_heads=attention_heads or arch.attention_heads,
        kv_heads=kv_heads or arch.kv_heads,
    )
    return attrs.evolve(rlvr, model=attrs.evolve(QWEN3_1_7B, architecture=heads))


@pytest.mark.parametrize(
    ("check", "stage", "overrides", "key", "reason"),
    [
        (
            # EP = TP: the only dense case NeMo-RL's own EP % TP assertion lets through.
            expert_parallel_needs_moe,
            _dense(),
            (f"{VLLM}.expert_parallel_size=4",),
            f"{VLLM}.expert_parallel_size",
            vllm_cite("vllm.model.expert-parallel-needs-moe"),
        ),
        (
            external_data_parallel_needs_moe,
            _dense(),
            (f"{VLLM}.expert_parallel_size=8",),
            f"{VLLM}.expert_parallel_size",
            vllm_cite("vllm.parallel.external-dp-needs-moe"),
        ),
        (
            # 18 heads over 2 KV heads: 9 query heads per KV head, which DCP 2 does not divide.
            dcp_divides_queries_per_kv_head,
            _dense(attention_heads=18, kv_heads=2),
            (f"{VLLM}.tensor_parallel_size=6", f"{KWARGS}.decode_context_parallel_size=2"),
            f"{KWARGS}.decode_context_parallel_size",
            vllm_cite("vllm.model.dcp-divides-queries-per-kv-head"),
        ),
    ],
    ids=lambda value: getattr(value, "__name__", None),
)
def test_vllm_refuses_on_a_dense_model(
    refused_at: RefusedAt,
    check: object,
    stage: Stage,
    overrides: tuple[str, ...],
    key: str,
    reason: str,
) -> None:
    refused_at(stage, overrides, key, reason)


def test_expert_parallelism_on_the_moe_model_passes_the_dense_model_rules(errors: Plan) -> None:
    found = errors(rlvr, f"{VLLM}.expert_parallel_size=8")
    assert not [
        e
        for e in found
        if vllm_cite("vllm.model.expert-parallel-needs-moe") in e
        or vllm_cite("vllm.parallel.external-dp-needs-moe") in e
    ], found


@pytest.mark.parametrize(
    ("check", "overrides", "key", "reason"),
    [
        (
            long_max_model_len_allowed_by_its_variable,
            (
                f"{VLLM}.max_model_len=524288",
                "policy.max_total_sequence_length=524288",
                f"{VLLM}.env_vars.VLLM_ALLOW_LONG_MAX_MODEL_LEN='1'",
            ),
            f"{VLLM}.max_model_len",
            vllm_cite("vllm.model.long-max-model-len-allowed"),
        ),
        (
            custom_scheduler_class_is_not_public,
            (f"{KWARGS}.scheduler_cls=my_pkg.MyScheduler",),
            f"{KWARGS}.scheduler_cls",
            vllm_cite("vllm.scheduler.custom-scheduler-class"),
        ),
        (
            removed_all2all_backend_falls_back,
            (f"{KWARGS}.all2all_backend=pplx",),
            f"{KWARGS}.all2all_backend",
            vllm_cite("vllm.parallel.removed-all2all-backend"),
        ),
        (
            parallel_loading_workers_are_ignored,
            (f"{KWARGS}.max_parallel_loading_workers=4",),
            f"{KWARGS}.max_parallel_loading_workers",
            vllm_cite("vllm.parallel.parallel-loading-workers-ignored"),
        ),
        (
            attention_dtype_override_needs_rocm,
            (f"{KWARGS}.override_attention_dtype=float32",),
            f"{KWARGS}.override_attention_dtype",
            vllm_cite("vllm.model.attention-dtype-override-needs-rocm"),
        ),
        (
            kv_scales_calculation_is_deprecated,
            (f"{KWARGS}.calculate_kv_scales=true",),
            f"{KWARGS}.calculate_kv_scales",
            vllm_cite("vllm.cache.calculate-kv-scales-deprecated"),
        ),
        (
            sequence_parallelism_needs_tensor_parallel,
            (
                f"{VLLM}.tensor_parallel_size=1",
                f"{KWARGS}.compilation_config.pass_config={{enable_sp: true}}",
            ),
            f"{KWARGS}.compilation_config.pass_config",
            vllm_cite("vllm.vllm.sequence-parallel-needs-tp"),
        ),
        (
            sequence_parallelism_needs_vllm_compile,
            (
                f"{VLLM}.enforce_eager=true",
                f"{KWARGS}.compilation_config.pass_config={{fuse_gemm_comms: true}}",
            ),
            f"{KWARGS}.compilation_config.pass_config",
            vllm_cite("vllm.vllm.sequence-parallel-needs-vllm-compile"),
        ),
        (
            kv_sharing_fast_prefill_needs_model_support,
            (f"{KWARGS}.kv_sharing_fast_prefill=true",),
            f"{KWARGS}.kv_sharing_fast_prefill",
            vllm_cite("vllm.vllm.kv-sharing-fast-prefill"),
        ),
        (
            dcp_interleave_overrides_cp_interleave,
            (
                f"{KWARGS}.decode_context_parallel_size=2",
                f"{KWARGS}.dcp_kv_cache_interleave_size=16",
            ),
            f"{KWARGS}.dcp_kv_cache_interleave_size",
            vllm_cite("vllm.vllm.dcp-interleave-overrides-cp-interleave"),
        ),
    ],
    ids=lambda value: getattr(value, "__name__", None),
)
def test_vllm_warns(
    warned: Plan, check: object, overrides: tuple[str, ...], key: str, reason: str
) -> None:
    stage, sets = rlvr, overrides
    if f"{VLLM}.tensor_parallel_size=1" in overrides:
        # One GPU per engine holds the dense model only (whose trainer splits no experts).
        stage, sets = _dense(), (*overrides, "policy.megatron_cfg.expert_model_parallel_size=1")
    found = [w for w in warned(stage, *sets) if w.startswith(key) and reason in w]
    assert found, warned(stage, *sets)


def test_the_seed_stage_meets_vllms_engine_rules() -> None:
    plan = make_plan(rlvr, ())
    assert not [w.render() for w in plan.warnings if "@ vLLM 0.25.1" in w.render()]


def test_eplb_settings_vllm_accepts_plan(errors: Plan) -> None:
    found = errors(
        rlvr,
        f"{KWARGS}.eplb_config={{communicator: torch_nccl, use_async: false}}",
        f"{KWARGS}.enable_dbo=true",
        f"{KWARGS}.all2all_backend=deepep_low_latency",
        f"{KWARGS}.decode_context_parallel_size=2",
        f"{KWARGS}.mamba_block_size=16384",
    )
    assert not [e for e in found if "@ vLLM 0.25.1" in e], found


def test_vllm_cfgs_routed_experts_key_is_no_engine_argument(errors: Plan) -> None:
    """vllm_cfg.enable_return_routed_experts is declared but never handed to vLLM (the worker
    reads vllm_kwargs'), so with it vLLM's check does not run."""
    found = errors(
        rlvr, f"{VLLM}.enable_return_routed_experts=true", f"{VLLM}.pipeline_parallel_size=2"
    )
    assert not [e for e in found if vllm_cite("vllm.vllm.routed-experts-without-pp") in e], found
