"""plan + cluster profile -> a run directory on shared storage -> a Slurm job.

Submission refuses, before anything is written: a stage its lineage marks blocked, a profile
that inlines a secret, a plan whose hardware is not the profile's, online tracking without
``WANDB_API_KEY``, and a plan that already has a job pending or running. A "delegated" stage
(``submit_delegated``) is handed to its framework's own Slurm client on this host instead, and
also needs what that client must be told of the cluster.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from recipekit.checkouts import checkout_problem
from recipekit.errors import Issue, RecipeError
from recipekit.framework import SITE_PLACEHOLDERS
from recipekit.images.registry import pinned_image_issue
from recipekit.job_rules import submit_rules
from recipekit.launch import slurm
from recipekit.launch.profile import ClusterProfile, NoContainer, Pyxis
from recipekit.launch.run_dir import (
    INTERACTIVE_RECORD,
    JOB_RECORD,
    JOB_SCRIPT,
    LAUNCHER,
    PROVENANCE_FILE,
    RunDir,
    create_whole,
    job_name,
    submit_lock,
)
from recipekit.launch.run_files import run_files
from recipekit.launch.run_record import capture_provenance, record_finished_run
from recipekit.lineage.checkpoint_stamp import planned_run_verdict
from recipekit.lineage.refs import ARTIFACTS_ROOT
from recipekit.lineage.store import input_problem, is_store, store_paths, stored_input
from recipekit.memory.switches import ALLOC_CONF, worker_environment
from recipekit.plan import Plan


def check_launchable(plan: Plan) -> None:
    """A blocked stage (its lineage says why: it needs components that are not public, say)
    plans and renders, for reference, but never reaches Slurm."""
    lineage = plan.stage.lineage
    if lineage is not None and lineage.blocked:
        raise RecipeError(
            [
                Issue(
                    "lineage.blocked",
                    lineage.blocked,
                    hint="`plan` and `render` still show what it would run",
                )
            ],
            context=f"{plan.stage.name}: cannot launch",
        )


def check_tracking(profile: ClusterProfile, environ: Mapping[str, str] | None = None) -> None:
    """Online tracking needs ``WANDB_API_KEY`` here, where Slurm copies the job's environment."""
    from recipekit.lineage.tracking import check_credentials

    if profile.tracking.mode != "off":
        check_credentials(profile.tracking.mode, environ)


def check_submittable(plan: Plan, profile: ClusterProfile) -> None:
    check_launchable(plan)
    issues = profile.inlined_secrets()
    if isinstance(profile.container, Pyxis):
        tag_only = pinned_image_issue(profile.container.image, f"profile {profile.name}: image")
        if tag_only is not None:
            issues.append(tag_only)
    node = plan.stage.hardware.node
    if node != profile.node:
        issues.append(
            Issue(
                f"--cluster {profile.name}",
                f"the plan is for {node.name} nodes ({node.gpus_per_node} GPUs, "
                f"{node.cpu_arch.value}); this cluster has {profile.node.name} nodes",
            )
        )
    issues += runs_dir_issues(profile)
    issues += artifact_store_issues(plan, profile)
    issues += code_checkout_issues(plan, profile)
    issues += job_environment_issues(plan, profile)
    issues += job_memory_issues(plan, profile)
    if issues:
        raise RecipeError(issues, context=f"{plan.stage.name}: cannot submit")


def runs_dir_issues(profile: ClusterProfile) -> list[Issue]:
    """``runs_dir`` must be a writable directory here: it is never created on the submit host
    (a typo, or shared storage that is not mounted, would otherwise become a local folder no
    node sees). Preflight checks that every node sees the run directory."""
    path = Path(profile.runs_dir)
    where = f"profile {profile.name}: runs_dir"
    hint = "create it on shared storage every node mounts, or fix the profile"
    if not path.exists():
        missing = "does not exist on this host (not mounted, or a typo)"
        return [Issue(where, missing, value=str(path), hint=hint)]
    if not path.is_dir():
        return [Issue(where, "is not a directory", value=str(path), hint=hint)]
    try:  # a real write: os.access says yes to root on a read-only file system's folder
        with tempfile.TemporaryFile(dir=path, prefix=".recipekit-probe-"):
            pass
    except OSError as exc:
        return [Issue(where, f"is not writable here ({exc.strerror})", value=str(path), hint=hint)]
    return []


def job_environment_issues(plan: Plan, profile: ClusterProfile) -> list[Issue]:
    """``recipekit.job_rules`` on the job's environment as this profile makes it (its
    ``hf_home`` and ``extra_env`` over the stage's): a cache or checkpoint directory on a
    node-local disk that the profile does not list as shared, and expandable segments beside
    colocated vLLM. Preflight checks them again on each node's real environment."""
    from recipekit.launch.job_script import job_environment

    where = f"profile {profile.name}"
    labels = {name: f"environment.{name}" for name in plan.stage.environment}
    if profile.hf_home:
        labels.setdefault("HF_HOME", f"{where}: hf_home")
    labels |= {name: f"{where}: extra_env.{name}" for name in profile.extra_env}
    return submit_rules(
        plan.as_json(), job_environment(profile, plan), labels, shared_storage(profile)
    )


def job_memory_issues(plan: Plan, profile: ClusterProfile) -> list[Issue]:
    """The memory estimate again in the job's environment as this profile makes it, where the
    profile's ``extra_env`` changes what the plan assumed of PyTorch's allocator
    (``PYTORCH_CUDA_ALLOC_CONF``): a profile that turns expandable segments off raises the
    allocator's share, and a stage that fit in its plan may not fit on this cluster."""
    from recipekit.launch.job_script import job_environment

    job = job_environment(profile, plan)
    if job.get(ALLOC_CONF) == plan.stage.environment.get(ALLOC_CONF):
        return []
    stage = plan.stage
    with worker_environment(job):
        memory = stage.framework.memory(plan.config, stage.hardware, stage.model, plan.layout)
    if memory is None:
        return []
    too_big, _ = memory.issues()
    where = f"profile {profile.name}: extra_env.{ALLOC_CONF}"
    return [
        attrs.evolve(issue, message=f"{issue.message} (with {where} = {job.get(ALLOC_CONF)!r})")
        for issue in too_big
    ]


def shared_storage(profile: ClusterProfile) -> list[str]:
    """Paths every node of this profile's jobs sees, as the job sees them."""
    store = [ARTIFACTS_ROOT] if profile.artifact_store is not None else []
    runs = profile.container.in_container(profile.runs_dir)
    return [*profile.shared_paths.values(), runs, *store]


def code_checkout_issues(plan: Plan, profile: ClusterProfile) -> list[Issue]:
    """Every source checkout the stage mounts: named by the profile, at the pinned commit."""
    issues = []
    for code in plan.stage.code:
        where = f"profile {profile.name}: code_checkouts"
        path = profile.code_checkouts.get(code.name)
        if path is None:
            issues.append(
                Issue(
                    where,
                    f"no checkout of {code.name} ({code}), which {plan.stage.name} mounts at "
                    f"{code.mount}",
                    hint=f"git clone https://github.com/{code.repository} on shared storage, "
                    f"git checkout {code.commit}, and code_checkouts={{{code.name!r}: PATH}}",
                )
            )
            continue
        if isinstance(profile.container, NoContainer) and path != code.mount:
            issues.append(
                Issue(
                    f"{where}.{code.name}",
                    f"without a container the nodes see host paths: the checkout must be at "
                    f"{code.mount}",
                    value=path,
                )
            )
            continue
        problem = checkout_problem(Path(path), code)
        if problem is not None:
            issues.append(Issue(f"{where}.{code.name}", problem, value=path))
    return issues


def artifact_store_issues(plan: Plan, profile: ClusterProfile) -> list[Issue]:
    """A plan that reads or writes artifacts needs the profile's store, mounted here too."""
    used = store_paths(plan.as_json())
    store = profile.artifact_store
    if not used:
        return []
    roles = ", ".join(sorted(used))
    if store is None:
        return [
            Issue(
                f"profile {profile.name}: artifact_store",
                f"not set, and {plan.stage.name} reads or writes artifacts ({roles}) under "
                f"{ARTIFACTS_ROOT}",
                hint="artifact_store=ArtifactStore(path=<shared storage>) in recipes/clusters.py",
            )
        ]
    if not is_store(Path(store.path)):
        return [
            Issue(
                f"profile {profile.name}: artifact_store.path",
                "is not an artifact store on this host (not mounted, or never initialised)",
                value=store.path,
                hint=f"mount the shared storage, or `recipekit store init {store.path}`",
            )
        ]
    shown = plan.as_json()
    return stored_input_issues(shown, Path(store.path)) + stamped_checkpoint_issues(
        shown, Path(store.path)
    )


def stamped_checkpoint_issues(plan: Mapping[str, Any], root: Path) -> list[Issue]:
    """The checkpoints the run resumes or starts from, in the store mounted at ``root``,
    against the model and layout that wrote them (the job's preflight checks them again)."""
    return list(planned_run_verdict(plan, root=root, visible_only=True).errors)


def stored_input_issues(plan: Mapping[str, Any], root: Path) -> list[Issue]:
    """Every input version the store holds must be whole (by its manifest: sizes, and the
    sha256 of a file whose stat moved): a truncated, emptied, rewritten or deleted version is
    refused, naming the file. One not published yet
    is left to preflight: a pipeline's earlier stage publishes it before this one starts."""
    issues = []
    for role, path in plan.get("inputs", {}).items():
        found = stored_input(str(path))
        if found is None:
            continue
        problem = input_problem(root, *found, missing_ok=True)
        if problem is not None:
            issues.append(Issue(f"inputs.{role}", problem, hint="recipekit store verify"))
    return issues


def launcher_pex() -> Path:
    """The Pex this process runs from: it is copied to the run directory for the job step."""
    pex = os.environ.get("PEX", "")
    if not pex or not Path(pex).is_file():
        raise RecipeError(
            [
                Issue(
                    "submit",
                    "must run from the packaged stage launcher (./pants run or dist/*.pex), "
                    "which the job runs on every node",
                )
            ]
        )
    return Path(pex)


def write_run_dir(
    plan: Plan,
    profile: ClusterProfile,
    launcher: Path | None,
    *,
    interactive: bool = False,
    checkout: Path | None = None,
) -> RunDir:
    """The run directory; ``launcher`` is copied in unless the image has it baked (None).

    ``checkout`` (default: the current directory) is the git checkout the run records.
    """
    # Everything that can fail is computed before the first write.
    run = RunDir.for_plan(profile.runs_dir, plan.stage.name, plan.hash)
    files = run_files(plan, profile, interactive=interactive).texts()
    script = files.pop(JOB_SCRIPT)
    files[PROVENANCE_FILE] = capture_provenance(plan.as_json(), profile, checkout or Path.cwd())

    def fill(target: RunDir) -> None:
        target.logs.mkdir(exist_ok=True)
        for name, text in files.items():
            target.write_text(name, text)
        target.write_text(JOB_SCRIPT, script, mode=0o755)
        target.file(INTERACTIVE_RECORD).unlink(missing_ok=True)
        if launcher is not None:
            staged = target.file(f".{LAUNCHER}.{os.getpid()}.tmp")
            shutil.copyfile(launcher, staged)
            staged.chmod(0o755)
            staged.replace(target.file(LAUNCHER))

    try:
        create_whole(run, fill)
    except OSError as exc:  # a full or failing file system under runs_dir: nothing submitted
        raise RecipeError(
            [
                Issue(
                    f"profile {profile.name}: runs_dir",
                    f"cannot write the run directory {run.path} ({exc.strerror or exc})",
                    value=profile.runs_dir,
                )
            ],
            context=f"{plan.stage.name}: not submitted",
        ) from None
    return run


def check_requeues(
    plan: Plan,
    profile: ClusterProfile,
    step_time_s: float | None,
    max_requeue: Callable[[], int] | None = None,
) -> None:
    """Refuses a run that needs more continuations than the cluster requeues a job (Slurm's
    MaxBatchRequeue, read from the cluster only where a step time is known: given, or measured
    in an earlier attempt): its last attempts would be refused, the stage left unfinished."""
    from recipekit.launch.continuation import max_batch_requeue
    from recipekit.launch.time_budget import measured_step_time, time_budget

    source = "given (--step-time)"
    if step_time_s is None:
        measured = measured_step_time(plan, profile)
        if measured is None:
            return
        step_time_s, source = measured
    budget = time_budget(
        plan,
        profile,
        step_time_s=step_time_s,
        step_time_source=source,
        max_requeue=(max_requeue or max_batch_requeue)(),
    )
    if budget is not None and budget.issues():
        raise RecipeError(budget.issues(), context=f"{plan.stage.name}: cannot submit")


def submit_plan(
    plan: Plan,
    profile: ClusterProfile,
    *,
    interactive: bool = False,
    after: Sequence[str] = (),
    step_time_s: float | None = None,
    max_requeue: Callable[[], int] | None = None,
) -> tuple[str, RunDir]:
    """Submit; ``after``: job ids that must end well before this one starts (a pipeline);
    ``step_time_s``: seconds a step takes, where known, and ``max_requeue`` the cluster's
    MaxBatchRequeue where the caller has read it (``check_requeues``)."""
    check_submittable(plan, profile)
    if not interactive:
        check_requeues(plan, profile, step_time_s, max_requeue)
    launch = plan.stage.framework.launch
    if launch == "delegated" and not interactive:
        raise ValueError(f"{plan.stage.name} is delegated: submit it with submit_delegated")
    if interactive and launch != "ray":
        raise RecipeError(
            [
                Issue(
                    "--interactive",
                    f"keeps a Ray cluster up for `attach` and `run`; {plan.stage.name} "
                    f"launches {launch}, without Ray",
                )
            ],
            context=f"{plan.stage.name}: not submitted",
        )
    check_tracking(profile)
    name = job_name(plan.stage.name, plan.hash)
    launcher = None if profile.shipping == "baked" else launcher_pex()
    # One submit of a plan at a time, from the duplicate check to job.json: a second one waits
    # here, then finds the first one's job and is refused.
    planned_run = RunDir.for_plan(profile.runs_dir, plan.stage.name, plan.hash)
    with submit_lock(profile.runs_dir, planned_run):
        running = slurm.active_jobs_named(name)
        if running:
            listed = ", ".join(f"{job} ({state})" for job, state in running)
            raise RecipeError(
                [
                    Issue(
                        name,
                        f"this plan already has a job: {listed}",
                        hint="wait for it, or `cancel` it first",
                    )
                ],
                context=f"{plan.stage.name}: not submitted",
            )
        run = write_run_dir(plan, profile, launcher, interactive=interactive)
        job_id = slurm.submit(run.file(JOB_SCRIPT), after=after)
        record: dict[str, Any] = {
            "job_id": job_id,
            "job_name": name,
            "interactive": interactive,
            "submitted_at": time.time(),
            **({"after": list(after)} if after else {}),
        }
        run.write_text(JOB_RECORD, json.dumps(record) + "\n")
    return job_id, run


def missing_site_values(plan: Plan, profile: ClusterProfile) -> list[Issue]:
    """What a delegated stage's own Slurm client needs of the cluster and the profile lacks."""
    framework = plan.stage.framework
    arguments = " ".join(framework.arguments(plan.framework_config))
    values = profile.site_values(framework.image)
    return [
        Issue(
            f"profile {profile.name}",
            f"{plan.stage.name} is submitted by {framework.entry_point}, its own Slurm client, "
            f"which needs {what}",
            hint="set it in the cluster profile (recipes/clusters.py)",
        )
        for placeholder, what in SITE_PLACEHOLDERS.items()
        if placeholder in arguments and values[placeholder] is None
    ]


@attrs.frozen
class DelegatedSubmission:
    run: RunDir
    # The framework's client: 0 once it has submitted its job.
    client_status: int
    # The W&B record made here afterwards (0, or run_record.EXIT_NOT_RECORDED); None if the
    # client failed and nothing was recorded.
    record_status: int | None


def delegated_issues(plan: Plan, profile: ClusterProfile) -> list[Issue]:
    """What keeps a delegated stage's client from submitting from this host."""
    issues = missing_site_values(plan, profile)
    client = plan.stage.framework.entry_point
    if shutil.which(client) is None:
        issues.append(
            Issue(
                client,
                f"not on this host's PATH: {plan.stage.name} is submitted by it",
                hint=f"install {plan.stage.framework.name} {plan.stage.framework.version} here",
            )
        )
    return issues


def submit_delegated(
    plan: Plan,
    profile: ClusterProfile,
    echo: Callable[[str], None],
    *,
    after: Sequence[str] = (),
) -> DelegatedSubmission:
    """Run a delegated stage's script on this host, its output echoed and kept in the run's
    logs. The framework's client submits and owns the Slurm job; once it has, the run is
    recorded here (the profile's tracking) with its inputs. ``after``: Slurm jobs the
    client's job must wait for (a pipeline), passed as the framework's own arguments.
    """
    check_submittable(plan, profile)
    framework = plan.stage.framework
    waiting = framework.waiting_for(after) if after else []
    if after and not waiting:
        raise ValueError(f"{framework.name} cannot make its job wait for other jobs")
    issues = delegated_issues(plan, profile)
    if issues:
        raise RecipeError(issues, context=f"{plan.stage.name}: cannot submit")
    check_tracking(profile)
    client = framework.entry_point
    run = write_run_dir(plan, profile, None)
    started = time.time()
    log = run.logs / f"submit-{int(started)}.out"
    with (
        log.open("w") as out,
        subprocess.Popen(
            ["bash", str(run.file(JOB_SCRIPT)), *waiting],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        ) as process,
    ):
        assert process.stdout is not None
        for line in process.stdout:
            out.write(line)
            echo(line.rstrip("\n"))
    record = {
        "delegated_to": client,
        "exit_status": process.returncode,
        "log": str(log),
        "submitted_at": started,
        **({"after": list(after)} if after else {}),
    }
    run.write_text(JOB_RECORD, json.dumps(record) + "\n")
    if process.returncode != 0:
        return DelegatedSubmission(run, process.returncode, None)
    recorded = record_finished_run(run, plan.as_json(), profile, echo)
    return DelegatedSubmission(run, 0, recorded)
