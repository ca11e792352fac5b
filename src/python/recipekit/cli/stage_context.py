"""What every stage-launcher command starts from: the stage this Pex was built for, its plan,
the cluster profile, the run directory. Shared by the user's commands (``stage_launcher``) and
the image commands (``stage_images``)."""

from __future__ import annotations

import os
from typing import Any

import click

from recipekit.errors import Issue, RecipeError
from recipekit.loading import load_object

STAGE_VARIABLE = "RECIPEKIT_STAGE"

cluster_option = click.option(
    "--cluster",
    "cluster",
    metavar="NAME",
    help="A cluster profile: a name from recipes/clusters.py, or MODULE:ATTR / FILE.py:ATTR.",
)


def load_stage() -> Any:
    from recipekit.stage import Stage

    target = os.environ.get(STAGE_VARIABLE, "")
    if not target:
        raise RecipeError(
            [Issue(STAGE_VARIABLE, "not set: this launcher does not know its stage")],
        )
    stage = load_object(target)
    if not isinstance(stage, Stage):
        raise RecipeError([Issue(target, "is not a Stage")])
    return stage


def stage_plan(overrides: tuple[str, ...]) -> Any:
    from recipekit.plan import make_plan

    return make_plan(load_stage(), overrides)


def cluster_profile(name: str | None, plan: Any, *, required: bool) -> Any:
    from recipekit.launch.profile import ClusterProfile
    from recipekit.launch.profiles import default_profile_for, find_profile

    profile: ClusterProfile | None
    if name:
        profile = find_profile(name)
    elif required:
        raise RecipeError([Issue("--cluster", "required: which cluster profile to submit to")])
    else:
        profile = default_profile_for(plan.stage.hardware.node.name)
    return None if profile is None else profile.for_base(plan.stage.framework.image)


def run_dir_of(plan: Any, profile: Any) -> Any:
    from recipekit.launch.run_dir import RunDir

    return RunDir.for_plan(profile.runs_dir, plan.stage.name, plan.hash)

