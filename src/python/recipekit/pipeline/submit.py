"""Submit a chain of stages as Slurm jobs that wait for each other, and report where they stand.

Each stage is an ordinary run (its own run directory, job script and launcher) submitted with
``--dependency=afterok:<the jobs of the stages it reads from>``. Nothing is resolved at submit:
a stage reads ``/artifacts/<name>/<selector>``, which is whatever version the store holds when
its job starts, and its preflight checks that version exists. Everything that can refuse the
chain (a blocked stage, a stage with no recipe, a profile that cannot run a stage, a store that
is not mounted) does so before the first job is submitted.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from recipekit.errors import Issue, RecipeError
from recipekit.launch import slurm
from recipekit.launch.profile import ClusterProfile
from recipekit.launch.run_dir import RunDir
from recipekit.launch.submit import check_submittable, check_tracking, submit_plan
from recipekit.lineage.store import versions
from recipekit.pipeline.chain import Chain, PlannedStage, plan_chain


@attrs.frozen
class SubmittedStage:
    name: str
    job_id: str
    run: RunDir
    after: tuple[str, ...]


def chain_issues(planned: Sequence[PlannedStage], profile: ClusterProfile) -> list[Issue]:
    """Why the chain cannot be submitted to ``profile``; empty when it can."""
    issues: list[Issue] = []
    for index, entry in enumerate(planned):
        before = f"--until {planned[index - 1].name}" if index else "a later --from"
        if entry.plan is None:
            issues.append(
                Issue(
                    entry.name,
                    "has no recipe (no Stage in the pipeline's folder), so it cannot run",
                    hint=f"stop the chain before it: {before}",
                )
            )
            continue
        if entry.lineage.blocked:
            issues.append(
                Issue(f"{entry.name}: lineage.blocked", entry.lineage.blocked, hint=before)
            )
            continue
        if entry.plan.stage.framework.launch == "delegated":
            issues.append(
                Issue(
                    entry.name,
                    "is handed to its framework's own Slurm client, which submits at once and "
                    "cannot wait for the stages before it",
                    hint=f"{before}, then submit {entry.name} once its input exists",
                )
            )
            continue
        try:
            check_submittable(entry.plan, _profile_for(entry, profile))
        except RecipeError as exc:
            issues += [attrs.evolve(i, path=f"{entry.name}: {i.path}") for i in exc.issues]
    return issues


def _profile_for(entry: PlannedStage, profile: ClusterProfile) -> ClusterProfile:
    assert entry.plan is not None
    return profile.for_base(entry.plan.stage.framework.image)


def submit_chain(
    chain: Chain, names: Sequence[str], profile: ClusterProfile, overrides: Sequence[str] = ()
) -> list[SubmittedStage]:
    """Plan, check, then submit every stage in order, each after the stages it reads from."""
    planned = plan_chain(chain, names, overrides)
    issues = chain_issues(planned, profile)
    if issues:
        raise RecipeError(issues, context=f"pipeline {chain.pipeline.name}: nothing submitted")
    check_tracking(profile)
    producers = chain.pipeline.producers()
    jobs: dict[str, str] = {}
    submitted = []
    for entry in planned:
        assert entry.plan is not None
        refs = entry.lineage.artifact_inputs().values()
        after = tuple(
            dict.fromkeys(
                jobs[producers[ref.name]]
                for ref in refs
                if ref.name in producers and producers[ref.name] in jobs
            )
        )
        job_id, run = submit_plan(entry.plan, _profile_for(entry, profile), after=after)
        jobs[entry.name] = job_id
        submitted.append(SubmittedStage(entry.name, job_id, run, after))
    return submitted


def chain_status(
    planned: Sequence[PlannedStage], profile: ClusterProfile
) -> list[dict[str, Any]]:
    """Each stage's job (from its run directory) and its output artifact's versions."""
    rows = []
    store = Path(profile.artifact_store.path) if profile.artifact_store else None
    for entry in planned:
        row: dict[str, Any] = {"stage": entry.name, "job": None, "state": "not submitted"}
        if entry.plan is not None:
            run = RunDir.for_plan(profile.runs_dir, entry.name, entry.plan.hash)
            job_id = run.job_id()
            if job_id is not None:
                row.update(job=job_id, run=str(run.path), **_job(job_id))
        output = entry.lineage.output
        if output is not None and store is not None:
            row["output"] = output
            row["versions"] = [
                {"version": f"v{v.version}", "step": v.step, "run": v.run, "kept": v.kept}
                for v in versions(store, output)
            ]
        rows.append(row)
    return rows


def _job(job_id: str) -> dict[str, Any]:
    """The job's state and how often it was requeued and started again."""
    try:
        details = slurm.job_details(job_id)
    except RecipeError:
        return {"state": "UNKNOWN (no longer known to the controller)", "restarts": None}
    restarts = details.get("Restarts", "0")
    return {
        "state": details.get("JobState", "UNKNOWN"),
        "restarts": int(restarts) if restarts.isdigit() else None,
    }
