"""What every NeMo-RL check reads: the GRPO config of either schema, its sections, and the
key paths messages name."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, TypeAlias

import attrs

from recipekit import checking
from recipekit.errors import Issue
from recipekit.megatron_core.options import MegatronOptions, from_nemo_rl
from recipekit.nemo_rl.layout import Layout
from recipekit.nemo_rl.schema_super_v3 import (
    Generation,
    GRPOMasterConfig,
    Megatron,
    VllmConfig,
)

if TYPE_CHECKING:
    # Main's schema is imported by the stages that run main, not by every NeMo-RL plan.
    from recipekit.nemo_rl.schema_main import GenerationMain, GRPOMasterConfigMain

# The GRPO config of either schema: the checks read keys both declare.
GrpoConfig: TypeAlias = "GRPOMasterConfig | GRPOMasterConfigMain"


@attrs.frozen
class CheckContext(checking.CheckContext["GrpoConfig", Layout]):
    @property
    def megatron(self) -> Megatron | None:
        m = self.config.policy.megatron_cfg
        return m if isinstance(m, Megatron) and m.enabled else None

    def megatron_options(self) -> MegatronOptions | None:
        """What NeMo-RL's setup hands Megatron-Core, with the layout's sizes (the Megatron-Core
        rules read it through ``options_of``); None on DTensor."""
        m = self.megatron
        if m is None:
            return None
        steps = getattr(getattr(self.config, "grpo", None), "max_num_steps", None)
        bound = steps if isinstance(steps, int) else None
        return from_nemo_rl(m, self.layout.parallel, self.layout.keys, bound)

    @property
    def generation(self) -> Generation | GenerationMain | None:
        g = self.config.policy.generation
        # (main's GenerationMain derives from Generation)
        return g if isinstance(g, Generation) else None

    @property
    def vllm(self) -> VllmConfig | None:
        g = self.generation
        return g.vllm_cfg if g is not None and isinstance(g.vllm_cfg, VllmConfig) else None


Check = Callable[[CheckContext], Iterator[Issue]]

MEGATRON = "policy.megatron_cfg"
VLLM = "policy.generation.vllm_cfg"
RESOURCES = "policy.generation.colocated.resources"
SEQ = "policy.max_total_sequence_length"
