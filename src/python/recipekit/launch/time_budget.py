"""How a stage fits its cluster's time limit: the framework's own save deadline, its step budget
and the continuations a run needs (issue 42).

A cluster's ``time_limit`` (``#SBATCH --time``) ends a job wherever the framework is. Both
frameworks can save and stop on their own before then, given a deadline:

- NeMo-RL: ``checkpointing.checkpoint_must_save_by``, ``DD:HH:MM:SS`` counted from when the
  training loop starts (``TimeoutChecker(timeout=...checkpoint_must_save_by..., fit_last_save_time
  =True)`` then ``timeout.start_iterations()`` at the top of ``grpo_train``,
  nemo_rl/algorithms/grpo.py:2699-2703 @ super-v3.5-posttraining, grpo.py:1618 @ super-v3; the
  loop saves when the next step would pass it and stops, "Timeout has been reached, stopping
  training early", grpo.py:3519 and :3800, the async loop :4908 and :5411). SFT, DPO, RM and
  distillation read the same key (sft.py:393, dpo.py:540 @ super-v3.5-posttraining).
- Megatron-Bridge: ``train.exit_duration_in_mins`` ("Exit the program after this many minutes",
  megatron/training/config/training_config.py:76 @ Megatron-Core 0.19.2), saving first when
  ``checkpoint.save`` is set.

Where the plan meets a cluster profile (``render --cluster``, ``submit``, the snapshots) the
deadline is the profile's time limit less its ``startup_allowance_s`` (by default a
quarter of the limit, at most 30 minutes): what a job spends before
the framework's clock starts (image pull, preflight, Ray, loading weights, vLLM) and after it
stops (the last save). The value:

- a recipe or ``--set`` that gives the key a value keeps it, unless the value and the start-up
  allowance do not fit the time limit: then the plan is refused, with the arithmetic;
- a key left null, unset, or inherited from the upstream config a recipe is a port of (``rlvr``
  inherits ``00:03:45:00`` from NeMo-RL's Super Omni recipe) takes the derived deadline.

The deadline is not part of the plan's hash: it decides where a run is cut into attempts, not
what it computes (each attempt resumes from the newest checkpoint). A plan without a profile
keeps the recipe's value and says that the profile sets it.

When the framework stops at its deadline before its step budget (``grpo.max_num_steps``,
``train.train_iters``, ...), the job continues itself as the same Slurm job
(``recipekit.launch.continuation``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from recipekit.errors import Issue, RecipeError

if TYPE_CHECKING:
    from recipekit.launch.profile import ClusterProfile
    from recipekit.plan import Plan

# Slurm's default MaxBatchRequeue (slurm.conf(5)); submit reads the cluster's own.
SLURM_MAX_BATCH_REQUEUE = 5
# ClusterProfile.startup_allowance_s left None: a quarter of the time limit, at most this. A
# 120B model on 36 GB200 nodes spends most of it loading weights and starting vLLM.
DEFAULT_STARTUP_ALLOWANCE_S = 1800

_LIMIT = re.compile(r"(?:(\d+)-)?(\d{1,2}):(\d{2}):(\d{2})")
_DHMS = re.compile(r"(\d+):(\d{1,2}):(\d{1,2}):(\d{1,2})")


@attrs.frozen
class DeadlineKey:
    """Where a framework reads its save deadline, and in which unit."""

    key: str
    unit: str  # "dhms" (DD:HH:MM:SS) or "minutes"
    # The key that must be true for a deadline stop to leave a checkpoint behind (None: any).
    saves_if: str | None
    # Where the framework's checkpoints go (the step count comes from them).
    checkpoint_dir: str


DEADLINE_KEYS: dict[str, DeadlineKey] = {
    "nemo-rl": DeadlineKey(
        "checkpointing.checkpoint_must_save_by",
        "dhms",
        "checkpointing.enabled",
        "checkpointing.checkpoint_dir",
    ),
    "megatron-bridge": DeadlineKey(
        "train.exit_duration_in_mins", "minutes", None, "checkpoint.save"
    ),
}

# The step budget of a run, by the first of these its config has: where the framework stops
# on its own (NeMo-RL's algorithms' max_num_steps; Megatron-Bridge's train_iters).
STEP_BUDGET_KEYS = (
    "grpo.max_num_steps",
    "sft.max_num_steps",
    "dpo.max_num_steps",
    "rm.max_num_steps",
    "distillation.max_num_steps",
    "on_policy_distillation.max_num_steps",
    "train.train_iters",
)


def limit_seconds(time_limit: str) -> int:
    """Slurm's ``[D-]HH:MM:SS`` (``ClusterProfile.time_limit``) in seconds."""
    match = _LIMIT.fullmatch(time_limit)
    if match is None:
        raise ValueError(f"not [D-]HH:MM:SS: {time_limit!r}")
    days, hours, minutes, seconds = (int(g or 0) for g in match.groups())
    return ((days * 24 + hours) * 60 + minutes) * 60 + seconds


def dhms(seconds: int) -> str:
    """NeMo-RL's ``DD:HH:MM:SS``."""
    minutes, s = divmod(seconds, 60)
    hours, m = divmod(minutes, 60)
    days, h = divmod(hours, 24)
    return f"{days:02d}:{h:02d}:{m:02d}:{s:02d}"


def dhms_seconds(text: str) -> int:
    match = _DHMS.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"not DD:HH:MM:SS: {text!r}")
    days, hours, minutes, seconds = (int(g) for g in match.groups())
    return ((days * 24 + hours) * 60 + minutes) * 60 + seconds


def _clock(seconds: float) -> str:
    """Seconds as ``H:MM:SS`` for people."""
    s = int(round(seconds))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


def _lookup(config: Mapping[str, Any], path: str) -> Any:
    node: Any = config
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def step_budget(config: Mapping[str, Any]) -> tuple[str, int] | None:
    """(key, steps) of the first step budget the rendered config sets."""
    for key in STEP_BUDGET_KEYS:
        value = _lookup(config, key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return key, value
    return None


@attrs.frozen(kw_only=True)
class TimeBudget:
    """How one stage runs under one profile's time limit (``plan.json``'s ``time_budget``)."""

    time_limit: str
    time_limit_s: int
    startup_allowance_s: int
    key: str
    # The value the framework reads (its own unit) and how many seconds it gives the framework.
    value: str | int
    deadline_s: int
    # "derived" (from the profile) or "recipe" (kept: the recipe or --set gave it).
    source: str
    step_key: str | None
    steps: int | None
    # Slurm's MaxBatchRequeue as the plan knows it (submit reads the cluster's).
    max_requeue: int = SLURM_MAX_BATCH_REQUEUE
    # Seconds a step takes where known (a measured earlier attempt), and the attempts it means.
    step_time_s: float | None = None

    @property
    def expected_attempts(self) -> int | None:
        if self.step_time_s is None or self.steps is None or self.deadline_s <= 0:
            return None
        per_attempt = max(1, int(self.deadline_s // self.step_time_s))
        return math.ceil(self.steps / per_attempt)

    def issues(self) -> list[Issue]:
        """Continuations past Slurm's MaxBatchRequeue: the last ones would be refused."""
        attempts = self.expected_attempts
        if attempts is None or attempts - 1 <= self.max_requeue:
            return []
        assert self.steps is not None and self.step_time_s is not None
        return [
            Issue(
                self.key,
                f"{self.steps} steps of {self.step_time_s:g} s in attempts of "
                f"{_clock(self.deadline_s)} need {attempts} attempts, {attempts - 1} "
                f"continuations; Slurm requeues a batch job at most {self.max_requeue} times "
                "(MaxBatchRequeue)",
                hint="a longer time_limit, fewer steps, or a chain of stages",
            )
        ]

    def lines(self) -> list[str]:
        """What the plan says of it."""
        source = (
            f"derived: time limit {_clock(self.time_limit_s)} - start-up allowance "
            f"{_clock(self.startup_allowance_s)} (profile startup_allowance_s)"
            if self.source == "derived"
            else "the recipe's, kept: it fits the time limit with the start-up allowance"
        )
        steps = f"{self.step_key}={self.steps}" if self.step_key else "no step budget known"
        attempts = self.expected_attempts
        if attempts is None:
            continued = "continuations: as many as the run needs (no measured step time yet)"
        else:
            continued = (
                f"continuations: {attempts - 1} expected ({attempts} attempts at "
                f"{self.step_time_s:g} s a step)"
            )
        return [
            f"time limit {self.time_limit}; save deadline {self.key}={self.value} ({source})",
            f"step budget {steps}; stopped at the deadline before it, the job continues itself "
            f"(scontrol requeue, same job id); {continued}; Slurm allows {self.max_requeue} "
            "requeues (MaxBatchRequeue)",
        ]

    def as_json(self) -> dict[str, Any]:
        return {
            "time_limit": self.time_limit,
            "time_limit_s": self.time_limit_s,
            "startup_allowance_s": self.startup_allowance_s,
            "key": self.key,
            "value": self.value,
            "deadline_s": self.deadline_s,
            "source": self.source,
            "step_key": self.step_key,
            "steps": self.steps,
            "max_requeue": self.max_requeue,
        }


def _explicit(plan: Plan, key: str) -> bool:
    """The recipe (a ``with_values`` on the way to the stage) or ``--set`` gave ``key``."""
    recipe = {a.key for a in plan.stage.assignments}
    given = {o.partition("=")[0].strip() for o in plan.overrides}
    return key in recipe or key in given


def time_budget(
    plan: Plan,
    profile: ClusterProfile,
    *,
    max_requeue: int = SLURM_MAX_BATCH_REQUEUE,
    step_time_s: float | None = None,
) -> TimeBudget | None:
    """The stage's budget on ``profile``; None for a framework with no save deadline (an
    export, an evaluation) or a run that saves nothing at its deadline. Refuses an explicit
    deadline that does not fit the time limit."""
    found = DEADLINE_KEYS.get(plan.stage.framework.name)
    config = plan.framework_config
    if found is None or _lookup(config, found.key.rsplit(".", 1)[0]) is None:
        return None
    if found.saves_if is not None and _lookup(config, found.saves_if) is not True:
        return None
    limit_s = limit_seconds(profile.time_limit)
    allowance = profile.startup_allowance
    available = limit_s - allowance
    current = _lookup(config, found.key)
    where = f"{plan.stage.name}: {found.key}"
    if current is not None and _explicit(plan, found.key):
        given_s = dhms_seconds(str(current)) if found.unit == "dhms" else int(current) * 60
        if given_s > available:
            raise RecipeError(
                [
                    Issue(
                        found.key,
                        f"{current} ({_clock(given_s)}) + start-up allowance "
                        f"{_clock(allowance)} = {_clock(given_s + allowance)} is past profile "
                        f"{profile.name}'s time limit {profile.time_limit}: Slurm would kill the "
                        "job before the framework saves",
                        value=current,
                        hint=f"at most {_format(found.unit, available)}; or null, to derive it "
                        "from the time limit; or a shorter startup_allowance_s in the profile",
                    )
                ],
                context=f"{where}: does not fit the time limit",
            )
        value, deadline_s, source = current, given_s, "recipe"
    else:
        value, deadline_s, source = _format(found.unit, available), available, "derived"
        if found.unit == "minutes":
            deadline_s = int(value) * 60
    budget = step_budget(config)
    return TimeBudget(
        time_limit=profile.time_limit,
        time_limit_s=limit_s,
        startup_allowance_s=allowance,
        key=found.key,
        value=value,
        deadline_s=deadline_s,
        source=source,
        step_key=budget[0] if budget else None,
        steps=budget[1] if budget else None,
        max_requeue=max_requeue,
        step_time_s=step_time_s,
    )


def _format(unit: str, seconds: int) -> str | int:
    return dhms(seconds) if unit == "dhms" else seconds // 60


def with_deadline(plan: Plan, budget: TimeBudget | None) -> Plan:
    """``plan`` with the deadline the framework reads in its config (and, for a framework that
    takes its config as arguments, in those)."""
    if budget is None or budget.source != "derived":
        return plan
    config = plan.framework_config
    if _lookup(config, budget.key) == budget.value:
        return plan
    return attrs.evolve(plan, framework_config=_set(config, budget.key.split("."), budget.value))


def _set(config: Mapping[str, Any], path: list[str], value: Any) -> dict[str, Any]:
    """A copy of the rendered ``config`` with ``path`` set (a key the render left out is added,
    after the others of its section)."""
    head, *rest = path
    child = value if not rest else _set(config.get(head) or {}, rest, value)
    return {**config, head: child}
