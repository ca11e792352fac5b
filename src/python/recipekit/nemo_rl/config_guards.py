"""NeMo-RL's pydantic config classes at super-v3.5-posttraining, checked on the config a stage
renders as pydantic builds them (``recipekit.upstream.models``): their required fields, and
their own validators, replayed.

Each runner of that branch builds its master config with ``MasterConfig(**config)``, and pydantic
builds every model the config nests with it, running each one's
``@model_validator(mode="after")`` methods (``AsyncPPOConfig``'s, the single controller's
``AsyncRLConfig`` and its blocks', ...). GRPO's setup validates ``policy.generation`` as
``DynamoConfig`` with ``backend: dynamo`` (a boundary). ``generated/config_guards.json``
(``tools/generate_nemo_rl_guards.py``) holds them.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from recipekit import checking
from recipekit.convert import rendered
from recipekit.errors import Issue
from recipekit.nemo_rl import (
    NEMO_RL_VERSION,
    SUPER35_BRANCH,
    SUPER35_TYPES,
    SUPER_V3_TYPES,
    runs_super35,
)
from recipekit.nemo_rl.checks.context import CheckContext
from recipekit.nemo_rl.checks.key_needs import every_run
from recipekit.upstream.declared import Declared, members
from recipekit.upstream.models import PinnedModels
from recipekit.upstream.replay import Reached
from recipekit.upstream.runners import PinnedRunners

MODELS = PinnedModels(
    Path(__file__).parent / "generated" / "config_guards.json",
    SUPER35_TYPES,
    "NeMo-RL",
    f"@ {SUPER35_BRANCH}",
)


def config_validators_hold(subject: Any) -> Iterator[Issue]:
    """The pydantic models a Super 3.5 runner builds from the config (``MasterConfig(**config)``
    and the boundaries NeMo-RL validates on its own), checked as pydantic builds them: a GRPO
    check (``subject`` a check context) and one of the other entry points (``subject`` the
    config)."""
    config = subject.config if isinstance(subject, checking.CheckContext) else subject
    upstream = getattr(type(config), "upstream", None)
    if not runs_super35(config) or upstream is None:
        return
    values = rendered(config)
    if values is not None:
        yield from MODELS.refusals(values, members(upstream)[0].qualified)


RUNNERS = PinnedRunners(
    Path(__file__).parent / "generated" / "runner_programs.json", "NeMo-RL", f"@ {SUPER35_BRANCH}"
)
# super-v3's run_grpo.py, whose master config is a TypedDict: its values are the config as the
# runner loads it (``config: MasterConfig = OmegaConf.to_container(...)``).
RUNNERS_V3 = PinnedRunners(
    Path(__file__).parent / "generated" / "runner_programs_super_v3.json",
    "NeMo-RL",
    f"@ {NEMO_RL_VERSION}",
)
PINNED_RUNNERS = {SUPER35_TYPES: RUNNERS, SUPER_V3_TYPES: RUNNERS_V3}


# The last replay of a runner, by the rendered config it ran on: a plan's refusals and warnings
# read one replay.
_LAST_REACHED: list[tuple[str, dict[str, Any], list[Reached]]] = []


def _reached(runner: str, master: Declared, rendered: dict[str, Any]) -> list[Reached]:
    """What the replay of ``runner`` reaches on the ``rendered`` config, whose master config
    is the class ``master`` (a pydantic model's values as pydantic builds them)."""
    if _LAST_REACHED and _LAST_REACHED[0][0] == runner and _LAST_REACHED[0][1] is rendered:
        return _LAST_REACHED[0][2]
    if master.source == SUPER35_TYPES:
        found = RUNNERS.reached(runner, MODELS.values(master.qualified, rendered))
    else:
        found = PINNED_RUNNERS[master.source].reached(runner, rendered)
    _LAST_REACHED[:] = [(runner, rendered, found)]
    return found


@functools.cache
def _always_read(label: str, runner: str) -> frozenset[str]:
    """The keys every run of ``runner`` at the pin ``label`` reads, whose absence
    ``key_needs.unread_keys`` refuses (the runner's replay refuses the others it finds
    missing)."""
    reads = every_run(label).get(runner, ())
    return frozenset(".".join([*read["at"], *read["needs"]]) for read in reads)


def runner_issues(config: Any, runner: str, kind: str) -> Iterator[Issue]:
    """The refusals (``kind`` "guard") or warnings ("warn") of a pinned runner
    (``examples/run_ppo.py``; none for one the pin's table does not hold) on a typed config:
    ``recipekit.upstream.runners``."""
    upstream = getattr(type(config), "upstream", None)
    master = members(upstream)[0] if upstream is not None else None
    if master is None or master.source not in PINNED_RUNNERS:
        return  # not a config of a pinned runner (an evaluation config has no policy)
    values = rendered(config)
    if values is not None:
        reached = _reached(runner, master, values)
        always = _always_read(master.source, runner)
        yield from PINNED_RUNNERS[master.source].issues(runner, reached, values, kind, always)


def runner_refusals(ctx: CheckContext) -> Iterator[Issue]:
    """GRPO's check of its runner's own refusals (the context names the runner); NeMo-RL's
    other entry points call ``runner_issues`` with theirs (algorithms.NemoRLRun)."""
    return runner_issues(ctx.config, ctx.entry_point, "guard")


def runner_warnings(ctx: CheckContext) -> Iterator[Issue]:
    """GRPO's check of its runner's own warnings (see ``runner_refusals``)."""
    return runner_issues(ctx.config, ctx.entry_point, "warn")
