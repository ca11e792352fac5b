"""Megatron-Core 0.19.2's checks on the settings a stage passes, one function per upstream check,
grouped by topic. Each reads :func:`recipekit.megatron_core.options.options_of` of the
framework's check context and quotes the upstream reason with its file and line, which
``cite`` finds from the rule's catalogue id (``generated/rule_sites.json``)."""

from __future__ import annotations

from recipekit.megatron_core import MEGATRON_CORE_VERSION
from recipekit.rule_sites import sites

SITES = sites("megatron_core")


def cite(rule: str) -> str:
    """``(megatron/core/<file>.py:<line> @ megatron-core 0.19.2)`` of a catalogued rule
    (``rule_catalogue/megatron-core.toml``)."""
    _, file, line = SITES[rule]
    return f"({file}:{line} @ megatron-core {MEGATRON_CORE_VERSION})"
