"""Super 3.5 stages on the local test cluster's nodes, for the launch-kind tests.

The packaged stage launcher loads a stage from here by path (``RECIPEKIT_STAGE=<this
file>:per_gpu``), plans it, submits it and runs it under Slurm as it would on a cluster. The
stages are the repository's own, with their real frameworks (Megatron-Bridge launches one
process per GPU, NeMo Evaluator's launcher submits its own job); only the hardware is the test cluster's:
nodes of 4 GPUs (H100s) of this host's CPU architecture, running stand-ins that load no model.
"""

from __future__ import annotations

import platform
from typing import Any

import attrs

from recipekit.hardware import H100, CpuArch, Hardware, Interconnect, NodeType
from recipekit.megatron_bridge.framework import MEGATRON_BRIDGE
from recipekit.stage import Stage
from recipes.super35.evaluation import evaluation
from recipes.super35.sft import sft_tiny

FAKE_NODE = NodeType(
    name="FAKE-H100x4",
    gpu=H100,
    gpus_per_node=4,
    cpu_arch=CpuArch(platform.machine()),
    interconnect=Interconnect.INFINIBAND,
)


def stand_in(stage: Stage, **changes: Any) -> Stage:
    """``stage`` on the test cluster, its entry point a stand-in that loads no model: the plan
    estimates no memory for it (a model card without architecture). The 120B model would not
    fit these few GPUs, and nothing here runs it."""
    model = attrs.evolve(stage.model, architecture=None)
    return attrs.evolve(stage, model=model, **changes)


# SFT smoke test (the recipe's `sft -c tiny`): 8 GPUs, here two nodes of four: 8 ranks.
# The stand-in for run_recipe.py needs no Megatron-Bridge checkout (code=()).
per_gpu = stand_in(sft_tiny, hardware=Hardware(FAKE_NODE, num_nodes=2), code=())

# Evaluation (the recipe's stage 3): `nemo-evaluator-launcher run --config config.yaml`, once,
# on the submit host; the launcher submits the job.
delegated = stand_in(evaluation, hardware=Hardware(FAKE_NODE, num_nodes=1))

# The same SFT stage started head-only, to see one process on the first of several nodes.
head_of_two = attrs.evolve(
    per_gpu, name="sft-tiny-head", framework=attrs.evolve(MEGATRON_BRIDGE, launch="head")
)
# ... and on one node (the baked-image test's cluster), its experts over that node's GPUs.
head = head_of_two.with_values(
    {"model.expert_model_parallel_size": 4}, hardware=Hardware(FAKE_NODE, num_nodes=1)
)
