"""The save deadline a profile's time limit gives a stage, and the job script lines that carry
it (issue 42)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import attrs
import pytest

from recipekit.errors import RecipeError
from recipekit.launch import continuation
from recipekit.launch.profile import NoContainer, Tracking
from recipekit.launch.run_dir import RunDir
from recipekit.launch.run_files import run_files
from recipekit.launch.time_budget import dhms, dhms_seconds, limit_seconds, time_budget
from recipekit.plan import make_plan
from recipes.clusters import PROFILES
from recipes.super3.dapo import dapo_b200, dapo_h100
from recipes.super35.pretrain import pretrain
from recipes.super35.rl import rlvr


def _profile(name: str, tmp_path: Path, **changes: Any) -> Any:
    (tmp_path / "runs").mkdir(exist_ok=True)
    local = {"container": NoContainer(), "runs_dir": str(tmp_path / "runs"), "artifact_store": None}
    return attrs.evolve(PROFILES[name], **{"tracking": Tracking(mode="off"), **local, **changes})


def test_time_formats() -> None:
    assert limit_seconds("04:00:00") == 4 * 3600
    assert limit_seconds("1-02:03:04") == 26 * 3600 + 3 * 60 + 4
    assert dhms(27000) == "00:07:30:00" and dhms_seconds("01:00:00:05") == 86405


def test_rlvr_inherits_upstreams_deadline_and_the_profile_replaces_it(tmp_path: Path) -> None:
    plan = make_plan(rlvr)
    # The plan (no profile) keeps what it hashes: SO's 3 h 45 min.
    assert plan.framework_config["checkpointing"]["checkpoint_must_save_by"] == "00:03:45:00"
    profile = _profile("gb200-nvl72", tmp_path, time_limit="08:00:00")
    budget = time_budget(plan, profile)
    assert budget is not None and budget.source == "derived"
    # 8 h less the default allowance (a quarter of the limit, at most 30 min).
    assert budget.value == "00:07:30:00" and budget.deadline_s == 27000
    assert (budget.step_key, budget.steps) == ("grpo.max_num_steps", 1000)
    files = run_files(plan, profile)
    assert "checkpoint_must_save_by: 00:07:30:00" in files.config
    summary = json.loads(files.plan)
    assert summary["config"]["checkpointing"]["checkpoint_must_save_by"] == "00:07:30:00"
    assert summary["time_budget"]["value"] == "00:07:30:00"
    assert summary["hash"] == plan.hash  # the deadline is not hashed
    short = _profile("gb200-nvl72", tmp_path, time_limit="04:00:00", startup_allowance_s=1200)
    assert time_budget(plan, short).value == "00:03:40:00"  # type: ignore[union-attr]
    assert "time limit 04:00:00" in time_budget(plan, short).lines()[0]  # type: ignore[union-attr]


def test_a_recipes_own_deadline_is_kept_if_it_fits_and_refused_with_the_arithmetic(
    tmp_path: Path,
) -> None:
    plan = make_plan(dapo_h100)  # the recipe sets 00:01:55:00 (a 2-hour cluster)
    kept = time_budget(plan, _profile("h100", tmp_path, time_limit="08:00:00"))
    assert kept is not None and (kept.source, kept.value) == ("recipe", "00:01:55:00")
    with pytest.raises(RecipeError) as refused:
        time_budget(plan, _profile("h100", tmp_path, time_limit="02:00:00"))
    text = refused.value.render()
    assert "00:01:55:00 (1:55:00) + start-up allowance 0:30:00 = 2:25:00" in text
    assert "at most 00:01:30:00" in text
    # null on the command line: the profile's limit decides.
    nulled = make_plan(dapo_h100, ["checkpointing.checkpoint_must_save_by=null"])
    derived = time_budget(nulled, _profile("h100", tmp_path, time_limit="02:00:00"))
    assert derived is not None and derived.value == "00:01:30:00"
    # dapo-b200 inherits grpo_math_1B's null: derived.
    inherited = time_budget(make_plan(dapo_b200), _profile("b200", tmp_path))
    assert inherited is not None and inherited.source == "derived"


def test_megatron_bridge_gets_exit_duration_in_minutes(tmp_path: Path) -> None:
    plan = make_plan(pretrain)
    profile = _profile("gb200-nvl72", tmp_path, time_limit="04:00:00")
    budget = time_budget(plan, profile)
    assert budget is not None and (budget.key, budget.value) == ("train.exit_duration_in_mins", 210)
    assert budget.step_key == "train.train_iters"
    files = run_files(plan, profile)
    arguments = json.loads(files.plan)["framework"]["arguments"]
    assert "train.exit_duration_in_mins=210" in arguments
    explicit = make_plan(pretrain, ["train.exit_duration_in_mins=230"])
    with pytest.raises(RecipeError, match="is past profile gb200-nvl72's time limit 04:00:00"):
        time_budget(explicit, profile)


def test_expected_continuations_past_max_batch_requeue_are_an_issue(tmp_path: Path) -> None:
    plan = make_plan(rlvr)
    profile = _profile("gb200-nvl72", tmp_path, time_limit="04:00:00")
    fits = time_budget(plan, profile, step_time_s=60.0)
    assert fits is not None and fits.expected_attempts == 5 and fits.issues() == []
    slow = time_budget(plan, profile, step_time_s=120.0)
    assert slow is not None and slow.expected_attempts == 10
    [issue] = slow.issues()
    assert "9 continuations" in issue.message and "MaxBatchRequeue" in issue.message


def test_profile_refuses_an_allowance_that_leaves_no_time(tmp_path: Path) -> None:
    with pytest.raises(RecipeError, match="leaves no training time"):
        _profile("b200", tmp_path, time_limit="00:10:00", startup_allowance_s=600)


def _script(tmp_path: Path, time_limit: str) -> str:
    from recipekit.launch.job_script import render_job_script

    profile = _profile("b200", tmp_path, time_limit=time_limit)
    plan = make_plan(dapo_b200)
    return render_job_script(plan, profile, RunDir(tmp_path / "run"))


def test_job_script_arms_the_signal_and_continues_itself(tmp_path: Path) -> None:
    script = _script(tmp_path, "08:00:00")
    assert "#SBATCH --signal=B:USR1@120" in script.splitlines()
    assert "trap on_time_limit USR1" in script
    assert "job-step \\\n    " in script
    assert '&\nframework_step=$!\nwait_step "$framework_step" || step_failed $?' in script
    assert script.rstrip().endswith("continue_if_unfinished")
    assert f"cat {tmp_path / 'run' / 'continue'}" in script
    subprocess.run(["bash", "-n"], input=script, text=True, check=True)
    # Under 10 minutes Slurm's signal may come a minute early: none, the step in the foreground.
    short = _script(tmp_path, "00:02:00")
    assert "--signal" not in short and "trap" not in short
    assert "|| step_failed $?\n\n# Stopped at its save deadline" in short
    subprocess.run(["bash", "-n"], input=short, text=True, check=True)


def _attempt(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    *,
    restart: int,
    saved: list[int],
    status: int = 0,
    ran_s: float = 100.0,
    signalled: bool = False,
) -> tuple[int | None, list[str]]:
    """One attempt of a run whose deadline is 10 s and step budget 12 (``signalled``: the job
    script's trap passed the time-limit signal on to the framework)."""
    ckpt = tmp_path / "ckpt"
    plan = {
        "stage": "s",
        "hash": "0" * 64,
        "outputs": {"checkpoints": str(ckpt)},
        "time_budget": {"steps": 12, "deadline_s": 10, "key": "k", "value": "v"},
    }
    run = RunDir(tmp_path)
    monkeypatch.setenv("SLURM_JOB_ID", "7")
    monkeypatch.setenv("SLURM_RESTART_COUNT", str(restart))
    logged: list[str] = []
    continuation.start_attempt(run, plan, logged.append)
    for step in saved:
        (ckpt / f"step_{step}").mkdir(parents=True, exist_ok=True)
    if signalled:
        (tmp_path / continuation.SIGNALLED_FILE).write_text(f"7 {restart}\n")
    records = continuation.read_attempts(tmp_path)
    records[-1]["start"] -= ran_s
    (tmp_path / continuation.ATTEMPTS_FILE).write_text(
        "".join(json.dumps(r) + "\n" for r in records)
    )
    verdict = continuation.finish_attempt(run, plan, status, logged.append, requeue_limit=lambda: 5)
    return verdict, logged


def test_continue_then_done(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    verdict, logged = _attempt(tmp_path, monkeypatch, restart=0, saved=[6])
    assert verdict == 0 and (tmp_path / "continue").read_text() == "7 0\n"
    assert "stopped at its save deadline at step 6 of 12" in logged[-1]
    verdict, _ = _attempt(tmp_path, monkeypatch, restart=1, saved=[12])
    assert verdict is None  # done: recorded as finished
    summary = continuation.continuation_summary(tmp_path)
    assert summary == "continued 1x (attempt 1: steps 0-6, 2: steps 6-12 done)"


def test_a_crash_or_no_progress_ends_the_stage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _attempt(tmp_path, monkeypatch, restart=0, saved=[4])[0] == 0
    verdict, logged = _attempt(tmp_path, monkeypatch, restart=1, saved=[], status=1)
    assert verdict == 1 and "a crash, not a continuation" in logged[-1]
    verdict, logged = _attempt(tmp_path, monkeypatch, restart=2, saved=[])
    assert verdict == continuation.EXIT_NO_PROGRESS and "no progress" in logged[-1]
    summary = continuation.continuation_summary(tmp_path)
    assert summary is not None and "2: steps 4-4 crashed (exit 1)" in summary


def test_a_stop_before_the_deadline_is_the_frameworks_own_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Ran 5 s of a 10 s deadline and stopped at step 4 of 12 (an epoch limit, say): done.
    assert _attempt(tmp_path, monkeypatch, restart=0, saved=[4], ran_s=5.0)[0] is None


def test_a_stop_at_the_time_limit_signal_continues_though_the_deadline_had_not_come(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The same early stop, after the trap passed Slurm's signal on: the job continues.
    verdict, logged = _attempt(
        tmp_path, monkeypatch, restart=0, saved=[4], ran_s=5.0, signalled=True
    )
    assert verdict == 0 and "stopped at the time-limit signal at step 4 of 12" in logged[-1]
    [end] = [r for r in continuation.read_attempts(tmp_path) if "outcome" in r]
    assert end["outcome"] == "continued" and end["stopped_by"] == "time-limit signal"


def test_without_a_step_time_the_plan_says_it_cannot_and_what_step_would_fit(
    tmp_path: Path,
) -> None:
    from recipekit.launch.time_budget import run_outline

    plan = make_plan(rlvr)
    profile = _profile("gb200-nvl72", tmp_path, time_limit="04:00:00")
    outline = run_outline(plan, profile)
    [line] = [x for x in outline if x.startswith("continuations:")]
    # 1000 steps in at most 6 attempts of 3:30:00: 167 steps each, so 75.4 s a step.
    assert line.startswith("continuations: cannot say: no step time known")
    assert "fits if a step takes at most 75.4 s (6 attempts of 3:30:00 for 1000 steps)" in line
    given = run_outline(plan, profile, step_time_s=60.0)
    assert "continuations: 4 expected (5 attempts of 3:30:00 at 60 s a step, given" in "\n".join(
        given
    )


def test_an_earlier_continued_attempt_measures_the_step_time(tmp_path: Path) -> None:
    from recipekit.launch.run_dir import RunDir
    from recipekit.launch.time_budget import measured_step_time, run_outline

    plan = make_plan(rlvr)
    profile = _profile("gb200-nvl72", tmp_path, time_limit="04:00:00")
    assert measured_step_time(plan, profile) is None
    run = RunDir.for_plan(profile.runs_dir, plan.stage.name, plan.hash)
    run.path.mkdir(parents=True)
    files = run_files(plan, profile)
    run.write_text("plan.json", files.plan)
    attempts = [
        {"job": "5", "attempt": 1, "start": 1.0, "from_step": 0},
        {"job": "5", "attempt": 1, "end": 2.0, "step": 210, "outcome": "continued"},
    ]
    run.write_text(continuation.ATTEMPTS_FILE, "".join(json.dumps(r) + "\n" for r in attempts))
    measured = measured_step_time(plan, profile)
    assert measured is not None and measured[0] == 12600 / 210  # 3:30:00 over 210 steps
    assert "210 steps in a 3:30:00 attempt of this plan's run" in measured[1]
    assert any("continuations: 4 expected (5 attempts" in x for x in run_outline(plan, profile))


def test_submit_refuses_a_run_past_max_batch_requeue(tmp_path: Path) -> None:
    from recipekit.launch.submit import check_requeues

    plan = make_plan(rlvr)
    profile = _profile("gb200-nvl72", tmp_path, time_limit="04:00:00")
    check_requeues(plan, profile, None, max_requeue=lambda: 5)  # unknown: nothing to refuse
    check_requeues(plan, profile, 60.0, max_requeue=lambda: 5)
    with pytest.raises(RecipeError, match="need 10 attempts, 9 continuations; Slurm requeues"):
        check_requeues(plan, profile, 120.0, max_requeue=lambda: 5)
    check_requeues(plan, profile, 120.0, max_requeue=lambda: 9)  # this cluster allows 9
