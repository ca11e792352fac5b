"""Each mirrored Megatron-Core rule, broken on a real stage with one ``--set``: the plan names the
key (errors stop the plan, warnings come with it), and the stage as written plans cleanly."""

# The catalogued checks these tests break, which the rule catalogue's meta-test finds by
# name (recorded from the checks that produced an issue while these tests ran):
# bias_activation_fusion_needs_gelu_or_silu, core_attn_recompute_may_be_fused,
# deepep_flag_is_deprecated, deepep_needs_flex_dispatcher,
# expert_and_tensor_parallel_want_sequence_parallel, full_recompute_names_a_method,
# full_recompute_names_its_layer_count, many_experts_route_in_fp32, megatron_settings_agree,
# mla_up_proj_recompute_needs_mla, precision_aware_optimizer_needs_adam,
# precision_aware_optimizer_needs_distributed_optimizer, recompute_modules_are_known,
# selective_recompute_takes_no_layer_count, shared_expert_overlap_needs_alltoall_or_flex,
# shared_experts_recompute_excludes_overlap, lr_at_least_min_lr, warmup_starts_at_most_lr,
# weight_decay_does_not_fall, warmup_ends_before_the_decay, wsd_has_its_decay_length.

# The catalogued checks these tests break (by the upstream line each cites), which the
# rule catalogue's meta-test finds by name:
# delayed_fp8_recompute_excludes_moe_act_and_layernorm, tensor_parallel_divides_the_attention_heads,
# tensor_parallel_fits_the_query_groups.

from __future__ import annotations

import attrs
import pytest

from recipekit.errors import Issue, RecipeError
from recipekit.megatron_bridge.rules import cite as bridge_cite
from recipekit.megatron_core.rules import cite
from recipekit.plan import make_plan
from recipekit.stage import Stage
from recipes.super35.rl import rlvr
from recipes.super35.sft import sft

P = "policy.megatron_cfg."
# The catalogue ids of OptimizerParamScheduler's rules share this prefix.
SCHEDULER = "megatron-core.optimizer-param-scheduler."
SELECTIVE = (f"{P}activation_checkpointing=true", f"{P}recompute_granularity=selective")

ERRORS = [
    # (stage, overrides, the key named, the upstream line quoted)
    (
        sft,
        ("model.recompute_granularity=full", "model.recompute_method=null"),
        "model.recompute_method",
        cite(
            "megatron-core.transformer-config.post-init.full-recomputation-needs-recompute-method-block"
        ),
    ),
    (
        sft,
        (
            "model.recompute_granularity=full",
            "model.recompute_method=uniform",
            "model.recompute_num_layers=null",
        ),
        "model.recompute_num_layers",
        cite(
            "megatron-core.transformer-config.post-init.full-recomputation-needs-recompute-num-layers"
        ),
    ),
    (
        sft,
        (
            "model.recompute_granularity=selective",
            "model.recompute_method=null",
            "model.recompute_num_layers=2",
        ),
        "model.recompute_num_layers",
        cite(
            "megatron-core.transformer-config.post-init.selective-recomputation-takes-no-recompute-num"
        ),
    ),
    (
        rlvr,
        (*SELECTIVE, f"{P}recompute_modules=[core_atn]"),
        f"{P}recompute_modules",
        cite("megatron-core.transformer-config.post-init.recompute-module-one-megatron-core-knows"),
    ),
    (
        rlvr,
        (*SELECTIVE, f"{P}recompute_modules=[mla_up_proj]"),
        f"{P}recompute_modules",
        cite("megatron-core.transformer-config.post-init.recomputing-mla-up-proj-needs-multi"),
    ),
    (
        sft,
        (
            "model.recompute_granularity=selective",
            "model.recompute_method=null",
            "model.recompute_num_layers=null",
            "model.recompute_modules=[shared_experts]",
        ),
        "model.recompute_modules",
        cite(
            "megatron-core.transformer-config.post-init.shared-experts-cannot-recomputed-while-they"
        ),
    ),
    (
        rlvr,
        (
            *SELECTIVE,
            f"{P}recompute_modules=[layernorm]",
            f"{P}fp8_cfg={{enabled: true, fp8: e4m3, fp8_recipe: delayed, fp8_param: false}}",
        ),
        f"{P}recompute_modules",
        cite(
            "megatron-core.transformer-config.post-init.selective-recomputation-moe-act-layernorm-under-fp8"
        ),
    ),
    (
        rlvr,
        (f"{P}moe_enable_deepep=true", f"{P}moe_token_dispatcher_type=alltoall"),
        f"{P}moe_token_dispatcher_type",
        cite("megatron-core.transformer-config.post-init.deepep-needs-flex-token-dispatcher"),
    ),
    (
        rlvr,
        (f"{P}moe_shared_expert_overlap=true", f"{P}moe_token_dispatcher_type=allgather"),
        f"{P}moe_token_dispatcher_type",
        cite(
            "megatron-core.transformer-config.post-init.shared-expert-overlap-needs-alltoall-flex"
        ),
    ),
    (
        sft,
        ("model.moe_token_dispatcher_type=allgather",),
        "model.moe_token_dispatcher_type",
        cite(
            "megatron-core.transformer-config.post-init.shared-expert-overlap-needs-alltoall-flex"
        ),
    ),
    (
        rlvr,
        (f"{P}bias_activation_fusion=true",),
        f"{P}bias_activation_fusion",
        cite(
            "megatron-core.transformer-config.post-init.bias-activation-fusion-exists-gelu-swiglu"
        ),
    ),
    (
        rlvr,
        (f"{P}optimizer.use_precision_aware_optimizer=true", f"{P}optimizer.optimizer=sgd"),
        f"{P}optimizer.optimizer",
        cite("megatron-core.optimizer-config.post-init.precision-aware-optimizer-adam-only"),
    ),
    (
        rlvr,
        (
            f"{P}optimizer.use_precision_aware_optimizer=true",
            f"{P}optimizer.use_distributed_optimizer=false",
        ),
        f"{P}optimizer.use_distributed_optimizer",
        cite(
            "megatron-core.optimizer-config.post-init.precision-aware-optimizer-needs-distributed-optimizer"
        ),
    ),
    (
        rlvr,
        (f"{P}optimizer.min_lr=1e-5",),
        f"{P}optimizer.min_lr",
        cite(f"{SCHEDULER}init.learning-rate-least-min-lr"),
    ),
    (
        sft,
        ("optimizer.lr=1e-5", "optimizer.min_lr=1e-4"),
        "optimizer.min_lr",
        cite(f"{SCHEDULER}init.learning-rate-least-min-lr"),
    ),
    (
        rlvr,
        (f"{P}scheduler.lr_warmup_init=1e-3",),
        f"{P}scheduler.lr_warmup_init",
        cite(f"{SCHEDULER}init.warm-up-first-learning-rate-most"),
    ),
    (
        rlvr,
        (f"{P}scheduler.start_weight_decay=0.1",),
        f"{P}scheduler.end_weight_decay",
        cite(f"{SCHEDULER}init.weight-decay-ends-above-where-starts"),
    ),
    (
        rlvr,
        (f"{P}scheduler.end_weight_decay=0.1",),
        f"{P}scheduler.weight_decay_incr_style",
        cite(f"{SCHEDULER}get-wd.constant-weight-decay-starts-ends-one-value"),
    ),
    (
        rlvr,
        (f"{P}scheduler.lr_decay_style=WSD",),
        f"{P}scheduler.lr_decay_style",
        cite(f"{SCHEDULER}init.wsd-decay-style-has-decay-phase"),
    ),
]

WARNINGS = [
    (
        rlvr,
        (
            f"{P}expert_model_parallel_size=8",
            f"{P}tensor_model_parallel_size=2",
            f"{P}sequence_parallel=false",
        ),
        f"{P}sequence_parallel",
        cite(
            "megatron-core.model-parallel-config.post-init.ep-tp-should-train-sequence-parallelism"
        ),
    ),
    (
        rlvr,
        (*SELECTIVE, f"{P}recompute_modules=[core_attn]"),
        f"{P}recompute_modules",
        cite(
            "megatron-core.transformer-config.post-init.recomputing-core-attn-may-needless-under-transformer"
        ),
    ),
    (
        rlvr,
        (f"{P}moe_enable_deepep=true", f"{P}moe_token_dispatcher_type=flex"),
        f"{P}moe_enable_deepep",
        cite(
            "megatron-core.transformer-config.post-init.moe-enable-deepep-deprecated-flex-backend"
        ),
    ),
    (
        rlvr,
        (f"{P}moe_router_dtype=null",),
        f"{P}moe_router_dtype",
        cite("megatron-core.transformer-config.post-init.32-more-experts-should-route-fp32"),
    ),
    # A warm-up longer than grpo.max_num_steps (1000), which bounds the decay: Megatron-Bridge's
    # validation cuts it before Megatron-Core's scheduler would assert.
    (
        rlvr,
        (f"{P}scheduler.lr_warmup_iters=1000",),
        f"{P}scheduler.lr_warmup_iters",
        bridge_cite(
            "megatron-bridge.config.calculate-scheduler-steps.warm-up-long-decay-longer-cut"
        ),
    ),
]


def _issues(stage: object, overrides: tuple[str, ...]) -> tuple[list[Issue], list[Issue]]:
    try:
        plan = make_plan(stage, overrides)  # type: ignore[arg-type]
    except RecipeError as exc:
        return list(exc.issues), []
    return [], list(plan.warnings)


@pytest.mark.parametrize(
    ("stage", "overrides", "key", "line"), ERRORS, ids=[e[3] + " " + e[2] for e in ERRORS]
)
def test_a_violating_value_is_refused_naming_the_key(
    stage: object, overrides: tuple[str, ...], key: str, line: str
) -> None:
    errors, _ = _issues(stage, overrides)
    assert any(i.path == key and line in i.message for i in errors), errors


@pytest.mark.parametrize(
    ("stage", "overrides", "key", "line"), WARNINGS, ids=[w[3] for w in WARNINGS]
)
def test_a_warned_value_plans_with_the_warning_naming_the_key(
    stage: object, overrides: tuple[str, ...], key: str, line: str
) -> None:
    errors, warnings = _issues(stage, overrides)
    assert not [e for e in errors if "megatron-core" in e.message], errors
    assert any(w.path == key and line in w.message for w in warnings), warnings


@pytest.mark.parametrize("stage", [rlvr, sft], ids=["rlvr", "sft"])
def test_the_stages_as_written_raise_no_megatron_core_issue(stage: object) -> None:
    errors, warnings = _issues(stage, ())
    assert not [i for i in errors + warnings if "megatron-core" in i.message]


def test_moe_act_recompute_without_grouped_gemm_experts_is_refused() -> None:
    """moe_act_recompute_needs_grouped_gemm (TransformerConfig.__post_init__): every model recipekit
    trains is a Nemotron-H MoE, whose provider uses grouped GEMM; one without Mamba layers
    stands for a model whose provider does not."""
    arch = sft.model.architecture
    assert arch is not None
    model = attrs.evolve(sft.model, architecture=attrs.evolve(arch, mamba=None))
    stage = attrs.evolve(sft, model=model)
    overrides = (
        "model.recompute_granularity=selective",
        "model.recompute_method=null",
        "model.recompute_num_layers=null",
        "model.recompute_modules=[moe_act]",
    )
    errors, _ = _issues(stage, overrides)
    found = [i for i in errors if i.path == "model.recompute_modules"]
    assert (
        found
        and cite(
            "megatron-core.transformer-config.post-init.recomputing-moe-act-needs-grouped-gemm"
        )
        in found[0].message
    ), errors


def test_layernorm_recompute_under_fp8_needs_only_another_recipe() -> None:
    # TransformerConfig.__post_init__ refuses the delayed recipe only (tensorwise needs TE >= 2.6,
    # which the container decides).
    fp8 = f"{P}fp8_cfg={{enabled: true, fp8: e4m3, fp8_recipe: tensorwise, fp8_param: false}}"
    errors, _ = _issues(rlvr, (*SELECTIVE, f"{P}recompute_modules=[layernorm]", fp8))
    assert not [
        e
        for e in errors
        if cite(
            "megatron-core.transformer-config.post-init.selective-recomputation-moe-act-layernorm-under-fp8"
        )
        in e.message
    ], errors


def _with_heads(stage: Stage, heads: int, groups: int) -> Stage:
    """``stage`` with a model card of other attention heads and query groups (Nemotron-H's 32
    and 2 fit every TP size the layout rules allow, so the rules need another model)."""
    card = stage.model
    assert card.architecture is not None
    arch = attrs.evolve(card.architecture, attention_heads=heads, kv_heads=groups)
    return attrs.evolve(stage, model=attrs.evolve(card, architecture=arch))


@pytest.mark.parametrize(
    ("stage", "overrides", "key"),
    [
        (rlvr, (), f"{P}tensor_model_parallel_size = 8"),
        (sft, ("model.tensor_model_parallel_size=4",), "model.tensor_model_parallel_size = 4"),
    ],
    ids=["nemo-rl", "megatron-bridge"],
)
def test_tensor_parallelism_must_fit_the_models_heads(
    stage: Stage, overrides: tuple[str, ...], key: str
) -> None:
    errors, _ = _issues(_with_heads(stage, 10, 10), overrides)
    texts = [e.render() for e in errors]
    assert any(
        t.startswith(key)
        and "10 attention heads" in t
        and cite(
            "megatron-core.transformer-config.post-init.num-attention-heads-tensor-model-parallel-size"
        )
        in t
        for t in texts
    ), texts
    errors, _ = _issues(_with_heads(stage, 32, 3), overrides)
    texts = [e.render() for e in errors]
    assert any(
        t.startswith(key)
        and "3 query groups" in t
        and cite(
            "megatron-core.transformer-config.post-init.num-query-groups-tensor-model-parallel-size"
        )
        in t
        for t in texts
    ), texts
    # Groups that TP divides, or that divide TP (replicated across it), plan.
    for groups in (1, 2, 16):
        errors, _ = _issues(_with_heads(stage, 32, groups), overrides)
        assert not any("query groups" in e.render() for e in errors), errors
