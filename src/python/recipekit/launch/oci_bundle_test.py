from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import pytest

from recipekit.errors import RecipeError
from recipekit.images.oci import Platform
from recipekit.launch.job_script import render_job_script
from recipekit.launch.oci_bundle import pull_bundle, runtime_config
from recipekit.launch.profile import (
    ClusterProfile,
    Mount,
    OciBundle,
    profile_from_json,
    profile_to_json,
)
from recipekit.launch.run_dir import RunDir
from recipekit.plan import make_plan
from recipes.clusters import PROFILES, SHARED
from recipes.super3.dapo import dapo_b200


def _baked() -> ClusterProfile:
    # A bundle has its mounts from its config.json: the artifact store's among them.
    store = PROFILES["b200"].artifact_store
    assert store is not None
    bundle = OciBundle(bundle="/shared/bundles/dapo-b200", mounts=(*SHARED, store.mount()))
    return attrs.evolve(PROFILES["b200"], container=bundle, shipping="baked")


def test_a_baked_profile_runs_every_step_in_the_bundle() -> None:
    profile = _baked()
    assert profile_from_json(profile_to_json(profile)) == profile
    plan = make_plan(dapo_b200)
    run = RunDir.for_plan(profile.runs_dir, "dapo-b200", plan.hash)
    script = render_job_script(plan, profile, run)
    assert "--container=/shared/bundles/dapo-b200 \\\n    python3 \\\n" in script
    assert "/opt/recipekit/launcher" in script and "launcher.pex" not in script


def test_the_bundle_keeps_the_nodes_network_and_binds_the_mounts() -> None:
    umoci: dict[str, Any] = {
        "linux": {"namespaces": [{"type": "pid"}, {"type": "network"}, {"type": "mount"}]},
        "mounts": [{"destination": "/proc", "type": "proc", "source": "proc"}],
    }
    config = runtime_config(umoci, [Mount("/lustre/runs", "/runs")])
    assert config["linux"]["namespaces"] == [{"type": "pid"}, {"type": "mount"}]
    assert config["mounts"][1] == {
        "destination": "/runs",
        "type": "bind",
        "source": "/lustre/runs",
        "options": ["rbind", "rw"],
    }
    assert umoci["linux"]["namespaces"][1] == {"type": "network"}  # not modified in place


def test_a_bundle_is_only_made_from_an_image_pinned_by_digest(tmp_path: Path) -> None:
    amd64 = Platform.parse("linux/amd64")
    with pytest.raises(RecipeError, match="names a tag, not a digest"):
        pull_bundle("registry.example/org/stage:latest", tmp_path / "bundle", platform=amd64)
    assert not (tmp_path / "bundle").exists()
