"""Ray's bring-up wait grows with the node count (issue 42), from the measured line."""

from __future__ import annotations

from pathlib import Path

import attrs

from recipekit.launch.bringup import ray_start_timeout
from recipekit.launch.profile import NoContainer, Tracking
from recipekit.launch.time_budget import run_outline
from recipekit.plan import make_plan
from recipes.clusters import PROFILES
from recipes.super3.dapo import dapo_gb200


def test_the_wait_follows_the_measured_line_above_its_floor() -> None:
    # 2 x (5.55 + 2.22 N): under the old 300 s to about 65 nodes, then growing.
    assert ray_start_timeout(3) == ray_start_timeout(16) == 300
    assert ray_start_timeout(144) == 651  # 2 x 325.2 s, rounded up
    assert ray_start_timeout(288) > 2 * ray_start_timeout(144) - 20


def test_a_profile_that_sets_the_wait_keeps_it_and_the_plan_says_which(tmp_path: Path) -> None:
    profile = attrs.evolve(
        PROFILES["gb200-nvl72"],
        tracking=Tracking(mode="off"),
        container=NoContainer(),
        runs_dir=str(tmp_path),
        artifact_store=None,
    )
    assert profile.ray_start_timeout_s is None and profile.ray_start_timeout(144) == 651
    plan = make_plan(dapo_gb200)  # 5 nodes
    [line] = [x for x in run_outline(plan, profile) if x.startswith("Ray bring-up")]
    assert line.startswith("Ray bring-up on 5 node(s): the head waits up to 300 s (derived: 2 x")
    fixed = attrs.evolve(profile, ray_start_timeout_s=900, startup_allowance_s=600)
    [line] = [x for x in run_outline(plan, fixed) if x.startswith("Ray bring-up")]
    assert "up to 900 s (profile ray_start_timeout_s); longer than the start-up allowance" in line
