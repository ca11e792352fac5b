"""plan + cluster profile -> a run directory on shared storage -> a Slurm job.

Submission refuses, before anything is written: a stage its lineage marks blocked, a profile
that inlines a secret, a plan whose hardware is not the profile's, online tracking without
``WANDB_API_KEY``, and a plan that already has a job pending or running.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from recipekit.errors import Issue, RecipeError
from recipekit.images.registry import pinned_image_issue
from recipekit.launch import slurm
from recipekit.launch.job_script import render_job_script
from recipekit.launch.profile import ClusterProfile, Pyxis, profile_to_json
from recipekit.launch.run_dir import (
    CONFIG_FILE,
    INTERACTIVE_RECORD,
    JOB_RECORD,
    JOB_SCRIPT,
    LAUNCHER,
    PLAN_FILE,
    PROFILE_FILE,
    PROVENANCE_FILE,
    RunDir,
    job_name,
)
from recipekit.launch.run_record import capture_provenance
from recipekit.plan import Plan
from recipekit.report import config_yaml, plan_json


def check_launchable(plan: Plan) -> None:
    """A blocked stage (seed 004: it depends on components that are not public) plans and
    renders, for reference, but never reaches Slurm."""
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
    if issues:
        raise RecipeError(issues, context=f"{plan.stage.name}: cannot submit")


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
    run = RunDir.for_plan(profile.runs_dir, plan.stage.name, plan.hash)
    run.logs.mkdir(parents=True, exist_ok=True)
    plan_data = plan.as_json()
    run.write_text(CONFIG_FILE, config_yaml(plan.framework_config))
    run.write_text(PLAN_FILE, plan_json(plan))
    run.write_text(PROFILE_FILE, json.dumps(profile_to_json(profile), indent=2) + "\n")
    provenance = capture_provenance(plan_data, profile, checkout or Path.cwd())
    run.write_text(PROVENANCE_FILE, provenance)
    script = render_job_script(plan_data, profile, run, interactive=interactive)
    run.write_text(JOB_SCRIPT, script, mode=0o755)
    run.file(INTERACTIVE_RECORD).unlink(missing_ok=True)
    if launcher is not None:
        staged = run.file(LAUNCHER + ".tmp")
        shutil.copyfile(launcher, staged)
        staged.chmod(0o755)
        staged.replace(run.file(LAUNCHER))
    return run


def submit_plan(
    plan: Plan, profile: ClusterProfile, *, interactive: bool = False
) -> tuple[str, RunDir]:
    check_submittable(plan, profile)
    launch = plan.stage.framework.launch
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
    launcher = None if profile.shipping == "baked" else launcher_pex()
    run = write_run_dir(plan, profile, launcher, interactive=interactive)
    job_id = slurm.submit(run.file(JOB_SCRIPT))
    record: dict[str, Any] = {
        "job_id": job_id,
        "job_name": name,
        "interactive": interactive,
        "submitted_at": time.time(),
    }
    run.write_text(JOB_RECORD, json.dumps(record) + "\n")
    return job_id, run
