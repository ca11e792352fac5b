"""recipekit's training estimate against Megatron-Core measured on an H200 (tools/calibration/):
the per-term errors the README states stay true as the formulas change."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tools.calibrate_memory import errors

MEASURED = Path(__file__).parent / "calibration" / "h200-megatron-core-0.19.2.json"
# (lowest, highest) relative error of the estimate, per term, over every measured run. The
# stored activations are over-estimated under full recompute because a GPT layer (attention and
# MoE in one checkpointed layer) is two layers of the hybrid pattern (one checkpoint each, as
# Nemotron's Mamba, attention and MoE layers are).
BOUNDS = {
    "weights": (-0.01, 0.01),
    "gradients": (-0.01, 0.01),
    "optimizer": (-0.01, 0.01),
    "stored_activations": (0.0, 1.0),
    "peak_allocated": (-0.05, 0.05),
}


@pytest.fixture(scope="module")
def measured_errors() -> dict[str, list[float]]:
    runs = json.loads(MEASURED.read_text())["runs"]
    assert len(runs) == 16 and not [r for r in runs if "error" in r]
    return errors(runs)


@pytest.mark.parametrize("term", sorted(BOUNDS))
def test_each_term_stays_within_its_stated_error(
    term: str, measured_errors: dict[str, list[float]]
) -> None:
    low, high = BOUNDS[term]
    values = measured_errors[term]
    assert len(values) == 16
    assert low <= min(values) and max(values) <= high, (term, min(values), max(values))
