"""Submit a chain of stages as Slurm jobs that wait for each other, and report where they stand.

Each stage is an ordinary run (its own run directory, job script and launcher) submitted with
``--dependency=afterok:<the jobs of the stages it reads from>``. Only the stages that run are
submitted (``pipeline.actions``: a stage whose key and input versions already made a whole
version is skipped), each pinned to the exact store version of every input it reads from the
store (``/artifacts/<name>/vN``); an input a stage submitted before it makes is read as its
selector once that job is done. Its preflight checks the version is whole. Everything that
can refuse the chain (a blocked stage, a stage with no recipe, a profile that cannot run a
stage, a store that is not mounted) does so before the first job is submitted.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from recipekit.errors import Issue, RecipeError
from recipekit.launch import slurm
from recipekit.launch.continuation import continuation_summary, max_batch_requeue
from recipekit.launch.profile import ClusterProfile
from recipekit.launch.run_dir import RunDir
from recipekit.launch.submit import (
    check_requeues,
    check_submittable,
    check_tracking,
    delegated_issues,
    submit_delegated,
    submit_plan,
)
from recipekit.lineage.store import is_store, keep_version, versions
from recipekit.pipeline.actions import (
    Images,
    NoStore,
    StageAction,
    StoreRecords,
    pinned_plans,
    plan_actions,
)
from recipekit.pipeline.chain import Chain, PlannedStage, plan_chain
from recipekit.pipeline.submissions import StageRecord, last_submission, record_submission
from recipekit.progress import utc_stamp


@attrs.frozen
class SubmittedStage:
    name: str
    # None for a delegated stage: its framework's client submitted the job.
    job_id: str | None
    run: RunDir
    after: tuple[str, ...]
    delegated_to: str | None = None


def chain_issues(
    planned: Sequence[PlannedStage],
    profile: ClusterProfile,
    step_times: Mapping[str, float] | None = None,
    max_requeue: Callable[[], int] | None = None,
) -> list[Issue]:
    """Why the chain cannot be submitted to ``profile``; empty when it can. ``step_times``:
    stage -> seconds a step takes there (else one measured in an earlier attempt): a stage
    that would need more continuations than Slurm requeues a job (``max_requeue``, else read
    from the cluster) is refused here, before any stage is submitted."""
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
        framework = entry.plan.stage.framework
        stage_profile = profile_for_stage(entry, profile)
        if framework.launch == "delegated":
            if not framework.waiting_for(["1"]):
                issues.append(
                    Issue(
                        entry.name,
                        f"is handed to {framework.entry_point}, its own Slurm client, which "
                        "cannot make its job wait for the stages before it",
                        hint=f"{before}, then submit {entry.name} once its input exists",
                    )
                )
                continue
            issues += _named(entry.name, delegated_issues(entry.plan, stage_profile))
            readers = [e.name for e in planned[index + 1 :] if _reads_from(e, entry)]
            if readers:
                issues.append(
                    Issue(
                        entry.name,
                        f"submits its own job, whose id recipekit never learns, so "
                        f"{', '.join(readers)} cannot wait for it",
                        hint=f"--until {entry.name}, then submit the rest once it has finished",
                    )
                )
        try:
            check_submittable(entry.plan, stage_profile)
            if framework.launch != "delegated":
                check_requeues(
                    entry.plan, stage_profile, (step_times or {}).get(entry.name), max_requeue
                )
        except RecipeError as exc:
            issues += _named(entry.name, exc.issues)
    return issues


def _named(stage: str, issues: Sequence[Issue]) -> list[Issue]:
    return [attrs.evolve(i, path=f"{stage}: {i.path}") for i in issues]


def _reads_from(reader: PlannedStage, producer: PlannedStage) -> bool:
    output = producer.lineage.output
    return output is not None and any(
        ref.name == output for ref in reader.lineage.artifact_inputs().values()
    )


def profile_for_stage(entry: PlannedStage, profile: ClusterProfile) -> ClusterProfile:
    """``profile`` as the stage runs on it: with the image of its framework's base."""
    assert entry.plan is not None
    return profile.for_base(entry.plan.stage.framework.image)


def submit_chain(
    chain: Chain,
    names: Sequence[str],
    profile: ClusterProfile,
    overrides: Sequence[str] = (),
    echo: Callable[[str], None] = print,
    *,
    rerun: Sequence[str] = (),
    step_times: Mapping[str, float] | None = None,
) -> tuple[list[SubmittedStage], list[StageAction]]:
    """Plan, check, then submit every stage that runs (``rerun``: and these), in order, each
    after the stages it reads from; returns them and every stage's action. A delegated
    stage's client runs here (its output to ``echo``), told to wait for them."""
    records = chain_records(profile)
    stored = records.names() if records is not None else None
    planned = plan_chain(chain, names, overrides, stored=stored)
    actions = plan_actions(
        chain, planned, records or NoStore(), rerun=rerun, images=chain_images(profile)
    )
    planned = pinned_plans(chain, planned, actions, overrides)
    # Slurm's MaxBatchRequeue, asked of the cluster once for the chain (and only where a stage's
    # step time is known), not once per stage and again at its submit.
    max_requeue = functools.cache(max_batch_requeue)
    issues = chain_issues(planned, profile, step_times, max_requeue)
    if issues:
        raise RecipeError(issues, context=f"pipeline {chain.pipeline.name}: nothing submitted")
    check_tracking(profile)
    if records is not None:
        for line in keep_pinned(records.root, actions):
            echo(line)
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
        stage_profile = profile_for_stage(entry, profile)
        framework = entry.plan.stage.framework
        if framework.launch == "delegated":
            handed = submit_delegated(entry.plan, stage_profile, echo, after=after)
            if handed.client_status != 0:
                raise RecipeError(
                    [
                        Issue(
                            entry.name,
                            f"{framework.entry_point} failed (exit {handed.client_status}); "
                            f"the stages before it are submitted",
                            hint=f"its output is in {handed.run.logs}",
                        )
                    ],
                    context=f"pipeline {chain.pipeline.name}",
                )
            submitted.append(
                SubmittedStage(entry.name, None, handed.run, after, framework.entry_point)
            )
            continue
        job_id, run = submit_plan(
            entry.plan,
            stage_profile,
            after=after,
            step_time_s=(step_times or {}).get(entry.name),
            max_requeue=max_requeue,
        )
        jobs[entry.name] = job_id
        submitted.append(SubmittedStage(entry.name, job_id, run, after))
    _record(chain, profile, actions, submitted)
    return submitted, actions


def _record(
    chain: Chain,
    profile: ClusterProfile,
    actions: Sequence[StageAction],
    submitted: Sequence[SubmittedStage],
) -> None:
    """What this submission did, for ``pipeline status``: each stage's action, and the run
    directory of each one submitted."""
    at = utc_stamp()
    runs = {s.name: s.run.path.name for s in submitted}
    records = {
        action.stage: StageRecord(_action_row(action), run=runs.get(action.stage), at=at)
        for action in actions
    }
    record_submission(profile.runs_dir, chain.pipeline.name, records)


def _action_row(action: StageAction) -> dict[str, Any]:
    """What a status row says of a stage's action: whether it runs, why, its version."""
    version = {"version": f"v{action.version}"} if action.version is not None else {}
    return {"runs": action.runs, "reason": action.reason, **version}


def keep_pinned(root: Path, actions: Sequence[StageAction]) -> list[str]:
    """Before a stage that runs is submitted, every store version it is pinned to is kept
    (``store.keep_version``): the run that saved it may still be running, or be requeued,
    and its framework's keep policy (``keep_top_k``) must not delete what a planned stage
    will read. Returns what was kept, one line each."""
    lines = []
    for action in actions:
        if not action.runs:
            continue
        for role, ref in action.pins().items():
            assert ref.version is not None
            before = versions(root, ref.name)[ref.version]
            holder = f"{action.stage}: run.{role}"
            kept = keep_version(root, ref.name, ref.version, pinned_by=holder)
            if kept != before:
                lines.append(
                    f"kept {ref} (step-{kept.step}) for {action.stage}: {kept.path}, which its "
                    "run's keep policy cannot delete"
                )
    return lines


def chain_images(profile: ClusterProfile) -> Images:
    """The container images each stage would run in on ``profile``, as ``submit_plan`` (or a
    delegated stage's client) is handed them: the profile ``for_base`` the stage's base."""
    from recipekit.launch.run_record import stage_images

    def images(entry: PlannedStage) -> dict[str, str]:
        assert entry.plan is not None
        framework = entry.plan.stage.framework
        try:
            stage_profile = profile.for_base(framework.image)
        except RecipeError:
            return {}  # no image for its base: submit refuses the stage (chain_issues)
        return stage_images(
            framework.image, stage_profile, delegated=framework.launch == "delegated"
        )

    return images


def chain_records(profile: ClusterProfile | None) -> StoreRecords | None:
    """The profile's artifact store, read for planning; None without one on this host."""
    store = profile.artifact_store if profile is not None else None
    if store is None or not is_store(Path(store.path)):
        return None
    return StoreRecords(Path(store.path))


@attrs.frozen
class StatusSource:
    """Where a stage's status row reads from: the run directory whose job it shows (None: the
    plan's own), the action it shows, and whether that job is this chain's work (submitted by
    the last ``pipeline submit``, or the plan's own run) rather than the old job that made
    the version an up-to-date stage found."""

    action: Mapping[str, Any] | None = None
    run: str | None = None
    submitted: bool = True


def as_submitted(
    chain: Chain,
    planned: list[PlannedStage],
    profile: ClusterProfile,
    overrides: Sequence[str] = (),
) -> tuple[list[PlannedStage], dict[str, StatusSource]]:
    """The plans as ``submit_chain`` submits them (a stage that runs is pinned to the input
    versions resolved) and where each stage's status comes from. A stage the last ``pipeline
    submit`` covered is shown as that submission left it (``submissions``): its job, or up to
    date. Any other stage from its action now: a stage not submitted is up to date only when
    its action does not run, not because its output has some version; the job that made that
    version is named, not drawn as this chain's. Without a store here: the plans as they are."""
    records = chain_records(profile)
    if records is None:
        return planned, {}
    actions = plan_actions(chain, planned, records, images=chain_images(profile))
    pinned = {p.name: p for p in pinned_plans(chain, planned, actions, overrides)}
    last = last_submission(profile.runs_dir, chain.pipeline.name)
    sources: dict[str, StatusSource] = {}
    for entry, action in zip(planned, actions, strict=True):
        recorded = last.get(entry.name)
        if recorded is not None:
            sources[entry.name] = StatusSource(recorded.action, recorded.run, recorded.submitted)
            continue
        source = StatusSource(_action_row(action))
        output = entry.lineage.output
        if not action.runs and action.version is not None and output is not None:
            made = [v for v in versions(records.root, output) if v.version == action.version]
            if made:
                source = attrs.evolve(source, run=made[0].run, submitted=False)
        sources[entry.name] = source
    return [pinned.get(p.name, p) for p in planned], sources


def chain_status(
    planned: Sequence[PlannedStage],
    profile: ClusterProfile,
    sources: Mapping[str, StatusSource] | None = None,
) -> list[dict[str, Any]]:
    """Each stage's job (from its run directory) and its output artifact's versions.
    ``sources`` (``as_submitted``) says where a stage's job is when not in its plan's run
    directory, and its action: the row's ``action`` (whether it runs, and why). A job that is
    not this chain's (the one that made an up-to-date stage's version) is the row's
    ``made_by``, not its ``job``."""
    rows = []
    store = Path(profile.artifact_store.path) if profile.artifact_store else None
    for entry in planned:
        row: dict[str, Any] = {"stage": entry.name, "job": None, "state": "not submitted"}
        source = (sources or {}).get(entry.name, StatusSource())
        if source.action is not None:
            row["action"] = dict(source.action)
        if entry.plan is not None:
            run = RunDir.for_plan(profile.runs_dir, entry.name, entry.plan.hash)
            if source.run is not None:
                run = RunDir(Path(profile.runs_dir) / source.run)
            job_id, client = run.job_id(), run.delegated_to()
            if job_id is not None and not source.submitted:
                row["made_by"] = {"job": job_id, "run": str(run.path)}
            elif job_id is not None:
                row.update(job=job_id, run=str(run.path), **_job(job_id))
                row["lost_nodes"] = [node for _, _, node in run.lost_nodes()]
                # Stopped at its save deadline and continued (launch.continuation).
                row["continued"] = continuation_summary(run.path, job_id)
            elif client is not None:
                where = f"`{client} status` follows its job"
                row.update(run=str(run.path), state=f"handed to {client} ({where})")
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
        # Since it last started ([D-]HH:MM:SS); Slurm says 00:00:00 for one still pending.
        "elapsed": details.get("RunTime", ""),
    }
