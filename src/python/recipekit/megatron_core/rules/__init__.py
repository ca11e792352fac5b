"""Megatron-Core 0.19.2's checks on the settings a stage passes, one function per upstream check,
grouped by topic. Each reads :func:`recipekit.megatron_core.options.options_of` of the
framework's check context and quotes the upstream reason with its file and line."""

from __future__ import annotations

from recipekit.megatron_core import MEGATRON_CORE_VERSION

TRANSFORMER_CONFIG = "megatron/core/transformer/transformer_config.py"
MODEL_PARALLEL_CONFIG = "megatron/core/model_parallel_config.py"
OPTIMIZER_CONFIG = "megatron/core/optimizer/optimizer_config.py"
OPTIMIZER_PARAM_SCHEDULER = "megatron/core/optimizer_param_scheduler.py"


def cite(file: str, line: int) -> str:
    """``(megatron/core/...py:1591 @ megatron-core 0.19.2)``."""
    return f"({file}:{line} @ megatron-core {MEGATRON_CORE_VERSION})"
