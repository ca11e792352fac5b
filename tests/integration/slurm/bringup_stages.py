"""The B200 GRPO stage (``recipes/super3/dapo.py``) on any number of nodes, for the bring-up
benchmark and the Slurm-call test: half the nodes generate, half train (no context or
expert-tensor parallelism, so any even node count plans), 8 GPUs each. The node count is read from
``RECIPEKIT_BRINGUP_NODES`` (default 2). The stage launcher loads it by path
(``RECIPEKIT_STAGE=<this file>:dapo``)."""

from __future__ import annotations

import os

import attrs

from recipekit.hardware import B200_NODE, Hardware
from recipes.super3.dapo import dapo_b200

NODES_VARIABLE = "RECIPEKIT_BRINGUP_NODES"
NODES = int(os.environ.get(NODES_VARIABLE, "2"))

_stage = dapo_b200.with_values(
    {
        "policy.generation.colocated.resources.num_nodes": max(1, NODES // 2),
        "policy.megatron_cfg.context_parallel_size": 1,
        "policy.megatron_cfg.expert_tensor_parallel_size": 1,
    },
    name=f"bringup-{NODES}n",
    hardware=Hardware(B200_NODE, num_nodes=NODES),
)
# A stand-in runs instead of NeMo-RL and loads no model: the plan estimates no memory for it
# (as fake_stages.stand_in), which 120B on two nodes would not fit.
dapo = attrs.evolve(_stage, model=attrs.evolve(_stage.model, architecture=None))
