"""The memory estimate against numbers worked out by hand from its sources, and against what
upstream measured and counted (Megatron-Bridge's verification card for Nemotron 3 Super)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import attrs
import pytest

from recipekit.memory import parameters as params
from recipekit.memory.estimate import GIB, MemoryEstimate, Phase, Term
from recipekit.memory.megatron import (
    MegatronSetup,
    adam_state,
    layer_activations,
    training_terms,
)
from recipekit.memory.vllm import VllmSetup, sequence_bytes
from recipekit.model_card import (
    NEMOTRON_3_SUPER_ARCHITECTURE,
    NEMOTRON_35_SUPER_VL_ARCHITECTURE,
    Architecture,
    Mamba2,
)
from recipekit.parallelism import ParallelLayout

SUPER = NEMOTRON_3_SUPER_ARCHITECTURE
CARD = "megatron-bridge/main/examples/model_verification_cards/nemotron-3-super-120b-a12b/card.yaml"

# A GPT layer as Korthikanti et al. 2022 count it: attention then a 4h MLP, no biases here.
GPT = Architecture(
    name="gpt", pattern="*-", hidden=1024, vocab=32000, attention_heads=16, kv_heads=16,
    head_dim=64, ffn=4096,
)


def _terms(terms: tuple[Term, ...]) -> dict[str, float]:
    return {t.name: t.bytes for t in terms}


def test_super_has_the_checkpoints_parameter_count(reference_dir: Path) -> None:
    # The verification card states the element count of the Hugging Face checkpoint it imported.
    text = (reference_dir / CARD).read_text()
    found = re.search(r"source tensors and\s+([\d,]+)", text)
    assert found is not None
    assert params.language_model(SUPER).total == int(found.group(1).replace(",", ""))


def test_super_vl_counts_the_seeds_124_453_billion() -> None:
    # The recipe, "Model Specifications": 124.453B with the vision stack and MTP.
    arch = NEMOTRON_35_SUPER_VL_ARCHITECTURE
    assert arch.vision is not None
    total = params.language_model(arch).total + arch.vision.params
    assert round(total / 1e9, 3) == 124.453


def test_a_mamba2_layer_counted_by_hand() -> None:
    # h 4096, 128 heads x 64 (inner 8192), 8 groups of state 128, kernel 4 (Super's).
    h, inner, bc, heads = 4096, 8192, 2 * 8 * 128, 128
    in_proj = h * (2 * inner + bc + heads)  # z, x, B, C, dt: 4096 x 18560
    conv = (inner + bc) * (4 + 1)  # depthwise weights and bias over x, B, C
    per_head = 3 * heads  # A_log, D, dt_bias
    norms = h + inner  # the pre-norm and the gated RMSNorm
    out_proj = inner * h
    assert params.layer(SUPER, "M").dense == in_proj + conv + per_head + norms + out_proj
    assert params.layer(SUPER, "M").dense == 109_640_064


def test_a_gpt_layer_stores_korthikantis_activations_without_dropout() -> None:
    # Korthikanti et al. 2022, section 4.1: per layer sbh(34 + 5as/h) bytes with dropout. These
    # models have none, which removes the dropout masks (sbh, sbh, as^2b) and the attention
    # dropout's output (2as^2b): 32sbh + 2as^2b, the 2as^2b being a 16-bit softmax output.
    # Megatron-Core's local (unfused) attention keeps the softmax in fp32, the bf16
    # probabilities and the mask's byte: 7as^2b (tools/calibrate_memory.py measured 6.9 on an
    # H200). s 2048, b 1, h 1024, a 16, no TP.
    s, b, h, a = 2048, 1, 1024, 16
    setup = MegatronSetup(tokens=s * b, fused_attention=False)
    got = sum(layer_activations(GPT, setup, kind, s * b, 1) for kind in "*-")
    assert got == 32 * s * b * h + 6 * a * s * s * b


def test_tensor_and_sequence_parallelism_divide_every_term() -> None:
    # The paper's equation 5 for TP with SP: sbh(34/t + 5as/(ht)), here without dropout.
    s, h, a, t = 2048, 1024, 16, 4
    tp_sp = ParallelLayout(gpus=4, tp=t, sp=True)
    setup = MegatronSetup.of(tp_sp, tokens=s, fused_attention=False)
    got = sum(layer_activations(GPT, setup, kind, s, t) for kind in "*-")
    assert got == (32 * s * h + 6 * a * s * s) / t


def test_flash_attention_keeps_only_the_row_statistics() -> None:
    s, h, a = 2048, 1024, 16
    setup = MegatronSetup(tokens=s)
    got = layer_activations(GPT, setup, "*", s, 1)
    assert got == 12 * s * h + 4 * s * a  # no s^2 term; fp32 log-sum-exp per head and token


def test_adam_with_the_distributed_optimizer_is_6_plus_12_over_dp_bytes() -> None:
    # Megatron-LM's theoretical_memory_usage.py: 18 bytes per parameter, or 6 + 12/DP with the
    # distributed optimizer (bf16 weights, fp32 gradients, fp32 master weights and moments).
    dense = Architecture(name="dense", pattern="-" * 8, hidden=4096, vocab=32000, ffn=16384)
    count = params.language_model(dense).total
    for distributed, per_param in ((True, 6 + 12 / 8), (False, 18)):
        setup = MegatronSetup.of(
            ParallelLayout(gpus=8), tokens=1, distributed_optimizer=distributed
        )
        got = _terms(training_terms(dense, setup))
        state = got["weights (bf16)"] + got["gradients (fp32)"] + got["optimizer state (Adam)"]
        assert state == pytest.approx(count * per_param)


@pytest.mark.parametrize(
    ("settings", "master", "moments"),
    [
        ({"precision_aware": False}, 4, (4, 4)),
        # fp32 main parameters beside bf16 ones: only the 16 bits the bf16 copy lacks.
        ({"precision_aware": True}, 2, (4, 4)),
        ({"precision_aware": True, "exp_avg": "torch.bfloat16", "exp_avg_sq": "bf16"}, 2, (2, 2)),
        ({"precision_aware": True, "exp_avg": "torch.uint8", "exp_avg_sq": "uint8"}, 2, (1, 1)),
        ({"precision_aware": True, "store_param_remainders": False}, 4, (4, 4)),
        ({"precision_aware": True, "bf16_params": False}, 4, (4, 4)),
        ({"precision_aware": True, "main_params": "torch.float16"}, 2, (4, 4)),
        # FP8 parameters with a recipe other than delayed scaling: Megatron-Core's fp32 copy.
        ({"precision_aware": True, "te_master_weights": False}, 4, (4, 4)),
        # Without the precision-aware optimizer the dtypes are fp32 whatever is written.
        ({"precision_aware": False, "exp_avg": "bf16"}, 4, (4, 4)),
    ],
)
def test_adams_state_follows_the_precision_aware_optimizers_dtypes(
    settings: dict[str, Any], master: int, moments: tuple[int, int]
) -> None:
    state = adam_state(**settings)
    assert (state.master, (state.exp_avg, state.exp_avg_sq)) == (master, moments)
    dense = Architecture(name="dense", pattern="-" * 8, hidden=4096, vocab=32000, ffn=16384)
    setup = MegatronSetup.of(ParallelLayout(gpus=8), tokens=1, adam=state)
    got = _terms(training_terms(dense, setup))["optimizer state (Adam)"]
    count = params.language_model(dense).total
    assert got == pytest.approx(count / 8 * (master + sum(moments)))


def test_the_stages_optimizer_sections_set_adams_state() -> None:
    from recipekit.plan import make_plan
    from recipes.super35.rl import rlvr
    from recipes.super35.sft import sft

    def detail(stage: Any, *overrides: str) -> str:
        plan = make_plan(stage, overrides, check_pins=False)
        assert plan.memory is not None
        found = [t for p in plan.memory.phases for t in p.terms if t.name.startswith("optimizer")]
        return found[0].detail

    # NeMo-RL's examples (and so rlvr) turn the precision-aware optimizer on, fp32 states.
    assert detail(rlvr).startswith("10 bytes x")
    assert (
        detail(rlvr, "policy.megatron_cfg.optimizer.use_precision_aware_optimizer=false")[:11]
        == "12 bytes x "
    )
    assert detail(sft).startswith("12 bytes x")
    bf16_moments = (
        "optimizer.use_precision_aware_optimizer=true",
        "optimizer.exp_avg_dtype=torch.bfloat16",
        "optimizer.exp_avg_sq_dtype=torch.bfloat16",
    )
    assert detail(sft, *bf16_moments).startswith("6 bytes x")


def test_the_stage_says_whether_its_mtp_depths_share_a_block() -> None:
    from recipekit.plan import make_plan
    from recipes.super35.pretrain import pretrain

    def weights(*overrides: str) -> float:
        plan = make_plan(pretrain, overrides, check_pins=False)
        assert plan.memory is not None
        found = [t for t in plan.memory.phases[0].terms if t.name.startswith("weights")]
        assert len(found) == 1
        return found[0].bytes

    # Super 3.5's two MTP depths share one block unless the stage builds one each: then a
    # second MTP block's weights (one latent-MoE layer and eh_proj, over TP and EP).
    shared, separate = weights(), weights("model.mtp_use_repeated_layer=false")
    assert weights("model.mtp_use_repeated_layer=true") == shared
    assert 0.2 * GIB < separate - shared < 1.0 * GIB, (separate - shared) / GIB

    # NeMo-RL hands its own megatron_cfg.mtp_use_repeated_layer to the provider.
    from recipes.super35.rl import rlvr

    def rlvr_weights(*overrides: str) -> float:
        plan = make_plan(rlvr, ("policy.megatron_cfg.mtp_num_layers=2", *overrides))
        assert plan.memory is not None
        training = [p for p in plan.memory.phases if p.name == "training"]
        return next(t.bytes for t in training[0].terms if t.name.startswith("weights"))

    key = "policy.megatron_cfg.mtp_use_repeated_layer"
    assert rlvr_weights(f"{key}=false") > rlvr_weights() == rlvr_weights(f"{key}=true")


def test_experts_shard_over_ep_and_their_state_over_expert_dp() -> None:
    # Super on 64 GPUs at TP 1, EP 32: 64 / 32 = 2 expert-data-parallel ranks.
    setup = MegatronSetup.of(ParallelLayout(gpus=64, ep=32), tokens=1)
    got = _terms(training_terms(SUPER, setup))
    dense = params.language_model(SUPER, with_mtp=False).dense
    expert = params.language_model(SUPER, with_mtp=False).expert
    assert got["weights (bf16)"] == pytest.approx(2 * (dense + expert / 32))
    assert got["optimizer state (Adam)"] == pytest.approx(12 * (dense / 64 + expert / 32 / 2))


def test_a_mamba2_layers_activations_and_serving_state_by_hand() -> None:
    # Training, one rank, 4096 tokens: the pre-norm's input and output (2 x 2Th), the fused
    # scan's saved input projection (2T x 18560) and its output (2T x 8192).
    tokens, h = 4096, 4096
    setup = MegatronSetup(tokens=tokens)
    expected = tokens * (4 * h + 2 * 18560 + 2 * 8192)
    assert layer_activations(SUPER, setup, "M", tokens, 1) == expected
    # Serving at TP 4: per Mamba layer a conv window of 3 steps over (8192 + 2048) / 4 channels
    # in bf16 and an fp32 SSM state of 128/4 heads x 64 x 128; 40 layers.
    mamba_only = attrs.evolve(SUPER, pattern="M" * 40)
    serving = VllmSetup(tp=4, util=0.9, max_model_len=1, ssm_state_bytes=4)
    per_layer = (10240 // 4) * 3 * 2 + 32 * 64 * 128 * 4
    assert sequence_bytes(mamba_only, serving) == 40 * per_layer


def test_a_vllm_kv_cache_by_hand() -> None:
    # Super's 8 attention layers, 2 KV heads of 128: at TP 4 each rank keeps one head (vLLM
    # replicates KV heads when TP exceeds them); keys and values in bf16 for 16384 tokens.
    attention_only = attrs.evolve(SUPER, pattern="*" * 8, mamba=None)
    serving = VllmSetup(tp=4, util=0.9, max_model_len=16384)
    assert sequence_bytes(attention_only, serving) == 8 * 2 * 1 * 128 * 2 * 16384
    serving = VllmSetup(tp=1, util=0.9, max_model_len=16384, kv_bytes=1)  # fp8 cache
    assert sequence_bytes(attention_only, serving) == 8 * 2 * 2 * 128 * 1 * 16384


def test_the_verified_super_pretraining_against_its_card(reference_dir: Path) -> None:
    # Megatron-Bridge's card, pretrain_performance.H100: 64 H100s at TP1/PP2/CP1/EP32/ETP1,
    # sequence 4096, micro-batch 1, selective recompute of layernorm, moe_act, moe and
    # core_attn, no optimizer offload, gradients reduced in bf16 (the recipe at 067f987df,
    # recipes/nemotronh/h100/nemotron_3_super.py:105-131); the recipe trains MTP (2 depths).
    # Its "GiB" are decimal gigabytes: the training log prints memory_stats() / 1e9
    # (train_utils.py:1195-1206 @ 067f987df; docs/design/memory-model.md says how that is known).
    text = (reference_dir / CARD).read_text()
    measured = re.findall(r"Peak device memory is ([\d.]+) GiB allocated and\s+([\d.]+) GiB", text)
    assert measured
    setup = MegatronSetup.of(
        ParallelLayout(gpus=64, pp=2, ep=32), tokens=4096, recompute="selective",
        recompute_modules=("layernorm", "moe_act", "moe", "core_attn"), mtp=True, grad_bytes=2,
    )
    terms = {t.name: t.bytes / GIB for t in training_terms(SUPER, setup)}
    estimate = sum(terms.values())
    # What PyTorch's allocator holds: all but the CUDA context and NCCL.
    allocator = estimate - terms["runtime (CUDA, NCCL)"]
    for allocated, reserved in measured:
        allocated_gib, reserved_gib = float(allocated) * 1e9 / GIB, float(reserved) * 1e9 / GIB
        # Above what PyTorch allocated. Under what it reserved by 4.2% and 5.6%: past the band's
        # -3%, a known gap (the Transformer Engine MoE and Mamba terms still pending, the design
        # note's "Against a published measurement"); a plan within 10% of its GPU's memory
        # warns, which covers it. Held here so that it can only shrink.
        assert allocator > allocated_gib
        assert -0.06 < (allocator - reserved_gib) / reserved_gib < 0.12


def test_over_hbm_is_an_error_naming_the_two_largest_terms_and_their_keys() -> None:
    phase = Phase(
        "training",
        "training GPUs",
        (
            Term("weights (bf16)", 60 * GIB, ("policy.megatron_cfg.tensor_model_parallel_size",)),
            Term("activations", 30 * GIB, ("policy.megatron_cfg.activation_checkpointing",)),
            Term("runtime", 3 * GIB),
        ),
        80,
    )
    errors, warnings = MemoryEstimate(phases=(phase,)).issues()
    assert warnings == []
    assert [e.render() for e in errors] == [
        "memory.training: does not fit: 93.0 GiB of 80.0 GiB (HBM) per GPU (116%) on training "
        "GPUs; the largest terms are weights (bf16) 60.0 GiB and activations 30.0 GiB "
        "(to shrink them change policy.megatron_cfg.tensor_model_parallel_size, "
        "policy.megatron_cfg.activation_checkpointing)"
    ]


def test_over_ninety_percent_warns() -> None:
    phase = Phase("training", "training GPUs", (Term("weights", 73 * GIB),), 80)
    errors, warnings = MemoryEstimate(phases=(phase,)).issues()
    assert errors == [] and len(warnings) == 1
    assert "leaves under 10% of HBM free" in warnings[0].message


def test_a_mamba_card_needs_its_mamba_block() -> None:
    broken = Architecture(name="x", pattern="M", hidden=8, vocab=8)
    with pytest.raises(ValueError, match="Mamba layers but the card none"):
        params.layer(broken, "M")
    assert Mamba2(num_heads=2, head_dim=4, state_size=8, groups=1).inner == 8


def test_a_pipeline_stage_holds_pp_minus_its_rank_micro_batches_at_most_the_steps() -> None:
    # 1F1B (schedules.py, get_pp_rank_microbatches): stage s runs PP - s - 1 warm-up forwards
    # and one more before its first backward, never more than the step's micro-batches.
    # Interleaved: 2 (PP - s - 1) + (VPP - 1) PP warm-up chunk forwards, each 1/VPP of a stage.
    from recipekit.memory.megatron import _in_flight

    setup = MegatronSetup.of(ParallelLayout(gpus=8, pp=4), tokens=4096)
    assert [_in_flight(setup, stage) for stage in range(4)] == [4, 3, 2, 1]
    few = attrs.evolve(setup, microbatches=2)
    assert [_in_flight(few, stage) for stage in range(4)] == [2, 2, 2, 1]
    interleaved = attrs.evolve(setup, parallel=attrs.evolve(setup.parallel, vpp=2))
    assert [_in_flight(interleaved, stage) for stage in range(4)] == [5.5, 4.5, 3.5, 2.5]
    assert _in_flight(attrs.evolve(interleaved, microbatches=1), 0) == 1
    assert _in_flight(MegatronSetup(tokens=4096), 0) == 1


def test_the_lower_bound_leaves_only_the_allocator_simulation_out() -> None:
    # A GPT small enough to simulate, whose simulated share exceeds its envelope: the layout
    # search prices with the bound and plans (in full) only what the bound lets through.
    from recipekit.memory.megatron import ALLOCATOR, lower_bound

    # The wide grid's dense-2k-gqa at two 4k sequences, full recompute: simulated 3.39 GiB
    # beyond the allocated peak, its envelope 2.52 GiB.
    arch = attrs.evolve(
        GPT, pattern="*-" * 8, hidden=2048, vocab=32768, kv_heads=4, head_dim=128, ffn=8192
    )
    setup = MegatronSetup(
        tokens=8192, sequence=4096, recompute="full", fused_attention=False,
        fused_adam=False,
    )  # fmt: skip
    full = _terms(training_terms(arch, setup))
    with lower_bound():
        bound = _terms(training_terms(arch, setup))
    assert _terms(training_terms(arch, setup)) == full  # the cache keeps the two apart
    assert {k: v for k, v in bound.items() if k != ALLOCATOR} == {
        k: v for k, v in full.items() if k != ALLOCATOR
    }
    assert bound[ALLOCATOR] < full[ALLOCATOR]


BRIDGE_MAIN = "megatron-bridge/main/"
LIGHTNING_SOURCES = BRIDGE_MAIN + "src/megatron/bridge/recipes/nemotronh/h100/nemotron_3_nano.py"
LIGHTNING_CARD = BRIDGE_MAIN + "examples/model_verification_cards/nemotron-3.5-lightning/card.yaml"


def _pinned(name: str) -> str:
    # The reference folder may predate these pins (tools/fetch-reference adds them): skip then.
    import os

    configured = os.environ.get("RECIPEKIT_REFERENCE_DIR", "")
    root = Path(configured) if configured else Path(__file__).parents[4] / ".reference"
    path = root / name
    if not path.is_file():
        pytest.skip(f"{name} is not in {root}: run tools/fetch-reference")
    return path.read_text()


def test_the_lightning_card_is_the_pinned_provider_and_the_checkpoints_parameter_count() -> None:
    # Nemotron 3.5 Lightning is Nemotron 3 Nano's HybridModelProvider (the 8-GPU H100 pretrain
    # recipe states every size) with two MTP depths of one *E block, and the HF checkpoint the
    # verification card converted has 32,913,266,240 parameters.
    from recipekit.model_card import NEMOTRON_35_LIGHTNING_30B

    arch = NEMOTRON_35_LIGHTNING_30B.architecture
    assert arch is not None and arch.mamba is not None and arch.moe is not None
    source = _pinned(LIGHTNING_SOURCES)
    provider = source.split("cfg.model = HybridModelProvider(", 1)[1].split("\n    )\n", 1)[0]

    def value(key: str) -> str:
        found = re.search(rf"\b{key}=([^,\n]+),", provider)
        assert found is not None, key
        return found.group(1).strip('"')

    assert value("hybrid_layer_pattern") == arch.pattern and int(value("num_layers")) == 52
    assert int(value("hidden_size")) == arch.hidden
    assert int(value("num_attention_heads")) == arch.attention_heads
    assert int(value("num_query_groups")) == arch.kv_heads
    assert int(value("kv_channels")) == arch.head_dim
    assert int(value("mamba_num_heads")) == arch.mamba.num_heads
    assert int(value("mamba_head_dim")) == arch.mamba.head_dim
    assert int(value("mamba_state_dim")) == arch.mamba.state_size
    assert int(value("mamba_num_groups")) == arch.mamba.groups
    assert int(value("num_moe_experts")) == arch.moe.num_experts
    assert int(value("moe_router_topk")) == arch.moe.top_k
    assert int(value("moe_ffn_hidden_size")) == arch.moe.expert_ffn
    assert int(value("moe_shared_expert_intermediate_size")) == arch.moe.shared_ffn
    assert value("activation_func") == "squared_relu" and not arch.moe.gated
    lightning = source.split("def nemotron_3_5_lightning_pretrain_config", 1)[1]
    lightning = lightning.split("\ndef ", 1)[0]
    assert f"cfg.model.mtp_num_layers = {arch.mtp_depth}" in lightning
    assert f'cfg.model.mtp_hybrid_override_pattern = "{arch.mtp_pattern}"' in lightning
    assert "cfg.model.mtp_use_repeated_layer = True" in lightning  # one block, shared
    found = re.search(r"([\d,]+) parameters match the pinned source", _pinned(LIGHTNING_CARD))
    assert found is not None
    assert params.language_model(arch).total == int(found.group(1).replace(",", ""))
