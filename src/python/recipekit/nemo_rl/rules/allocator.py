"""PyTorch's expandable segments beside colocated vLLM (NVIDIA-NeMo/RL#2319, #2471).

vLLM's sleep mode frees its weights and KV cache through its own CUDA memory pool between
rollouts; with ``expandable_segments:True`` in PyTorch's allocator the two fight over mapped
segments and the colocated run fails or leaks memory at the first refit. No single upstream
line states it; the threads do.
"""

from __future__ import annotations

from collections.abc import Iterator

from recipekit.errors import Issue
from recipekit.nemo_rl.checks import CheckContext
from recipekit.nemo_rl.schema_super_v3 import Colocation

ALLOC_CONF = "PYTORCH_CUDA_ALLOC_CONF"
THREADS = "NVIDIA-NeMo/RL#2319, #2471"


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


def _expandable(conf: str) -> bool:
    options = (part.strip().replace(" ", "") for part in conf.split(","))
    return any(option.lower() == "expandable_segments:true" for option in options)


def no_expandable_segments_with_colocated_vllm(ctx: CheckContext) -> Iterator[Issue]:
    """recipekit.allocator.no-expandable-segments-with-colocated-vllm (NVIDIA-NeMo/RL#2319,
    #2471): refused wherever the config sets it, since colocated workers share the GPU."""
    gen = ctx.generation
    colocated = gen is not None and isinstance(gen.colocated, Colocation) and gen.colocated.enabled
    if gen is None or gen.backend != "vllm" or not colocated:
        return
    for path, env in env_var_sections(ctx):
        conf = env.get(ALLOC_CONF)
        if isinstance(conf, str) and _expandable(conf):
            yield Issue(
                f"{path}.{ALLOC_CONF}",
                "expandable segments break colocated vLLM's sleep and wake between rollouts "
                f"({THREADS})",
                value=conf,
                hint="remove expandable_segments:True, or run generation non-colocated",
            )


ERROR_CHECKS = (no_expandable_segments_with_colocated_vllm,)
WARNING_CHECKS: tuple[()] = ()
