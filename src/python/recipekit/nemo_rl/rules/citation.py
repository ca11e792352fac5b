"""Where an upstream rule lives, in the words a message quotes: ``file:line @ version``.

A rule both NeMo-RL versions state sits at different lines; the config's type says which
version runs (main's schema is super-v3.5-posttraining's).
"""

from __future__ import annotations

from recipekit.nemo_rl import NEMO_RL_VERSION as SUPER_V3
from recipekit.nemo_rl import SUPER35_BRANCH as SUPER35
from recipekit.nemo_rl import runs_super35
from recipekit.nemo_rl.checks import CheckContext


def on_super35(ctx: CheckContext) -> bool:
    return runs_super35(ctx.config)


def cite_super35(file: str, *lines: int) -> str:
    """``file:line[, :line...] @ super-v3.5-posttraining``, for an entry point that only that
    branch runs (PPO, cross-tokenizer distillation), whose rules have no CheckContext."""
    more = "".join(f", :{n}" for n in lines[1:])
    return f"{file}:{lines[0]}{more} @ {SUPER35}"


def cite(ctx: CheckContext, file: str, *, v3: int = 0, v35: int = 0) -> str:
    """``file:line @ version`` for the version the stage runs (0: the rule is not in it)."""
    version, line = (SUPER35, v35) if on_super35(ctx) else (SUPER_V3, v3)
    return f"{file}:{line} @ {version}"
