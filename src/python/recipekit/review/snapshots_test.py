"""The checked-in snapshots match what every recipe's stages compile to now."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

import recipes
from recipekit.review import snapshots
from recipekit.review.discover import StageRef, discover_stages, recipe_modules

# Under Pants this is the test sandbox (the recipes and snapshots the test depends on); run
# directly, it is the checkout.
ROOT = Path(recipes.__file__).resolve().parent.parent
UPDATE = "./pants run src/python/recipekit:cli -- snapshots --update"


def _checkout() -> Path | None:
    """The real checkout, when the test runs in a Pants sandbox (pants.toml names it)."""
    configured = os.environ.get("RECIPEKIT_CHECKOUT", "")
    if configured:
        path = Path(configured)
        if (path / "recipes").is_dir() and path.resolve() != ROOT:
            return path
    return None


def test_every_stage_matches_its_snapshot() -> None:
    mismatches = snapshots.check(ROOT)
    assert not mismatches, "\n" + snapshots.mismatch_text(mismatches)


def test_stages_are_found_in_every_recipe_folder() -> None:
    targets = [ref.target for ref in discover_stages(ROOT)]
    assert "recipes.super3.dapo:dapo_gb200" in targets
    assert "recipes.super3.dapo:dapo_b200" in targets
    assert len(targets) == len(set(targets))


def test_the_test_sees_every_recipe_module_of_the_checkout() -> None:
    # A recipe module Pants does not give this test would go unguarded: name it.
    checkout = _checkout()
    if checkout is None:
        return  # run in the checkout itself: discovery already sees everything
    here = {name for name, _ in recipe_modules(ROOT)}
    there = {name for name, _ in recipe_modules(checkout)}
    missing = sorted(there - here)
    assert not missing, (
        f"recipe modules not among this test's dependencies: {missing}; add their targets (and "
        "their folder's snapshots) to src/python/recipekit/review/BUILD"
    )


def test_a_changed_recipe_fails_naming_the_target_and_keys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from recipes.super3.dapo import dapo_b200

    folder = tmp_path / "recipes" / "team"
    shutil.copytree(ROOT / "recipes/super3/snapshots/dapo-b200", folder / "snapshots/dapo-b200")
    shorter = dapo_b200.with_values({"policy.max_total_sequence_length": 2048})
    ref = StageRef("recipes.team.rl", "dapo_b200", shorter, folder / "rl.py")
    monkeypatch.setattr(snapshots, "discover_stages", lambda root: [ref])

    [mismatch] = snapshots.check(tmp_path)
    keys = {c.key: c for c in mismatch.changes}
    assert mismatch.target == "recipes.team.rl:dapo_b200"
    assert keys["config.policy.max_total_sequence_length"].old == 1024
    assert keys["config.policy.max_total_sequence_length"].new == 2048
    # Derived keys follow, and the job script moves with the plan hash.
    assert "config.policy.generation.vllm_cfg.max_model_len" in keys
    assert "job.sbatch.--job-name" in keys
    text = snapshots.mismatch_text([mismatch])
    assert "recipes.team.rl:dapo_b200" in text
    assert "~ config.policy.max_total_sequence_length: 1024 -> 2048" in text

    snapshots.update(tmp_path)
    assert snapshots.check(tmp_path) == []


def test_missing_and_stale_snapshots_are_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from recipes.super3.dapo import dapo_b200

    folder = tmp_path / "recipes" / "team"
    (folder / "snapshots" / "gone").mkdir(parents=True)
    ref = StageRef("recipes.team.rl", "dapo_b200", dapo_b200, folder / "rl.py")
    monkeypatch.setattr(snapshots, "discover_stages", lambda root: [ref])

    problems = {(m.target, m.problem) for m in snapshots.check(tmp_path)}
    assert problems == {("recipes.team.rl:dapo_b200", "missing"), ("(no stage)", "stale")}
    snapshots.update(tmp_path)
    assert not (folder / "snapshots" / "gone").exists()
    assert (folder / "snapshots" / "BUILD").is_file()
    assert snapshots.check(tmp_path) == []
