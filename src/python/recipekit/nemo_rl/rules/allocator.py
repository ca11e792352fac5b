"""The environment-variable sections a NeMo-RL config sets for its workers.

The rule on them that no single upstream line states (expandable segments beside colocated
vLLM, NVIDIA-NeMo/RL#2319, #2471) is ``recipekit.job_rules``': it also reads the stage's
environment, the cluster profile's and the job's own, so it runs at plan, submit and preflight.
"""

from __future__ import annotations

from collections.abc import Iterator

from recipekit.nemo_rl.checks import CheckContext


def env_var_sections(ctx: CheckContext) -> Iterator[tuple[str, dict[str, str]]]:
    """Every environment-variable section the config carries, with its key path."""
    policy = ctx.config.policy
    sections = (
        ("policy.dtensor_cfg.env_vars", policy.dtensor_cfg),
        ("policy.megatron_cfg.env_vars", ctx.megatron),
        ("policy.generation.vllm_cfg.env_vars", ctx.vllm),
    )
    for path, section in sections:
        env = getattr(section, "env_vars", None) if section is not None else None
        if isinstance(env, dict):
            yield path, env
