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

import json
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from recipekit.errors import Issue, RecipeError
from recipekit.importers.data_paths import resolved_at
from recipekit.markers import UNSET

if TYPE_CHECKING:
    from recipekit.launch.profile import ClusterProfile
    from recipekit.plan import Plan

# Slurm's default MaxBatchRequeue (slurm.conf(5)); submit reads the cluster's own.
SLURM_MAX_BATCH_REQUEUE = 5
# How early Slurm may send a job's --signal ("up to 60 seconds earlier than specified", sbatch(1)).
SLURM_SIGNAL_EARLY_S = 60
# ClusterProfile.startup_allowance_s left None: a quarter of the time limit, at most this. A
# 120B model on 36 GB200 nodes spends most of it loading weights and starting vLLM.
DEFAULT_STARTUP_ALLOWANCE_S = 1800

_LIMIT = re.compile(r"(?:(\d+)-)?(\d{1,2}):(\d{2}):(\d{2})")
_DHMS = re.compile(r"(\d+):(\d+):(\d+):(\d+)")


@attrs.frozen
class DeadlineKey:
    """Where a framework reads its save deadline, and in which unit."""

    key: str
    unit: str  # "dhms" (DD:HH:MM:SS) or "minutes"
    # The key that must be true for a deadline stop to leave a checkpoint behind (None: any).
    saves_if: str | None
    # Where the framework's checkpoints go (the step count comes from them).
    checkpoint_dir: str
    # The key that makes the framework save and stop on a signal, and the one naming the signal
    # (None: the framework saves only at its deadline).
    signal_switch: str | None = None
    signal_key: str | None = None


DEADLINE_KEYS: dict[str, DeadlineKey] = {
    # NeMo-RL saves only at its deadline: its TimeoutChecker reads the clock, nothing else
    # (nemo_rl/utils/timer.py, NVIDIA-NeMo/RL@05c502c); no signal handler in its algorithms.
    "nemo-rl": DeadlineKey(
        "checkpointing.checkpoint_must_save_by",
        "dhms",
        "checkpointing.enabled",
        "checkpointing.checkpoint_dir",
    ),
    # Megatron-Bridge: "Dynamically save the checkpoint and shutdown the training if SIGTERM is
    # received" (train.exit_signal_handler, the signal train.exit_signal, default SIGTERM;
    # megatron/training/config/training_config.py:79-82 @ Megatron-Core 0.19.2).
    "megatron-bridge": DeadlineKey(
        "train.exit_duration_in_mins",
        "minutes",
        None,
        "checkpoint.save",
        signal_switch="train.exit_signal_handler",
        signal_key="train.exit_signal",
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
    """The value at ``path``, None where a key on the way is missing."""
    value = resolved_at(config, path)
    return None if value is UNSET else value


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
    # Seconds a step takes where known, and where that came from ("given": --step-time;
    # "measured: ...": an earlier attempt of the stage), and the attempts it means.
    step_time_s: float | None = None
    step_time_source: str | None = None
    # Seconds before the time limit that Slurm signals the job (the profile's
    # time_limit_signal_s), and the signal that makes the framework save and stop (None: it
    # saves only at its deadline, and the signal requeues the job instead).
    signal_lead_s: int = 120
    save_signal: str | None = None

    @property
    def expected_attempts(self) -> int | None:
        if self.step_time_s is None or self.steps is None or self.deadline_s <= 0:
            return None
        per_attempt = max(1, int(self.deadline_s // self.step_time_s))
        return math.ceil(self.steps / per_attempt)

    @property
    def signal_armed(self) -> bool:
        """Slurm signals the job before its limit: only where the signal cannot come before the
        job has started (Slurm checks its timers every 30 s and may signal up to a minute
        early, sbatch(1) --signal)."""
        return self.time_limit_s >= self.signal_lead_s + SLURM_SIGNAL_EARLY_S

    @property
    def longest_step_that_fits(self) -> float | None:
        """The step time above which the run needs more continuations than Slurm allows (the
        last step of each attempt is not started when it would pass the deadline)."""
        if self.steps is None or self.deadline_s <= 0:
            return None
        steps_per_attempt = math.ceil(self.steps / (self.max_requeue + 1))
        return self.deadline_s / steps_per_attempt

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
        return [
            f"time limit {self.time_limit}; save deadline {self.key}={self.value} ({source})",
            f"step budget {steps}; stopped at the deadline before it, the job continues itself "
            f"(scontrol requeue, same job id); Slurm allows {self.max_requeue} requeues "
            "(MaxBatchRequeue)",
            self.continuations_line(),
            self.signal_line(),
        ]

    def signal_line(self) -> str:
        """What the job does at Slurm's signal before the time limit (the last line of defence,
        for a start-up that outran the allowance)."""
        if not self.signal_armed:
            return (
                f"no time-limit signal: the limit is under {self.signal_lead_s} s "
                f"(profile time_limit_signal_s) + {SLURM_SIGNAL_EARLY_S} s, the most Slurm may "
                "signal early"
            )
        ahead = f"Slurm signals the job {self.signal_lead_s} s before its time limit"
        if self.save_signal is not None:
            return (
                f"{ahead}: the framework's step gets {self.save_signal}, it saves and stops "
                "(its exit signal handler, on), and the job continues from that checkpoint"
            )
        return (
            f"{ahead}: past the save deadline, the job requeues itself to resume from its newest "
            "checkpoint (this framework saves only at its deadline: the steps since its last "
            "save are run again)"
        )

    def continuations_line(self) -> str:
        """How many continuations to expect, or why the plan cannot say."""
        attempts, fits = self.expected_attempts, self.longest_step_that_fits
        if attempts is not None:
            return (
                f"continuations: {attempts - 1} expected ({attempts} attempts of "
                f"{_clock(self.deadline_s)} at {self.step_time_s:g} s a step, "
                f"{self.step_time_source})"
            )
        if self.steps is None:
            return "continuations: cannot say: no step budget in the config"
        return (
            "continuations: cannot say: no step time known (the plan has no model of a step's "
            "time; give --step-time SECONDS, or run the stage: its first continued attempt "
            f"measures it); within Slurm's {self.max_requeue} requeues the run fits if a step "
            f"takes at most {fits:.3g} s ({self.max_requeue + 1} attempts of "
            f"{_clock(self.deadline_s)} for {self.steps} steps)"
        )

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
            "signal_lead_s": self.signal_lead_s,
            "save_signal": self.save_signal,
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
    step_time_source: str = "given",
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
        step_time_source=step_time_source if step_time_s is not None else None,
        signal_lead_s=profile.time_limit_signal_s,
        save_signal=_save_signal(found, config, plan),
    )


def _save_signal(found: DeadlineKey, config: Mapping[str, Any], plan: Plan) -> str | None:
    """The signal that makes the framework save and stop: its own switch on (``with_deadline``
    turns it on unless the recipe or --set turned it off), and the signal it names."""
    if found.signal_switch is None or found.signal_key is None:
        return None
    switch = _lookup(config, found.signal_switch)
    if switch is False and _explicit(plan, found.signal_switch):
        return None
    named = _lookup(config, found.signal_key)
    if named is None:
        return "SIGTERM"  # Megatron-Core's default exit_signal
    text = str(named).rsplit(".", 1)[-1].upper()  # "SIGUSR1", "signal.SIGUSR1", "Signals.SIGTERM"
    return text if text.startswith("SIG") else f"SIG{text}"


def measured_step_time(plan: Plan, profile: ClusterProfile) -> tuple[float, str] | None:
    """Seconds a step took in an earlier attempt of this stage on this profile, and which: an
    attempt that stopped at its deadline trained for its deadline and made its steps (the next
    one would not fit), so deadline / steps bounds a step from above. This plan's own run first,
    then the stage's other runs, newest first. None where no attempt was continued."""
    from recipekit.launch.continuation import read_attempts

    runs = Path(profile.runs_dir)
    own = f"{plan.stage.name}-{plan.hash[:12]}"
    try:
        candidates = sorted(
            runs.glob(f"{plan.stage.name}-*/attempts.jsonl"),
            key=lambda p: (p.parent.name != own, -p.stat().st_mtime),
        )
    except OSError:
        return None
    for path in candidates:
        try:
            summary = json.loads((path.parent / "plan.json").read_text())
        except (OSError, ValueError):
            continue
        deadline_s = (summary.get("time_budget") or {}).get("deadline_s")
        if not isinstance(deadline_s, int) or deadline_s <= 0:
            continue
        starts = {r.get("attempt"): r for r in read_attempts(path.parent) if "start" in r}
        for record in reversed(read_attempts(path.parent)):
            begun = starts.get(record.get("attempt"), {}).get("from_step")
            if record.get("outcome") != "continued" or not isinstance(begun, int):
                continue
            made = int(record.get("step", 0)) - begun
            if made > 0:
                which = "this plan's run" if path.parent.name == own else f"run {path.parent.name}"
                return deadline_s / made, (
                    f"measured: {made} steps in a {_clock(deadline_s)} attempt of {which}"
                )
    return None


def _format(unit: str, seconds: int) -> str | int:
    return dhms(seconds) if unit == "dhms" else seconds // 60


def with_deadline(plan: Plan, budget: TimeBudget | None) -> Plan:
    """``plan`` with the deadline the framework reads in its config (and, for a framework that
    takes its config as arguments, in those); where the framework can save on a signal and
    the recipe left its switch alone, the switch on (the job script's last line of defence)."""
    if budget is None:
        return plan
    config = plan.framework_config
    if budget.source == "derived" and _lookup(config, budget.key) != budget.value:
        config = _set(config, budget.key.split("."), budget.value)
    found = DEADLINE_KEYS[plan.stage.framework.name]
    switch = found.signal_switch
    on = budget.save_signal is not None and switch is not None
    if on and switch is not None and _lookup(config, switch) is not True:
        config = _set(config, switch.split("."), True)
    if config is plan.framework_config:
        return plan
    return attrs.evolve(plan, framework_config=config)


def _set(config: Mapping[str, Any], path: list[str], value: Any) -> dict[str, Any]:
    """A copy of the rendered ``config`` with ``path`` set (a key the render left out is added,
    after the others of its section)."""
    head, *rest = path
    child = value if not rest else _set(config.get(head) or {}, rest, value)
    return {**config, head: child}


def run_outline(
    plan: Plan, profile: ClusterProfile, *, step_time_s: float | None = None
) -> list[str]:
    """What ``plan`` prints of how the stage runs on ``profile``: Ray's bring-up wait (a Ray
    stage), the save deadline, the continuations to expect and Slurm's limit on them. The step
    time is the one given, else one measured in an earlier attempt of the stage on this profile."""
    from recipekit.launch.bringup import bringup_line

    lines = []
    if plan.stage.framework.launch == "ray":
        nodes = plan.stage.hardware.num_nodes
        lines.append(
            bringup_line(
                nodes,
                profile.ray_start_timeout(nodes),
                given=profile.ray_start_timeout_s is not None,
                allowance_s=profile.startup_allowance,
            )
        )
    measured = None if step_time_s is not None else measured_step_time(plan, profile)
    budget = time_budget(
        plan,
        profile,
        step_time_s=measured[0] if measured else step_time_s,
        step_time_source=measured[1] if measured else "given (--step-time)",
    )
    if budget is not None:
        lines += [*budget.lines(), *(i.render() for i in budget.issues())]
    return lines
