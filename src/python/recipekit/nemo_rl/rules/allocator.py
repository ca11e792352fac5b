"""The environment-variable sections a NeMo-RL config sets for its workers.

The rule on them that no single upstream line states (expandable segments beside colocated
vLLM, NVIDIA-NeMo/RL#2319, #2471) is ``recipekit.job_rules``': it also reads the stage's
environment, the cluster profile's and the job's own, so it runs at plan, submit and preflight.
"""

from __future__ import annotations

from collections.abc import Iterator

from recipekit.errors import Issue
from recipekit.memory.switches import (
    MEGATRON_CORE,
    section_values,
    switched_on,
)
from recipekit.nemo_rl.checks import CheckContext
from recipekit.nemo_rl.keys import value_of


def env_var_sections(ctx: CheckContext) -> Iterator[tuple[str, dict[str, str]]]:
    """Every environment-variable section the config carries, with its key path."""
    policy = ctx.config.policy
    sections = (
        ("policy.dtensor_cfg.env_vars", policy.dtensor_cfg),
        ("policy.megatron_cfg.env_vars", ctx.megatron),
        ("policy.generation.vllm_cfg.env_vars", ctx.vllm),
    )
    for path, section in sections:
        env = value_of(section, "env_vars")
        if isinstance(env, dict):
            yield path, env


def memory_switches_not_modelled(ctx: CheckContext) -> Iterator[Issue]:
    """A warning for each memory switch the stage turns on that the estimate does not model
    (recipekit.memory.switches): Megatron-Core's, set first-class or through model_overrides.
    Expandable segments are modelled (the estimate reads policy.megatron_cfg.env_vars and the
    inherited environment)."""
    m = ctx.megatron
    if m is None:
        return
    path = "policy.megatron_cfg"
    values = [
        *section_values(path, m, MEGATRON_CORE),
        *section_values(f"{path}.model_overrides", value_of(m, "model_overrides"), MEGATRON_CORE),
    ]
    yield from switched_on(values, MEGATRON_CORE)
