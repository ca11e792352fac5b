"""A stage that stopped at its save deadline continues itself as the same Slurm job (issue 42).

The framework saves and stops at its deadline (``time_budget``), exit status 0. On the head, once
it has, ``finish_attempt`` reads the newest complete checkpoint's step in the run's checkpoint
directory and decides:

- done: the step budget is reached, or the framework stopped before its deadline could have
  come (it ran for less than the deadline since the attempt started: its own stop, an epoch
  limit say): the run is recorded as finished;
- continue: below the budget, with progress since the attempt started: the head writes
  ``continue`` in the run directory and the job script requeues the job (``scontrol requeue
  $SLURM_JOB_ID``, as its lost-node fallback does). The job id stays, so a later stage's
  ``afterok`` still waits for the last attempt; the next attempt resumes from the newest
  checkpoint (the frameworks do, given the same checkpoint directory);
- failed: no progress since the attempt started (``EXIT_NO_PROGRESS``), or Slurm would refuse
  another requeue (``MaxBatchRequeue``); a framework that exits non-zero is a crash and ends the
  job with its status, never a continuation.

Every attempt leaves two lines in the run's ``attempts.jsonl`` (its start, by the first node's
preflight; its end, by the head): what ``status`` shows as "continued Nx" with the step each
attempt reached.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from recipekit.launch.run_dir import RunDir
from recipekit.launch.time_budget import SLURM_MAX_BATCH_REQUEUE, TimeBudget, dhms
from recipekit.lineage.store import RUN_PLACEHOLDER, run_name, saved_steps

Log = Callable[[str], None]

ATTEMPTS_FILE = "attempts.jsonl"
CONTINUE_FILE = "continue"
# Written by the job script's trap when Slurm's time-limit signal came and the framework was
# asked to save and stop ("JOB RESTARTS"): that attempt's stop is a deadline's, however early.
SIGNALLED_FILE = "time-limit-signal"
# The head's status when the stage made no progress in an attempt: it ends FAILED.
EXIT_NO_PROGRESS = 8
# ... and when Slurm would refuse to requeue it again (MaxBatchRequeue).
EXIT_REQUEUE_LIMIT = 9


def _budget(plan: Mapping[str, Any]) -> Mapping[str, Any] | None:
    found = plan.get("time_budget")
    return found if isinstance(found, Mapping) else None


def checkpoint_directory(plan: Mapping[str, Any]) -> Path | None:
    """Where the framework saves, as the job sees it (the run's name in for the placeholder)."""
    budget = _budget(plan)
    outputs = list(plan.get("outputs", {}).values())
    if budget is None or not outputs:
        return None
    run = run_name(str(plan["stage"]), str(plan["hash"]))
    return Path(str(outputs[0]).replace(RUN_PLACEHOLDER, run))


def newest_step(plan: Mapping[str, Any]) -> int:
    """The newest complete checkpoint's step (0: none yet)."""
    directory = checkpoint_directory(plan)
    return max(saved_steps(directory), default=0) if directory is not None else 0


def attempt_key() -> tuple[str, int]:
    """This job and its attempt, as Slurm's environment gives them (restart count: 0, then 1
    after a requeue)."""
    job = os.environ.get("SLURM_JOB_ID", "local")
    restarts = os.environ.get("SLURM_RESTART_COUNT", "0") or "0"
    return job, int(restarts) if restarts.isdigit() else 0


def time_limit_signalled(run: RunDir) -> bool:
    """This attempt got Slurm's time-limit signal and the framework was asked to save and stop
    (the job script's trap wrote so before it signalled the framework's step)."""
    job, restarts = attempt_key()
    try:
        return run.file(SIGNALLED_FILE).read_text().split() == [job, str(restarts)]
    except OSError:
        return False


def _append(run: RunDir, record: Mapping[str, Any]) -> None:
    with run.file(ATTEMPTS_FILE).open("a") as out:
        out.write(json.dumps(dict(record)) + "\n")


def read_attempts(run_path: Path) -> list[dict[str, Any]]:
    """``attempts.jsonl``'s records, oldest first (a torn last line is skipped)."""
    path = run_path / ATTEMPTS_FILE
    if not path.is_file():
        return []
    records = []
    for line in path.read_text(errors="replace").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            records.append(record)
    return records


def start_attempt(run: RunDir, plan: Mapping[str, Any], log: Log) -> None:
    """By the first node's preflight: this attempt's start and the step it resumes from."""
    if _budget(plan) is None:
        return
    job, restarts = attempt_key()
    step = newest_step(plan)
    _append(run, {"job": job, "attempt": restarts + 1, "start": time.time(), "from_step": step})
    budget = _budget(plan) or {}
    log(
        f"attempt {restarts + 1} of job {job}: from step {step} of {budget.get('steps')}, "
        f"save deadline {budget.get('key')}={budget.get('value')}"
    )


def _this_attempt(run: RunDir) -> dict[str, Any]:
    job, restarts = attempt_key()
    for record in reversed(read_attempts(run.path)):
        if record.get("job") == job and record.get("attempt") == restarts + 1 and "start" in record:
            return dict(record)
    return {}


def max_batch_requeue() -> int:
    """Slurm's MaxBatchRequeue, from ``scontrol show config`` (its default where unreadable)."""
    try:
        done = subprocess.run(
            ["scontrol", "show", "config"], capture_output=True, text=True, timeout=60
        )
    except (OSError, subprocess.SubprocessError):
        return SLURM_MAX_BATCH_REQUEUE
    found = re.search(r"^MaxBatchRequeue\s*=\s*(\d+)", done.stdout, re.MULTILINE)
    return int(found.group(1)) if found else SLURM_MAX_BATCH_REQUEUE


def finish_attempt(
    run: RunDir,
    plan: Mapping[str, Any],
    status: int,
    log: Log,
    *,
    requeue_limit: Callable[[], int] = max_batch_requeue,
) -> int | None:
    """On the head, once the framework has exited with ``status``: None when the run is done
    (record it); else the head's status (0 with ``continue`` written: the script requeues)."""
    budget = _budget(plan)
    if budget is None:
        return None
    job, restarts = attempt_key()
    attempt = restarts + 1
    started = _this_attempt(run)
    from_step = int(started.get("from_step", 0))
    step = newest_step(plan)
    ran_s = time.time() - float(started.get("start", time.time()))
    steps = budget.get("steps")
    end = {"job": job, "attempt": attempt, "end": time.time(), "step": step, "status": status}
    # Stopped by the time-limit signal (the framework saved on it): a deadline's stop, early.
    signalled = time_limit_signalled(run)
    stopped_by = "the time-limit signal" if signalled else "its save deadline"
    if signalled:
        end["stopped_by"] = "time-limit signal"
    if status != 0:
        _append(run, {**end, "outcome": "crashed"})
        after = " after the time-limit signal" if signalled else ""
        log(
            f"recipekit: the framework exited with status {status}{after} in attempt {attempt} "
            f"of job {job} (at step {step}): a crash, not a continuation; the stage ends FAILED"
        )
        return status
    own_stop = ran_s < float(budget["deadline_s"]) and not signalled
    if steps is None or step >= int(steps) or own_stop:
        _append(run, {**end, "outcome": "done"})
        return None
    if step <= from_step:
        _append(run, {**end, "outcome": "no-progress"})
        log(
            f"recipekit: attempt {attempt} of job {job} stopped at {stopped_by} at step "
            f"{step}, where it started: no progress (is {budget['key']}={budget['value']} "
            "shorter than a step?); the stage ends FAILED"
        )
        return EXIT_NO_PROGRESS
    limit = requeue_limit()
    if restarts >= limit:
        _append(run, {**end, "outcome": "requeue-limit"})
        log(
            f"recipekit: attempt {attempt} of job {job} stopped at step {step} of {steps}, and "
            f"Slurm requeues a batch job at most {limit} times (MaxBatchRequeue): the stage "
            "ends FAILED; submit it again to go on from its newest checkpoint"
        )
        return EXIT_REQUEUE_LIMIT
    _append(run, {**end, "outcome": "continued"})
    per_step = ran_s / max(1, step - from_step)
    left = int(steps) - step
    log(
        f"recipekit: attempt {attempt} of job {job} stopped at {stopped_by} at step {step} "
        f"of {steps} ({step - from_step} steps in {dhms(int(ran_s))}): continuing as job {job}; "
        f"about {left * per_step / max(1.0, float(budget['deadline_s'])):.1f} more attempt(s)"
    )
    run.write_text(CONTINUE_FILE, f"{job} {restarts}\n")
    return 0


def continuation_summary(run_path: Path, job: str | None = None) -> str | None:
    """ "continued 2x (attempt 1: steps 0-6, 2: 6-12, 3: 12-18 done)" for ``status``; None
    when the run never continued and has no attempts recorded."""
    records = [r for r in read_attempts(run_path) if job is None or r.get("job") == job]
    ends = [r for r in records if "outcome" in r]
    if not ends:
        return None
    starts = {r.get("attempt"): r for r in records if "start" in r}
    continued = sum(1 for r in ends if r["outcome"] == "continued")
    parts = []
    for record in ends:
        begun = starts.get(record.get("attempt"), {}).get("from_step", "?")
        outcome = record["outcome"]
        shown = "" if outcome == "continued" else f" {outcome}"
        if outcome == "crashed":
            shown = f" crashed (exit {record.get('status')})"
        parts.append(f"{record.get('attempt')}: steps {begun}-{record.get('step')}{shown}")
    return f"continued {continued}x (attempt " + ", ".join(parts) + ")"


def script_directives(budget: TimeBudget | None) -> list[str]:
    """The ``#SBATCH`` lines: Slurm signals the batch script before the time limit."""
    if budget is None or not budget.signal_armed:
        return []
    return [f"--signal=B:USR1@{budget.signal_lead_s}"]


def script_functions(budget: TimeBudget | None, run: RunDir) -> list[str]:
    """The script's functions: the continuation after the framework's step, and (where the
    signal is armed) the last line of defence before the time limit."""
    if budget is None:
        return []
    marker = shlex.quote(str(run.file(CONTINUE_FILE)))
    lines = _CONTINUE.format(marker=marker).split("\n")
    if not script_directives(budget):
        return lines
    if budget.save_signal is not None:
        trap = _SAVE_ON_SIGNAL.format(
            lead=budget.signal_lead_s,
            signal=budget.save_signal,
            scancel_signal=budget.save_signal.removeprefix("SIG"),
            signalled=shlex.quote(str(run.file(SIGNALLED_FILE))),
        )
    else:
        trap = _ON_TIME_LIMIT.format(
            lead=budget.signal_lead_s,
            deadline_s=budget.deadline_s,
            key=budget.key,
            value=budget.value,
            allowance=budget.startup_allowance_s,
            attempts=shlex.quote(str(run.file(ATTEMPTS_FILE))),
        )
    return [*lines, "", *trap.split("\n"), *_WAIT_STEP.split("\n")]


def waited(command: str, budget: TimeBudget | None) -> str:
    """A framework step: in the background where a trap must be able to run while it does
    (bash runs a trap only between commands, and ``wait`` is one)."""
    if not script_directives(budget):
        return command + " \\\n    || step_failed $?"
    return command + ' &\nframework_step=$!\nwait_step "$framework_step" || step_failed $?'


# The head wrote `continue` (this job, this attempt): requeue the job, same id.
_CONTINUE = """\
# The stage stopped at its save deadline before its step budget (the head wrote {marker}):
# the job continues itself, same job id, so later stages' afterok still waits for it.
continue_if_unfinished() {{
    [ "$(cat {marker} 2>/dev/null)" = "$SLURM_JOB_ID ${{SLURM_RESTART_COUNT:-0}}" ] || return 0
    echo "recipekit: continuing the stage: requeueing job $SLURM_JOB_ID" \\
        "(attempt $(( ${{SLURM_RESTART_COUNT:-0}} + 2 )) resumes from its newest checkpoint)" >&2
    scontrol requeue "$SLURM_JOB_ID" && exit 0
    echo "recipekit: scontrol requeue refused job $SLURM_JOB_ID: the stage ends unfinished" >&2
    exit 75
}}"""

# Slurm's signal, the time limit near and the framework still running past its deadline (its
# start-up took longer than the allowance): requeue now, to resume from the newest checkpoint,
# rather than end TIMEOUT, which no later stage's afterok accepts.
_ON_TIME_LIMIT = """\
# Slurm's signal {lead} s before the time limit (--signal): the last line of defence.
on_time_limit() {{
    if (( SECONDS < {deadline_s} )); then
        echo "recipekit: time limit signal before the save deadline could pass: ignored" >&2
        return 0
    fi
    echo "recipekit: job $SLURM_JOB_ID is near its time limit and the framework has not" \\
        "stopped at its save deadline ({key}={value}: start-up took longer than" \\
        "startup_allowance_s {allowance} s?): requeueing it to resume from its newest" \\
        "checkpoint" >&2
    printf '{{"job": "%s", "attempt": %d, "outcome": "time-limit", "end": %d}}\\n' \\
        "$SLURM_JOB_ID" $(( ${{SLURM_RESTART_COUNT:-0}} + 1 )) "$(date +%s)" >> {attempts}
    scontrol requeue "$SLURM_JOB_ID"
}}
trap on_time_limit USR1"""

# A framework that saves and stops on a signal (Megatron-Bridge's exit signal handler): Slurm's
# signal reaches the framework's step, whose launcher lets the framework finish its save; the
# step ends 0, the head finds the attempt stopped short of its step budget and the job continues.
_SAVE_ON_SIGNAL = """\
# Slurm's signal {lead} s before the time limit (--signal): the last line of defence. The
# framework's step gets {signal}: the framework saves and stops (its exit signal handler), its
# launcher waits for it, and the job continues from that checkpoint (continue_if_unfinished).
on_time_limit() {{
    if [ -z "${{framework_step:-}}" ] || ! kill -0 "$framework_step" 2>/dev/null; then
        echo "recipekit: time limit signal outside the framework's step: nothing to save" >&2
        return 0
    fi
    echo "recipekit: job $SLURM_JOB_ID is {lead} s from its time limit: asking the" \\
        "framework to save and stop ({signal} to its step)" >&2
    echo "$SLURM_JOB_ID ${{SLURM_RESTART_COUNT:-0}}" > {signalled}
    scancel --signal={scancel_signal} "$SLURM_JOB_ID" \\
        || echo "recipekit: scancel --signal failed: the time limit ends the job" >&2
}}
trap on_time_limit USR1"""

_WAIT_STEP = """\
# A background step's status, across waits a trapped signal interrupts.
wait_step() {
    local status
    while true; do
        wait "$1" && return 0
        status=$?
        kill -0 "$1" 2>/dev/null || return "$status"
    done
}"""
