"""Parallelism a model's own code does not support, from upstream threads.

NVIDIA-NeMo/RL#1525: NeMo-RL's DTensor (v1) worker parallelises a Nemotron-H model with a
plan of its own, which asserts that sequence parallelism is off
(nemo_rl/models/dtensor/parallelize.py, ``_parallelize_nm5_h`` @ super-v3). The worker
starts, loads the model and then fails, after the cluster was allocated.
"""

from __future__ import annotations

from collections.abc import Iterator

from recipekit.errors import Issue
from recipekit.nemo_rl.checks import CheckContext

THREAD = "NVIDIA-NeMo/RL#1525"


def _nemotron_h(ctx: CheckContext) -> bool:
    """A hybrid Mamba model: Nemotron-H is the only family NeMo-RL parallelises as one."""
    architecture = ctx.model.architecture
    return architecture is not None and architecture.mamba is not None


def dtensor_sequence_parallel_on_nemotron_h(ctx: CheckContext) -> Iterator[Issue]:
    """recipekit.model-support.dtensor-sequence-parallel-on-nemotron-h (NVIDIA-NeMo/RL#1525)."""
    dtensor = ctx.config.policy.dtensor_cfg
    if not dtensor.enabled or dtensor.sequence_parallel is not True or dtensor.v2 is True:
        return
    if _nemotron_h(ctx):
        yield Issue(
            "policy.dtensor_cfg.sequence_parallel",
            f"{ctx.model.name} is a Nemotron-H model, whose DTensor parallel plan asserts that "
            f"sequence parallelism is off (nemo_rl/models/dtensor/parallelize.py:414; {THREAD})",
            value=True,
            hint="set it false, or train with policy.megatron_cfg",
        )


ERROR_CHECKS = (dtensor_sequence_parallel_on_nemotron_h,)
