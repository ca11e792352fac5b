"""Citations in the words a message quotes, ``file:line @ version``, of the rule the stage's
NeMo-RL version states.

A check names the rule it mirrors by its catalogue id; ``recipekit.nemo_rl.rule_lines`` finds
its file and line in the generated table, so no line is written by hand. A rule both NeMo-RL
versions state has an id at each; the config's type says which version runs (main's schema is
super-v3.5-posttraining's).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from recipekit.checking import cites
from recipekit.errors import Issue
from recipekit.nemo_rl import NEMO_RL_VERSION as SUPER_V3
from recipekit.nemo_rl import SUPER35_BRANCH as SUPER35
from recipekit.nemo_rl import runs_super35
from recipekit.nemo_rl.rule_lines import SITES, VERSIONS, line_of, where

if TYPE_CHECKING:
    from recipekit.nemo_rl.checks import Check, CheckContext

__all__ = [
    "cite",
    "mirrors",
    "mirrors_super35",
    "cite_line",
    "cite_super35",
    "cite_super35_line",
    "line_of",
    "on_super35",
    "where",
]


def on_super35(ctx: CheckContext) -> bool:
    return runs_super35(ctx.config)


def cite_super35(*rules: str) -> str:
    """``file:line[, :line...] @ super-v3.5-posttraining`` of rules of one file, for an entry
    point that only that branch runs (PPO, cross-tokenizer distillation), whose rules have no
    CheckContext."""
    sites = [SITES[rule] for rule in rules]
    if any(VERSIONS[label] != SUPER35 for label, _, _ in sites) or len({s[1] for s in sites}) > 1:
        raise ValueError(f"not rules of one {SUPER35} file: {rules}")
    more = "".join(f", :{line}" for _, _, line in sites[1:])
    return f"{sites[0][1]}:{sites[0][2]}{more} @ {SUPER35}"


def mirrors(*, v3: str = "", v35: str = "") -> Callable[[Check], Check]:
    """A check of the rule ``v3``/``v35`` (catalogue ids, as ``cite`` takes them): each Issue it
    finds ends with the rule's ``(file:line @ version)`` at the stage's version."""
    return cites(lambda ctx: cite(ctx, v3=v3, v35=v35), (v3, v35), SITES)


def mirrors_super35(*rules: str) -> Callable[[Callable[[Any], Iterable[Issue]]], Any]:
    """``mirrors`` for a check of an entry point only super-v3.5-posttraining runs (its argument
    is the config, not a CheckContext): each Issue ends with ``(cite_super35(*rules))``."""
    return cites(lambda _config: cite_super35(*rules), rules, SITES)


def cite(ctx: CheckContext, *, v3: str = "", v35: str = "") -> str:
    """``file:line @ version`` of the rule the stage's version states: ``v35`` on
    super-v3.5-posttraining, else ``v3`` (each a catalogue id)."""
    rule = v35 if on_super35(ctx) else v3
    if not rule:
        raise KeyError(f"no rule given for {SUPER35 if on_super35(ctx) else SUPER_V3}")
    return where(rule)


def cite_line(ctx: CheckContext, file: str, *, v3: int = 0, v35: int = 0) -> str:
    """``file:line @ version`` of an upstream line that is no catalogued rule site (a KeyError
    on a missing key, a value NeMo-RL overwrites) or lies in a file no source pins: written by
    hand, so an upgrade must check it."""
    version, line = (SUPER35, v35) if on_super35(ctx) else (SUPER_V3, v3)
    return f"{file}:{line} @ {version}"


def cite_super35_line(file: str, line: int) -> str:
    """``cite_line`` for an entry point only super-v3.5-posttraining runs."""
    return f"{file}:{line} @ {SUPER35}"
