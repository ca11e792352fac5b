"""vLLM 0.25.1's own checks on the arguments a framework starts its engine with, one function
per upstream check, grouped by the config class that makes it. Each reads
:func:`recipekit.vllm.engine.engine_of` of the framework's check context and names the key that
sets the argument; ``mirrors`` ends its messages with the rule's line, found from its catalogue
id (``rule_catalogue/vllm.toml``, ``generated/rule_sites.json``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from recipekit.checking import cites
from recipekit.errors import Issue
from recipekit.rule_sites import sites

SITES = sites("vllm")
AT = "@ vLLM 0.25.1"

Check = Callable[[Any], Iterator[Issue]]


def cite(rule: str) -> str:
    """``vllm/config/...py:line @ vLLM 0.25.1`` of a catalogued rule."""
    _, file, line = SITES[rule]
    return f"{file}:{line} {AT}"


def mirrors(rule: str) -> Callable[[Check], Check]:
    """A check of the catalogued vLLM rule ``rule``: each Issue it finds ends with its line."""
    return cites(lambda _ctx: cite(rule), (rule,), SITES)
