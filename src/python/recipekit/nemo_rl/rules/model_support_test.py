"""Parallelism the model's own code does not support (NVIDIA-NeMo/RL#1525)."""

# The catalogued checks these tests break, which the rule catalogue's meta-test finds by
# name (recorded from the checks that produced an issue while these tests ran):
# dtensor_sequence_parallel_on_nemotron_h.

from __future__ import annotations

from recipekit.nemo_rl.rules.conftest import RefusedAt
from recipes.super3.dapo import dapo_h100

DTENSOR_V1 = (
    "policy.megatron_cfg.enabled=false",
    "policy.dtensor_cfg.enabled=true",
    "policy.dtensor_cfg._v2=false",
)


def test_dtensor_sequence_parallel_on_nemotron_h_is_refused(refused_at: RefusedAt) -> None:
    overrides = (*DTENSOR_V1, "policy.dtensor_cfg.sequence_parallel=true")
    refused_at(dapo_h100, overrides, "policy.dtensor_cfg.sequence_parallel", "RL#1525")
