"""A plan and a cluster profile as the files of a run: the one place they are assembled.

``render``, ``submit``, the image layer of the launcher, the snapshots and ``diff`` all take their
files from ``run_files``, so what a reviewer reads in a snapshot is what a job reads on the
cluster.
"""

from __future__ import annotations

import json
from typing import Any

import attrs

from recipekit.launch.job_script import render_job_script
from recipekit.launch.profile import ClusterProfile, profile_to_json
from recipekit.launch.run_dir import CONFIG_FILE, JOB_SCRIPT, PLAN_FILE, PROFILE_FILE, RunDir
from recipekit.launch.time_budget import time_budget, with_deadline
from recipekit.lineage.refs import ARTIFACTS_ROOT
from recipekit.lineage.store import stored_artifact
from recipekit.plan import Plan
from recipekit.report import config_yaml, plan_json


@attrs.frozen
class RunFiles:
    """The text of each file of one run; the job's files only where a profile was given."""

    config: str
    plan: str
    profile: str | None = None
    job_script: str | None = None
    # The image the profile's container runtime starts (by digest), None without a container.
    container: str | None = None

    def texts(self) -> dict[str, str]:
        """File name -> text, in the order a run directory lists them."""
        files = {CONFIG_FILE: self.config, PLAN_FILE: self.plan}
        if self.profile is not None:
            files[PROFILE_FILE] = self.profile
        if self.job_script is not None:
            files[JOB_SCRIPT] = self.job_script
        return files


def run_files(
    plan: Plan, profile: ClusterProfile | None, *, interactive: bool = False
) -> RunFiles:
    """The files of ``plan`` run on ``profile`` (None: the framework's files alone).

    On a profile the framework's save deadline comes from its time limit (``time_budget``):
    in the config it reads, and as ``plan.json``'s ``time_budget`` for the job's
    continuations. The plan's hash stays the plan's: the deadline decides where a run is cut
    into attempts, not what it computes."""
    if profile is None:
        return RunFiles(config=config_yaml(plan.framework_config), plan=plan_json(plan))
    budget = time_budget(plan, profile)
    plan = with_deadline(plan, budget)
    config, summary = config_yaml(plan.framework_config), plan_json(plan)
    if budget is not None:
        summary = json.dumps({**json.loads(summary), "time_budget": budget.as_json()}, indent=2)
        summary += "\n"
    store = profile.artifact_store
    if plan.stage.framework.launch == "delegated" and store is not None:
        config = config_yaml(at_host_paths(plan.framework_config, store.path))
    return RunFiles(
        config=config,
        plan=summary,
        profile=json.dumps(profile_to_json(profile), indent=2) + "\n",
        job_script=job_script(plan, profile, interactive=interactive),
        container=getattr(profile.container, "image", None),
    )



def at_host_paths(value: Any, store: str) -> Any:
    """``value`` with every path in the artifact store at the store's host path: a delegated
    framework's client and the containers it starts run outside recipekit's, where nothing is
    mounted at ``/artifacts``. Mount keys and values alike, so a container sees the store at
    the host's path."""
    if isinstance(value, dict):
        return {at_host_paths(k, store): at_host_paths(v, store) for k, v in value.items()}
    if isinstance(value, list):
        return [at_host_paths(v, store) for v in value]
    if isinstance(value, str) and stored_artifact(value) is not None:
        return store.rstrip("/") + value[len(ARTIFACTS_ROOT) :]
    return value


def job_script(plan: Plan, profile: ClusterProfile, *, interactive: bool = False) -> str:
    """The Slurm script of ``plan`` on ``profile``, in the plan's run directory."""
    run = RunDir.for_plan(profile.runs_dir, plan.stage.name, plan.hash)
    return render_job_script(plan, profile, run, interactive=interactive)
