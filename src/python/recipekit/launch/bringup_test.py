"""Ray's bring-up wait grows with the node count (issue 42), from the measured line."""

from __future__ import annotations

from pathlib import Path

import attrs

from recipekit.launch.bringup import ray_start_timeout
from recipekit.launch.profile import NoContainer, Tracking
from recipes.clusters import PROFILES


def test_the_wait_follows_the_measured_line_above_its_floor() -> None:
    # 2 x (5.55 + 2.22 N): under the old 300 s to about 65 nodes, then growing.
    assert ray_start_timeout(3) == ray_start_timeout(16) == 300
    assert ray_start_timeout(144) == 651  # 2 x 325.2 s, rounded up
    assert ray_start_timeout(288) > 2 * ray_start_timeout(144) - 20


def test_a_profile_that_sets_the_wait_keeps_it(tmp_path: Path) -> None:
    profile = attrs.evolve(
        PROFILES["gb200-nvl72"],
        tracking=Tracking(mode="off"),
        container=NoContainer(),
        runs_dir=str(tmp_path),
        artifact_store=None,
    )
    assert profile.ray_start_timeout_s is None and profile.ray_start_timeout(144) == 651
    assert attrs.evolve(profile, ray_start_timeout_s=900).ray_start_timeout(144) == 900
