"""A plan and a cluster profile as the files of a run: the one place they are assembled.

``render``, ``submit``, the image layer of the launcher, the snapshots and ``diff`` all take their
files from ``run_files``, so what a reviewer reads in a snapshot is what a job reads on the
cluster.
"""

from __future__ import annotations

import json

import attrs

from recipekit.launch.job_script import render_job_script
from recipekit.launch.profile import ClusterProfile, profile_to_json
from recipekit.launch.run_dir import CONFIG_FILE, JOB_SCRIPT, PLAN_FILE, PROFILE_FILE, RunDir
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
    """The files of ``plan`` run on ``profile`` (None: the framework's files alone)."""
    config, summary = config_yaml(plan.framework_config), plan_json(plan)
    if profile is None:
        return RunFiles(config=config, plan=summary)
    return RunFiles(
        config=config,
        plan=summary,
        profile=json.dumps(profile_to_json(profile), indent=2) + "\n",
        job_script=job_script(plan, profile, interactive=interactive),
        container=getattr(profile.container, "image", None),
    )



def job_script(plan: Plan, profile: ClusterProfile, *, interactive: bool = False) -> str:
    """The Slurm script of ``plan`` on ``profile``, in the plan's run directory."""
    run = RunDir.for_plan(profile.runs_dir, plan.stage.name, plan.hash)
    return render_job_script(plan.as_json(), profile, run, interactive=interactive)
