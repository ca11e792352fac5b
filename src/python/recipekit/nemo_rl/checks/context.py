"""What every NeMo-RL check reads: the GRPO config of either schema, its sections, and the
key paths messages name."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, TypeAlias

import attrs

from recipekit import checking
from recipekit.errors import Issue
from recipekit.megatron_core.options import MegatronOptions, from_nemo_rl
from recipekit.nemo_rl.keys import value_of
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
    from recipekit.vllm.engine import EngineStart

# The GRPO config of either schema: the checks read keys both declare.
GrpoConfig: TypeAlias = "GRPOMasterConfig | GRPOMasterConfigMain"


@attrs.frozen
class CheckContext(checking.CheckContext["GrpoConfig", Layout]):
    # The runner the stage starts (examples/run_grpo.py, ...): what a run reaches depends on it.
    entry_point: str = ""

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
        bound = train_iters_bound(self.config)
        return from_nemo_rl(m, self.layout.parallel, self.layout.keys, bound)

    def vllm_engine(self) -> EngineStart | None:
        """What NeMo-RL's vLLM worker starts the engine with (vLLM's rules read it through
        ``engine_of``); None where the policy does not generate with vLLM."""
        from recipekit.nemo_rl.rules.vllm_engine import engine_start

        return engine_start(self)

    @property
    def uses_nemo_gym(self) -> bool:
        """Whether the stage's rollouts run in NeMo Gym (``env.should_use_nemo_gym``, a key of
        main's schema: super-v3 has no Gym runner)."""
        return value_of(self.config.env, "should_use_nemo_gym") is True

    @property
    def trains_a_draft(self) -> bool:
        """Whether a draft model trains beside the policy (``policy.draft.enabled``, a key of
        main's schema only)."""
        return value_of(value_of(self.config.policy, "draft"), "enabled") is True

    @property
    def generation(self) -> Generation | GenerationMain | None:
        g = self.config.policy.generation
        # (main's GenerationMain derives from Generation)
        return g if isinstance(g, Generation) else None

    @property
    def vllm(self) -> VllmConfig | None:
        g = self.generation
        return g.vllm_cfg if g is not None and isinstance(g.vllm_cfg, VllmConfig) else None


# The entry points' own step budgets, each a section of the config, and how many scheduler
# ticks a step makes: each sets megatron_cfg.train_iters to min(max_num_steps, the epochs'
# batches) times that (in the setup of grpo.py, sft.py and distillation.py as is; DPO and RM
# double it, in dpo.py's and rm.py's; PPO ticks ppo_epochs times a step, in ppo.py's; all @
# super-v3.5-posttraining; super-v3's GRPO likewise).
_STEP_BUDGETS = (("grpo", 1), ("sft", 1), ("distillation", 1), ("dpo", 2), ("rm", 2), ("ppo", 0))


def train_iters_bound(config: object) -> tuple[str, int] | None:
    """The most scheduler iterations the entry point gives Megatron-Core (``train_iters``), and
    the keys that set it; None where its step budget is left to NeMo-RL's default."""
    for name, ticks in _STEP_BUDGETS:
        loop = value_of(config, name)
        if loop is None:
            continue
        steps = value_of(loop, "max_num_steps")
        if ticks == 0:
            epochs = value_of(loop, "ppo_epochs")
            if isinstance(steps, int) and isinstance(epochs, int):
                return f"{name}.max_num_steps x {name}.ppo_epochs", steps * epochs
        elif isinstance(steps, int):
            times = "" if ticks == 1 else f"{ticks} x "
            return f"{times}{name}.max_num_steps", steps * ticks
        return None
    return None


Check = Callable[[CheckContext], Iterator[Issue]]

MEGATRON = "policy.megatron_cfg"
VLLM = "policy.generation.vllm_cfg"
RESOURCES = "policy.generation.colocated.resources"
SEQ = "policy.max_total_sequence_length"
