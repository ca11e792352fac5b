"""recipekit's training estimate against Megatron-Core measured on an H200 (tools/calibration/):
the per-term and whole-GPU errors the README states stay true, on the runs the estimate's
constants were chosen on (fit) and on those it only checks against (check)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tools.calibrate_memory import errors, estimate, measured, measured_runs

CALIBRATION = Path(__file__).parent / "calibration"

# (lowest, highest) relative error of the estimate, per term, over every run of a set. The whole
# GPU (reserved + outside PyTorch) takes the allocator's share as the larger of the block-level
# simulation (megatron._simulated_step) and the LARGEST_BLOCKS envelope; it is within the issue's
# -3%..+10% on every run of every set but five, named in
# test_only_the_named_runs_are_more_than_three_percent_under_or_ten_over: four over (+10.3%..
# +10.9% where LARGEST_BLOCKS' 1.25 fp32 score blocks, 10 GiB, stand for the 3.9-5.7 GiB the
# allocator reserved at 8k tokens under full recompute; check2's 32-expert run at 4k x 2, +11.4%,
# where the simulation displaces one score block more than was measured) and one under. The stored
# activations follow what autograd keeps (megatron.mlp_saved_widths, _stored_qkv, the checkpoint
# units of full recompute): -5%..+58%, the high end the MoE runs under full recompute, whose
# measured forward pass ends below the fp32 logits the harness adds to the estimate.
BOUNDS = {
    "weights": (-0.01, 0.01),
    "gradients": (-0.01, 0.01),
    "optimizer": (-0.01, 0.01),
    "stored_activations": (-0.06, 0.60),
    "peak_allocated": (-0.03, 0.10),
    "whole_gpu": (-0.03, 0.11),
}
CHECK_BOUNDS = BOUNDS
FUSED_BOUNDS = BOUNDS
# "check2": twelve shapes of four new models and two wide-grid ones, measured once with the model
# frozen (tools/calibrate_memory.py HOLDOUT_RUNS): whole GPU -2.9%..+10.3% since the activations
# follow autograd (was -4.5%..+9%: its hidden-4096 MHA SwiGLU run at 4k tokens, selective, lacked
# the glu's two extra FFN widths). Only the 96-expert model's weights are 3% over what recipekit
# counts (its gradients 2% under): buffers beside the parameters that the estimate does not name.
CHECK2_BOUNDS = {
    **BOUNDS,
    "weights": (-0.035, 0.01),
    "gradients": (-0.01, 0.02),
    "whole_gpu": (-0.03, 0.115),
}
# "check3": twelve shapes chosen and measured before the activations followed autograd and never
# shown to that work (tools/calibrate_memory.py HOLDOUT3_RUNS). Weights to activations within
# -3%..+6%; the whole GPU -6.2%..+7.6% with the envelope alone, -4.1%..+7.6% with the simulation:
# one run is still more than 3% under, on the allocator's share alone (UNDER_ESTIMATED), so the
# -3% floor is not met on this hold-out (issue 25 stays open).
CHECK3_BOUNDS = {
    **BOUNDS,
    "stored_activations": (-0.04, 0.06),
    "peak_allocated": (-0.02, 0.07),
    "whole_gpu": (-0.045, 0.08),
}
# "check4": twelve shapes chosen and measured (03:05 UTC, 206 s on the H200) before the allocator's
# simulation (memory/step_trace.py) joined the estimate, and never shown to that work: the clean
# hold-out of the model as it is. Weights, gradients and optimizer 0%, allocated peak 0..+3%,
# whole GPU -1.6%..+12.6%: none under -3%, one over +10% (the over list below). The estimate
# before the simulation was -3.7%..+9% on it (moe-8x-top2-4k at 4k, selective, under).
CHECK4_BOUNDS = {
    **BOUNDS,
    "stored_activations": (-0.10, 0.31),
    "peak_allocated": (-0.01, 0.04),
    "whole_gpu": (-0.03, 0.13),
}
# "check5": fourteen shapes of five new models chosen and committed at 10593ad, before they ran,
# and measured once on 2026-12-05: ten on a lent H100 80GB (323 s), and the four that ran out of
# its memory (each estimated past it: test_the_runs_that_ran_out_of_memory_...) on an H200 that
# afternoon. Weights, gradients and optimizer 0%, allocated peak -0.1%..+3.3%, whole GPU
# -0.1%..+8.9%: inside the issue's -3%..+10% band on every run.
CHECK5_BOUNDS = {
    **BOUNDS,
    "stored_activations": (-0.08, 0.09),
    "peak_allocated": (-0.01, 0.04),
    "whole_gpu": (-0.01, 0.095),
}
# Issue 44's runs (tools/calibrate_memory.py ISSUE44_RUNS, measured once on an H100 on
# 2026-12-05, 345 s, chosen and committed before they ran). "block": block recompute of 3, 4, 6
# and 9 of 12 layers and of 2 and 5 of 8 beside uniform (1, 2 and 3 layers a checkpoint) and none:
# block stores 17.6 GiB where uniform stores 1.2, and the estimate follows it (stored activations
# within -0.2%..+3.3% on every block run; allocated peak -1.2%..+2.2%, whole GPU -2.6%..+8.0% over
# the set). "expandable": expandable segments on eight shapes, whole GPU -1.4%..+14.4%, over +10%
# only under full recompute at 8k tokens (the over list below); "twin": three of those shapes
# with the default allocator, +1.0%..+8.4%. The wide grid's two "allocator" runs (expandable
# segments, 2026-12-04): -1.2% and +11.6% (a full recompute of 8k tokens, too).
BLOCK_BOUNDS = {
    **BOUNDS,
    "peak_allocated": (-0.015, 0.025),
    "whole_gpu": (-0.03, 0.085),
}
EXPANDABLE_BOUNDS = {
    **BOUNDS,
    "stored_activations": (-0.02, 0.12),
    "peak_allocated": (-0.005, 0.03),
    "whole_gpu": (-0.02, 0.145),
}
TWIN_BOUNDS = {
    **BOUNDS,
    "stored_activations": (-0.01, 0.12),
    "peak_allocated": (0.0, 0.02),
    "whole_gpu": (0.0, 0.09),
}
ALLOCATOR_BOUNDS = {
    **BOUNDS,
    "whole_gpu": (-0.02, 0.12),
}
RUNS = {
    "fit": 30, "check": 9, "fused": 10, "fused-check": 10, "check2": 12, "check3": 11, "check4": 12,
    "check5": 14, "block": 12, "expandable": 8, "twin": 3, "allocator": 2,
}  # fmt: skip
# The run the whole-GPU estimate is more than 3% under (-4.1%), of check3: PyTorch reserved 9.3 GiB
# beyond the allocated peak, 2.3 x its largest short-lived block (the envelope allows 1.25); its
# second step took 19.9 GiB of new segments (four fp32 score blocks and the logits), the
# simulation 15.9 (one score block fewer). check3's two other runs that were under (-6.2%, -6.1%)
# the simulation finds: the 200k vocabulary's fp32 logits segment taken by an embedding moment,
# the 16-expert model's activations displaced by its moments.
UNDER_ESTIMATED: list[tuple[object, ...]] = [
    ("dense-4k-gqa8-swiglu-128k", 4096, "none", False),
]


def _bounds(which: str) -> dict[str, tuple[float, float]]:
    chosen = {
        "check": CHECK_BOUNDS, "check2": CHECK2_BOUNDS, "check3": CHECK3_BOUNDS,
        "check4": CHECK4_BOUNDS, "check5": CHECK5_BOUNDS, "block": BLOCK_BOUNDS,
        "expandable": EXPANDABLE_BOUNDS, "twin": TWIN_BOUNDS, "allocator": ALLOCATOR_BOUNDS,
    }  # fmt: skip
    return chosen.get(which, FUSED_BOUNDS if which.startswith("fused") else BOUNDS)


@pytest.fixture(scope="module", params=sorted(RUNS))
def measured_set(request: pytest.FixtureRequest) -> tuple[str, dict[str, list[float]]]:
    which = request.param
    runs = measured_runs(which)
    assert len(runs) == RUNS[which]
    return which, errors(runs)


@pytest.mark.parametrize("term", sorted(BOUNDS))
def test_each_term_stays_within_its_stated_error(
    term: str, measured_set: tuple[str, dict[str, list[float]]]
) -> None:
    which, found = measured_set
    low, high = _bounds(which)[term]
    values = found[term]
    assert len(values) == RUNS[which]
    assert low <= min(values) and max(values) <= high, (which, term, min(values), max(values))


def test_with_a_fused_adam_the_whole_gpu_is_never_under_estimated_by_more_than_three_percent() -> (
    None
):
    # What the plans estimate: every stage's image has Transformer Engine, whose FusedAdam keeps
    # no fp32 step temporaries.
    fused = [run for which in RUNS for run in measured_runs(which) if run.get("fused_adam", False)]
    assert len(fused) == 49
    known = [run for run in fused if _key(run) in UNDER_ESTIMATED]
    values = errors([run for run in fused if run not in known])["whole_gpu"]
    # Over +11% only with expandable segments under full recompute at 8k tokens (+14.4%).
    assert -0.03 <= min(values) and max(values) <= 0.145, (min(values), max(values))
    assert known == []


def _key(run: dict[str, object]) -> tuple[object, ...]:
    key = (run["name"], run["seq"], run["recompute"], bool(run.get("fused_adam", False)))
    return (*key, "expandable") if "alloc_conf" in run else key


def test_only_the_named_runs_are_more_than_three_percent_under_or_ten_over() -> None:
    runs = [run for which in RUNS for run in measured_runs(which)]
    found = errors(runs)["whole_gpu"]
    under = sorted(_key(run) for run, error in zip(runs, found, strict=True) if error < -0.03)
    assert under == UNDER_ESTIMATED
    over = sorted(_key(run) for run, error in zip(runs, found, strict=True) if error > 0.10)
    assert over == [
        ("dense-2k-gqa", 4096, "full", False, "expandable"),
        ("dense-3k-gqa4-swiglu-100k", 8192, "full", True, "expandable"),
        ("dense-4k-gqa-swiglu", 8192, "full", False),
        ("dense-4k-gqa-swiglu", 8192, "full", True),
        ("dense-4k-mha-swiglu-32k", 8192, "full", True),
        ("moe-32x-top2-100k", 4096, "full", False),
        ("moe-32x-top4-swiglu-32k", 8192, "full", False),
        ("moe-48x-top4-2k", 8192, "full", False, "expandable"),
    ]


def test_a_gated_moe_run_is_estimated_with_gated_experts() -> None:
    # measure_one's gated_linear_unit gates the experts as well as a dense MLP: a SwiGLU MoE
    # run's experts have a gate beside their up projection, 3 x hidden x expert_ffn weights each.
    from tools.calibrate_memory import WIDE_MODELS, run_architecture_setup

    run = {**WIDE_MODELS["moe-8x-top1"], "name": "moe-8x-top1-swiglu", "gated": True,
           "seq": 1024, "micro_batch": 1, "recompute": "none"}  # fmt: skip
    arch, _ = run_architecture_setup(run)
    assert arch.moe is not None and arch.moe.gated
    plain, _ = run_architecture_setup({**run, "gated": False})
    assert plain.moe is not None and not plain.moe.gated
    gate = run["layers"] * run["experts"] * run["hidden"] * run["expert_ffn"] * 2  # bf16
    assert estimate(run)["weights"] - estimate({**run, "gated": False})["weights"] == gate


def test_a_run_that_ran_out_of_memory_is_estimated_past_the_gpu() -> None:
    # check3's hidden-4096 SwiGLU model at 16k tokens under full recompute died of an OOM on the
    # H200 (unfused attention's fp32 scores of 32 heads, 16 GiB a request, with 130.6 GiB in use):
    # the estimate must not call it a fit.
    died = _out_of_memory(_file_runs("h200-megatron-core-0.19.2-check3.json"))
    assert [(run["name"], run["seq"]) for run in died] == [("dense-4k-gqa8-swiglu-128k", 16384)]
    h200 = 139.8 * 1024**3  # what torch reported as the GPU's total capacity in that run
    assert estimate(died[0])["whole_gpu"] > h200


def test_the_runs_that_ran_out_of_memory_on_the_h100_are_estimated_past_it() -> None:
    # check5's four runs that did not fit the lent H100 80GB: hidden 5120 at 8k under full
    # recompute, 128 experts top-8 at 8k selective, the ten-layer hidden-1024 model at 16k (full)
    # and at 4k x 4 (none). Each must be estimated past the GPU's capacity, not called a fit.
    runs = _file_runs("h100-megatron-core-0.19.2-check5.json")
    assert {run["gpu"] for run in runs if "gpu" in run} == {"NVIDIA H100 80GB HBM3"}
    died = _out_of_memory(runs)
    assert sorted((run["name"], run["seq"], run["micro_batch"]) for run in died) == [
        ("dense-1k-gqa2-10l", 4096, 4),
        ("dense-1k-gqa2-10l", 16384, 1),
        ("dense-5k-gqa8-swiglu-152k", 8192, 1),
        ("moe-128x-top8-swiglu-hd64", 8192, 1),
    ]
    h100 = 79.18 * 1024**3  # what torch reported as the GPU's total capacity in those runs
    for run in died:
        assert estimate(run)["whole_gpu"] > h100, run["name"]
    # The same four, measured on an H200: what they really held is past the H100 too.
    again = {_key(run): run for run in _file_runs("h200-megatron-core-0.19.2-check5.json")}
    assert {_key(run) for run in died} == set(again)
    for run in again.values():
        assert run["gpu"] == "NVIDIA H200" and "error" not in run
        assert measured(run, "whole_gpu") > h100, run["name"]


def _file_runs(name: str) -> list[dict[str, Any]]:
    runs: list[dict[str, Any]] = json.loads((CALIBRATION / name).read_text())["runs"]
    return runs


def _out_of_memory(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The runs that died; each file keeps the last 500 characters of a run's stderr, which
    must be the end of torch's out-of-memory message."""
    died = [run for run in runs if "error" in run]
    for run in died:
        assert "expandable_segments:True to avoid fragmentation" in run["error"], run["error"]
    return died


# --- Megatron-Bridge's published runs of Nemotron 3.5 Lightning (tools/published_runs.py) -------

# (lowest, highest) relative error of the estimate's peak allocated and peak reserved against
# the verification card's rank-0 peaks (decimal gigabytes, tools/published_runs.py CARD_GB), per
# run, as measured at 067f987df with the allocator's expandable segments and Transformer Engine's
# fused norms modelled. Within the issue's -3%..+10% on reserved: pretrain_fsdp.GB200 bf16 and
# sft.GB200. Outside it, each named with why in docs/design/memory-model.md: pretrain.H100
# under; pretrain.GB200 and pretrain_performance.GB200 over by the experts' second width, which
# Transformer Engine's grouped MLP does not keep (counted once the Mamba mixer's two tensors are,
# PENDING_PAIR); pretrain_fsdp.GB200 fp8_mx (MXFP8 not modelled) and pretrain_performance.H100
# (activation offloading; its bf16 Adam moments are modelled, adam_state) over.
PUBLISHED_BOUNDS: dict[str, tuple[tuple[float, float], tuple[float, float]]] = {
    "pretrain.H100": ((-0.068, -0.058), (-0.134, -0.124)),
    "pretrain.GB200": ((0.128, 0.138), (0.120, 0.130)),
    "pretrain_fsdp.GB200.variants.bf16": ((0.110, 0.120), (0.094, 0.1)),
    "pretrain_fsdp.GB200.variants.fp8_mx": ((0.363, 0.373), (0.358, 0.368)),
    "sft.GB200": ((0.002, 0.012), (-0.012, -0.002)),
    "pretrain_performance.H100": ((0.158, 0.168), (0.130, 0.140)),
    "pretrain_performance.GB200": ((0.138, 0.148), (0.128, 0.138)),
}
# The runs the whole band holds; those over it because a feature they turn on is not modelled
# (their Missing entries say which and by how much), or by the pending pair of terms alone; and
# those under it.
IN_BAND = {"pretrain_fsdp.GB200.variants.bf16", "sft.GB200"}
UNMODELLED_OVER = {"pretrain_fsdp.GB200.variants.fp8_mx", "pretrain_performance.H100"}
PENDING_PAIR_OVER = {"pretrain.GB200", "pretrain_performance.GB200"}
UNDER = {"pretrain.H100"}


@pytest.fixture(scope="module")
def lightning_card() -> dict[str, Any]:
    import os

    from tools.published_runs import read_card

    reference = Path(os.environ.get("RECIPEKIT_REFERENCE_DIR", "") or ".reference")
    card = read_card(reference)
    if card is None:
        pytest.skip("the pinned Lightning verification card is absent: run tools/fetch-reference")
    return card


def test_the_published_runs_errors_stay_within_their_bounds(lightning_card: dict[str, Any]) -> None:
    from tools.published_runs import RUNS, errors

    found = errors(lightning_card)
    assert set(found) == set(PUBLISHED_BOUNDS) == {run.name for run in RUNS}
    for name, (allocated, reserved) in found.items():
        (low_a, high_a), (low_r, high_r) = PUBLISHED_BOUNDS[name]
        assert low_a <= allocated <= high_a, (name, "allocated", allocated)
        assert low_r <= reserved <= high_r, (name, "reserved", reserved)
    band = {name for name, (_, reserved) in found.items() if -0.03 <= reserved <= 0.10}
    assert band == IN_BAND
    over = {name for name, (_, r) in found.items() if r > 0.10}
    assert over == UNMODELLED_OVER | PENDING_PAIR_OVER
    assert {name for name, (_, r) in found.items() if r < -0.03} == UNDER


def test_every_published_run_is_the_cards_and_lists_what_is_not_modelled(
    lightning_card: dict[str, Any],
) -> None:
    # Each run is the recipe its card item ran, on the GPUs its command asked for; a run over the
    # band names the features that are not modelled.
    from tools.published_runs import RUNS

    for run in RUNS:
        node: Any = lightning_card["items"]
        for key in run.item:
            node = node[key]
        command = " ".join(node["command"].split())
        assert f"--recipe {run.recipe}" in command, run.name
        nodes = int(command.split("--nodes ")[1].split()[0])
        per_node = int(command.split("--gpus-per-node ")[1].split()[0])
        assert nodes * per_node == run.gpus == run.setup.parallel.gpus, run.name
        assert run.setup.expandable_segments and run.setup.mtp, run.name
        if run.name in UNMODELLED_OVER:
            assert run.missing, run.name


def test_the_estimate_follows_block_recompute_against_uniform() -> None:
    # Each block run against the uniform run (one layer a checkpoint) of its model and shape:
    # block keeps the layers after its checkpoints whole, and the estimate's allocated peak
    # rises by what the GPU's did, within 0.5 GiB.
    runs = measured_runs("block")
    uniform = {
        (run["name"], run["seq"], run["micro_batch"]): run
        for run in runs
        if run.get("recompute_method") == "uniform" and run.get("recompute_num_layers") == 1
    }
    blocks = [run for run in runs if run.get("recompute_method") == "block"]
    paired = [(run, uniform.get((run["name"], run["seq"], run["micro_batch"]))) for run in blocks]
    compared = [(run, base) for run, base in paired if base is not None]
    assert len(blocks) == 6 and len(compared) == 5
    for run, base in compared:
        got = measured(run, "peak_allocated") - measured(base, "peak_allocated")
        guess = estimate(run)["peak_allocated"] - estimate(base)["peak_allocated"]
        assert got > 2.5 * 1024**3, run  # the difference is real: 2.5 to 14.6 GiB
        assert abs(guess - got) < 0.5 * 1024**3, (run["name"], run["recompute_num_layers"])


def test_the_loss_holds_what_the_estimate_counts_for_each_cross_entropy() -> None:
    """Megatron-Core's cross entropies over three prediction depths of 4096 tokens and a
    131072-entry vocabulary, measured on an H100 (tools/calibrate_memory_loss.py): each depth
    keeps 4 bytes a logit, and the loss's peak is what the estimate counts, the native fused
    one's fp32 temporary included (18 bytes a logit against 14 unfused)."""
    from tools.calibrate_memory_loss import estimated_peak, per_logit

    runs = json.loads((CALIBRATION / "h100-megatron-core-0.19.2-loss.json").read_text())["runs"]
    assert {run["implementation"] for run in runs} == {"native", "unfused"}
    for run in runs:
        got = per_logit(run)
        assert got["kept_per_depth"] == pytest.approx(4, abs=0.01)
        assert got["forward_peak"] == pytest.approx(estimated_peak(run), abs=0.05)
        assert got["backward_peak"] <= got["forward_peak"] + 0.05
    assert estimated_peak({"depths": 3, "implementation": "native"}) == 18


def test_the_estimate_follows_mtp_depths() -> None:
    # One or two prediction depths (tools/calibration/h100-megatron-core-0.19.2-mtp.json, chosen
    # before it ran), each beside its twin without MTP: weights for a shared block and a block a
    # depth, each depth's fp32 logits, its layer and heads kept (6 widths) or, under full
    # recompute, only its checkpoint's inputs (3).
    path = Path(__file__).parent / "calibration" / "h100-megatron-core-0.19.2-mtp.json"
    runs = json.loads(path.read_text())["runs"]
    assert [run.get("error") for run in runs] == [None] * 11
    mtp = [run for run in runs if run.get("mtp")]
    assert len(mtp) == 8
    assert {run["recompute"] for run in mtp} == {"none", "full", "selective"}
    assert any(run["mtp_repeated"] is False for run in mtp)
    found = errors(runs)
    for term in ("weights", "gradients", "optimizer", "stored_activations", "peak_allocated"):
        assert -0.01 <= min(found[term]) and max(found[term]) <= 0.015, (term, found[term])
    assert -0.025 <= min(found["whole_gpu"]) and max(found["whole_gpu"]) <= 0.045
    # What MTP adds, measured against the twin, and what the estimate adds: the activations the
    # depths keep to within 0.03 GiB; the allocated peak's rise is under-counted by up to 0.41
    # GiB (about a byte a logit of one depth, a transient of the depths' loss the model does not
    # name), which the bounds above absorb.
    twins = {run["name"]: run for run in runs if not run.get("mtp")}
    for run in (r for r in mtp if r["recompute"] == "none" and r["seq"] == 4096):
        base = twins[run["name"]]
        for term, tolerance in (("stored_activations", 0.03), ("peak_allocated", 0.45)):
            got = measured(run, term) - measured(base, term)
            guess = estimate(run)[term] - estimate(base)[term]
            assert got > 2 * 1024**3, (run["name"], term)
            assert abs(guess - got) < tolerance * 1024**3, (run["name"], run["mtp"], term)


def test_the_estimate_follows_mlp_and_moe_recompute() -> None:
    # Selective recompute of the dense MLP and of the whole MoE block
    # (tools/calibration/h100-megatron-core-0.19.2-selective.json, chosen before it ran). The runs
    # that recompute layernorm did not start: Megatron-Core 0.19.2's CheckpointWithoutOutput
    # needs Transformer Engine (tensor_parallel/random.py:693 reads FP8GlobalStateManager), which
    # the device's image lacks; every stage's image has it.
    path = Path(__file__).parent / "calibration" / "h100-megatron-core-0.19.2-selective.json"
    runs = json.loads(path.read_text())["runs"]
    failed = [run for run in runs if "error" in run]
    assert len(failed) == 5 and all("layernorm" in run["recompute_modules"] for run in failed)
    assert all("FP8GlobalStateManager" in run["error"] for run in failed)
    ran = [run for run in runs if "error" not in run]
    assert sorted(tuple(run.get("recompute_modules", ())) for run in ran) == [
        (), (), ("mlp",), ("moe",)
    ]
    found = errors(ran)
    for term in ("weights", "gradients", "optimizer", "stored_activations", "peak_allocated"):
        assert -0.01 <= min(found[term]) and max(found[term]) <= 0.025, (term, found[term])
    assert -0.03 <= min(found["whole_gpu"]) and max(found["whole_gpu"]) <= 0.03


# The layouts real stages run (calibrate_memory.py PARALLEL_RUNS: TP 2 and 4, EP 2 and 4, the
# distributed optimizer over 2-4 data-parallel ranks), chosen and committed before they ran and
# measured on 2026-12-06 on a lent H100 as each layout's rank 0 alone (--emulate: PyTorch's fake
# process group, collectives mirroring the rank; no multi-GPU machine was lent). The first file's
# four MoE runs failed before any memory was read (two: MoE with TP needs sequence parallelism;
# two: the harness's all-to-all): the second file holds the EP-only MoE layouts that replaced
# them, measured after the harness was fixed. The whole GPU is not held:
# an emulated rank has no NCCL buffers (0.7-0.8 GiB outside PyTorch where the estimate counts
# 2.7-2.9 GiB for NCCL and the CUDA context). The division of the state over TP, EP and DP is
# exact to 1.5% (TP 4: weights 2.7% under, what every TP rank keeps whole); the activations
# -9.7%..+11.3%, the low end EP 4 with 32 experts, whose rank 0 takes about 10% more than an
# even share of the routed tokens (the estimate assumes even routing); the allocated peak
# -6.0%..+4.4%.
PARALLEL_BOUNDS = {
    "weights": (-0.03, 0.01),
    "gradients": (-0.01, 0.015),
    "optimizer": (-0.01, 0.01),
    "stored_activations": (-0.10, 0.115),
    "peak_allocated": (-0.065, 0.045),
}


def test_the_estimate_divides_the_state_and_activations_as_the_layouts_do() -> None:
    runs = [
        run
        for name in (
            "h100-megatron-core-0.19.2-parallel-emulated.json",
            "h100-megatron-core-0.19.2-parallel-emulated-moe.json",
        )
        for run in json.loads((CALIBRATION / name).read_text())["runs"]
        if "error" not in run
    ]
    layouts = sorted((run.get("gpus", 1), run.get("tp", 1), run.get("ep", 1)) for run in runs)
    assert layouts == [(1, 1, 1), (2, 1, 2), (4, 1, 1), (4, 1, 2), (4, 1, 2), (4, 1, 4),
                       (4, 2, 1), (4, 2, 1), (4, 4, 1)]  # fmt: skip
    assert all(run.get("emulated") for run in runs if run.get("gpus", 1) > 1)
    found = errors(runs)
    for term, (low, high) in PARALLEL_BOUNDS.items():
        assert low <= min(found[term]) and max(found[term]) <= high, (term, found[term])
    # The layout moves the terms: DP 4 keeps a quarter of the optimizer state, TP 2 half the
    # weights and activations of the one-GPU twin.
    twin = next(run for run in runs if run.get("gpus", 1) == 1)
    dp4 = next(run for run in runs if (run.get("gpus"), run.get("tp"), run.get("ep")) == (4, 1, 1))
    assert measured(dp4, "optimizer") == pytest.approx(measured(twin, "optimizer") / 4, rel=0.01)
    assert estimate(dp4)["optimizer"] == pytest.approx(estimate(twin)["optimizer"] / 4, rel=0.01)


def test_the_layout_hold_out_stays_within_its_bounds() -> None:
    # PARALLEL_CHECK_RUNS: six layouts on five models of the earlier hold-outs, chosen and
    # committed before they ran (the estimate unchanged since the first layouts), measured once
    # on 2026-12-06 as each layout's rank 0 alone. State to 1%; the allocated peak -2%..+4%;
    # the activations -13%..+3%, the low end the expert-parallel runs again (rank 0 took more
    # than an even share of the routed tokens: routing imbalance is not modelled).
    runs = json.loads((CALIBRATION / "h100-megatron-core-0.19.2-parallel-emulated-check.json")
                      .read_text())["runs"]  # fmt: skip
    assert len(runs) == 6 and not any("error" in run for run in runs)
    found = errors(runs)
    bounds = {**PARALLEL_BOUNDS, "stored_activations": (-0.135, 0.035)}
    for term, (low, high) in bounds.items():
        assert low <= min(found[term]) and max(found[term]) <= high, (term, found[term])
