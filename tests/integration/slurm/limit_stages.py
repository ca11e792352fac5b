"""Stages on one node each, for the time-limit tests (``time_limit_test.py``): several of them
run at once on one small local Slurm, and each attempt's bring-up is one node's. The stage
launcher loads them by path (``RECIPEKIT_STAGE=<this file>:rl``).

- ``rl``: the B200 GRPO stage (``recipes/super3/dapo.py``) on one B200 node, generation
  colocated with training (the recipe's own layout needs three nodes); NeMo-RL under Ray.
- ``sft``: Super 3.5 VL SFT (``recipes/super35/sft.py``, the recipe's smoke test, EP 8) on the
  same node: Megatron-Bridge, one process per GPU, no Ray.

Both run stand-ins that load no model: the plan estimates no memory for them.
"""

from __future__ import annotations

from typing import Any

import attrs

from recipekit.hardware import B200_NODE, Hardware
from recipekit.stage import Stage
from recipes.super3.dapo import dapo_b200
from recipes.super35.sft import sft_tiny

ONE_NODE = Hardware(B200_NODE, num_nodes=1)


def _stand_in(stage: Stage, **changes: Any) -> Stage:
    return attrs.evolve(stage, model=attrs.evolve(stage.model, architecture=None), **changes)


rl = _stand_in(
    dapo_b200.with_values(
        {
            # Training and vLLM share the node's 8 GPUs (the guide's H100 way).
            "policy.generation.colocated.enabled": True,
            "policy.generation.colocated.resources.num_nodes": None,
            "policy.megatron_cfg.tensor_model_parallel_size": 8,
            "policy.megatron_cfg.context_parallel_size": 1,
            "policy.megatron_cfg.expert_model_parallel_size": 8,
            "policy.megatron_cfg.expert_tensor_parallel_size": 1,
            "policy.generation.vllm_cfg.tensor_parallel_size": 8,
            "policy.generation.vllm_cfg.gpu_memory_utilization": 0.5,
        },
        name="limit-rl",
        hardware=ONE_NODE,
    )
)

# The stand-in for run_recipe.py needs no Megatron-Bridge checkout (code=()).
sft = _stand_in(attrs.evolve(sft_tiny, name="limit-sft"), hardware=ONE_NODE, code=())
