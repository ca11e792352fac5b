"""recipekit's training estimate against Megatron-Core measured on an H200 (tools/calibration/):
the per-term and whole-GPU errors the README states stay true, on the runs the estimate's
constants were chosen on (fit) and on those it only checks against (check)."""

from __future__ import annotations

import pytest

from tools.calibrate_memory import errors, measured_runs

# (lowest, highest) relative error of the estimate, per term, over every run of a set. The whole
# GPU (reserved + outside PyTorch) is within the issue's -3%..+10% on every run of every set but
# three, named in test_only_three_runs_are_over_ten_percent (+10.3%..+10.9%: full recompute of a
# hidden-4096 SwiGLU model at 8k tokens, where LARGEST_BLOCKS' 1.25 fp32 score blocks, 10 GiB,
# stand for the 3.9-5.7 GiB the allocator reserved); the upper bound here is theirs. The stored
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
}
RUNS = {"fit": 30, "check": 9, "fused": 10, "fused-check": 10, "check2": 12}


def _bounds(which: str) -> dict[str, tuple[float, float]]:
    chosen = {"check": CHECK_BOUNDS, "check2": CHECK2_BOUNDS}
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
    fused = [
        run for which in RUNS for run in measured_runs(which) if run.get("fused_adam", False)
    ]
    assert len(fused) == 23
    values = errors(fused)["whole_gpu"]
    assert -0.03 <= min(values) and max(values) <= 0.11, (min(values), max(values))


def test_no_run_is_more_than_three_percent_under_and_only_three_over_ten_percent() -> None:
    runs = [run for which in RUNS for run in measured_runs(which)]
    found = errors(runs)["whole_gpu"]
    assert min(found) >= -0.03
    over = sorted(
        (run["name"], run["seq"], run["recompute"], bool(run.get("fused_adam", False)))
        for run, error in zip(runs, found, strict=True)
        if error > 0.10
    )
    assert over == [
        ("dense-4k-gqa-swiglu", 8192, "full", False),
        ("dense-4k-gqa-swiglu", 8192, "full", True),
        ("dense-4k-mha-swiglu-32k", 8192, "full", True),
    ]


def test_a_gated_moe_run_is_estimated_with_gated_experts() -> None:
    # measure_one's gated_linear_unit gates the experts as well as a dense MLP: a SwiGLU MoE
    # run's experts have a gate beside their up projection, 3 x hidden x expert_ffn weights each.
    from tools.calibrate_memory import WIDE_MODELS, estimate, run_architecture_setup

    run = {**WIDE_MODELS["moe-8x-top1"], "name": "moe-8x-top1-swiglu", "gated": True,
           "seq": 1024, "micro_batch": 1, "recompute": "none"}  # fmt: skip
    arch, _ = run_architecture_setup(run)
    assert arch.moe is not None and arch.moe.gated
    plain, _ = run_architecture_setup({**run, "gated": False})
    assert plain.moe is not None and not plain.moe.gated
    gate = run["layers"] * run["experts"] * run["hidden"] * run["expert_ffn"] * 2  # bf16
    assert estimate(run)["weights"] - estimate({**run, "gated": False})["weights"] == gate
