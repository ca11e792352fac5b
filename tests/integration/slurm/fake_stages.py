"""Super 3.5 stages on the local test cluster's nodes, for the launch-kind tests.

The packaged stage launcher loads a stage from here by path (``RECIPEKIT_STAGE=<this
file>:per_gpu``), plans it, submits it and runs it under Slurm as it would on a cluster. The
stages are the repository's own, with their real frameworks (Megatron-Bridge launches one
process per GPU, NeMo Evaluator's launcher submits its own job); only the hardware is the test cluster's:
nodes of 4 GPUs (H100s, for the stages' memory checks) of this host's CPU architecture.
"""

from __future__ import annotations

import platform

import attrs

from recipekit.hardware import H100, CpuArch, Hardware, Interconnect, NodeType
from recipekit.megatron_bridge.framework import MEGATRON_BRIDGE
from recipes.super35.evaluation import evaluation
from recipes.super35.sft import sft_tiny

FAKE_NODE = NodeType(
    name="FAKE-H100x4",
    gpu=H100,
    gpus_per_node=4,
    cpu_arch=CpuArch(platform.machine()),
    interconnect=Interconnect.INFINIBAND,
)

# SFT smoke test (seed 004's `sft -c tiny`): 8 GPUs, here two nodes of four: 8 ranks.
# The stand-in for run_recipe.py needs no Megatron-Bridge checkout (code=()).
per_gpu = attrs.evolve(sft_tiny, hardware=Hardware(FAKE_NODE, num_nodes=2), code=())

# Evaluation (seed 004's stage 3): `nemo-evaluator-launcher run --config config.yaml`, once,
# on the submit host; the launcher submits the job.
delegated = attrs.evolve(evaluation, hardware=Hardware(FAKE_NODE, num_nodes=1))

# The same SFT stage started head-only, to see one process on the first of several nodes.
head_of_two = attrs.evolve(
    per_gpu, name="sft-tiny-head", framework=attrs.evolve(MEGATRON_BRIDGE, launch="head")
)
# ... and on one node (the baked-image test's cluster), its experts over that node's GPUs.
head = head_of_two.with_values(
    {"model.expert_model_parallel_size": 4}, hardware=Hardware(FAKE_NODE, num_nodes=1)
)
