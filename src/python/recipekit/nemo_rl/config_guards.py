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
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from recipekit import checking
from recipekit.errors import Issue
from recipekit.nemo_rl import SUPER35_BRANCH, SUPER35_TYPES, runs_super35
from recipekit.nemo_rl.checks.key_needs import every_run, rendered_config
from recipekit.upstream.declared import members
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
    rendered = rendered_config(config)
    if rendered is not None:
        yield from MODELS.refusals(rendered, members(upstream)[0].qualified)


RUNNERS = PinnedRunners(
    Path(__file__).parent / "generated" / "runner_programs.json", "NeMo-RL", f"@ {SUPER35_BRANCH}"
)


RunnerCheck = Callable[[Any], Iterator[Issue]]


# The last replay of a runner, by the rendered config it ran on: a plan's refusals and warnings
# read one replay.
_LAST_REACHED: list[tuple[str, dict[str, Any], list[Reached]]] = []


def _reached(runner: str, master: str, rendered: dict[str, Any]) -> list[Reached]:
    """What the replay of ``runner`` reaches on the ``rendered`` config, whose master config
    is the class ``master``."""
    if _LAST_REACHED and _LAST_REACHED[0][0] == runner and _LAST_REACHED[0][1] is rendered:
        return _LAST_REACHED[0][2]
    found = RUNNERS.reached(runner, MODELS.values(master, rendered))
    _LAST_REACHED[:] = [(runner, rendered, found)]
    return found


@functools.cache
def _always_read(runner: str) -> frozenset[str]:
    """The keys every run of ``runner`` reads, whose absence ``key_needs.unread_keys``
    refuses (the runner's replay refuses the others it finds missing)."""
    reads = every_run(SUPER35_TYPES).get(runner, ())
    return frozenset(".".join([*read["at"], *read["needs"]]) for read in reads)


def _runner_checks(runner: str, name: str) -> tuple[RunnerCheck, RunnerCheck]:
    """A pinned Super 3.5 runner's own checks (``recipekit.upstream.runners``): its refusals
    and its warnings, each a check of the entry points that run it, named ``name``'s: a GRPO
    check (``subject`` a check context) or another entry point's (the config)."""

    def issues(subject: Any, kind: str) -> Iterator[Issue]:
        config = subject.config if isinstance(subject, checking.CheckContext) else subject
        upstream = getattr(type(config), "upstream", None)
        if not runs_super35(config) or upstream is None:
            return
        rendered = rendered_config(config)
        if rendered is not None:
            reached = _reached(runner, members(upstream)[0].qualified, rendered)
            yield from RUNNERS.issues(runner, reached, rendered, kind, _always_read(runner))

    def refusals(subject: Any) -> Iterator[Issue]:
        return issues(subject, "guard")

    def warnings(subject: Any) -> Iterator[Issue]:
        return issues(subject, "warn")

    refusals.__name__ = refusals.__qualname__ = f"{name}_refusals"
    warnings.__name__ = warnings.__qualname__ = f"{name}_warnings"
    return refusals, warnings


# The pinned runners' checks, each run by the entry points that run it (algorithms.py).
gym_grpo_runner_refusals, gym_grpo_runner_warnings = _runner_checks(
    "examples/nemo_gym/run_grpo_nemo_gym.py", "gym_grpo_runner"
)
ppo_runner_refusals, ppo_runner_warnings = _runner_checks("examples/run_ppo.py", "ppo_runner")
sft_runner_refusals, sft_runner_warnings = _runner_checks("examples/run_sft.py", "sft_runner")
dpo_runner_refusals, dpo_runner_warnings = _runner_checks("examples/run_dpo.py", "dpo_runner")
# Each pinned runner's (refusals, warnings), by its file.
RUNNER_CHECKS = {
    "examples/nemo_gym/run_grpo_nemo_gym.py": (gym_grpo_runner_refusals, gym_grpo_runner_warnings),
    "examples/run_ppo.py": (ppo_runner_refusals, ppo_runner_warnings),
    "examples/run_sft.py": (sft_runner_refusals, sft_runner_warnings),
    "examples/run_dpo.py": (dpo_runner_refusals, dpo_runner_warnings),
}
