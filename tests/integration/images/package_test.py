"""The Pants plugin's ``stage_artifacts`` target building a stage image through ``./pants package``.

``stage_image_test.py`` drives the launcher's own ``artifacts`` command; this is the path a user
takes. A clone of the repository runs ``./pants package recipes/super3:dapo-b200`` twice: first
as the repository is (no base lock: the Pex and the launcher layers, no image), then with a base
lock at the path the target names (``containers/nemo-rl.lock.json``), locked in this test from a
Debian base on a loopback registry. The second build must write a two-platform OCI index whose
manifests stand on the locked base (its config's diff_ids and layers, by digest) plus the two
launcher layers the same build wrote, with the index digest ``artifacts.json`` records. Then the
CI's publish job (``tools/ci/assemble``, as .github/workflows/ci.yml calls it) ships that build
to the loopback registry, where the index lands under the same digest.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from recipekit.images.lock import read_lock
from recipekit.images.oci import Layout
from tests.integration.images.conftest import run_launcher
from tests.integration.support.checkout import clone_checkout, run_pants

TARGET = "recipes/super3:dapo-b200"
OUT = Path("dist/recipes.super3/dapo-b200")
LOCK = Path("containers/nemo-rl.lock.json")  # the target's base_lock (recipe_stage, base=...)


def _package(clone: Path) -> dict[str, object]:
    done = run_pants(clone, "package", TARGET)
    assert done.returncode == 0, done.stderr[-4000:]
    manifest = json.loads((clone / OUT / "artifacts.json").read_text())
    assert isinstance(manifest, dict)
    return manifest


def _sha256(path: Path) -> str:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


@dataclass(frozen=True)
class LockedBuild:
    clone: Path
    base_ref: str
    manifest: dict[str, Any]


@pytest.fixture(scope="module")
def locked_build(
    debian_base: Layout, registry: str, launcher: Path, tmp_path_factory: pytest.TempPathFactory
) -> LockedBuild:
    """A clone packaged as the repository is (no lock: no image), then with the base locked."""
    tmp_path = tmp_path_factory.mktemp("package")
    clone = clone_checkout(tmp_path / "clone")
    assert not (clone / LOCK).exists(), "the repository locks no NVIDIA base (README)"
    unlocked = _package(clone)
    assert unlocked["image"] is None and "lock" in str(unlocked["image_note"])
    assert (clone / OUT / "launcher-layer.tar").is_file()

    base_ref = f"{registry}/recipekit/package-base:bookworm"
    subprocess.run(
        [
            "skopeo", "copy", "--all", "--preserve-digests", "--quiet", "--dest-tls-verify=false",
            f"oci:{debian_base.root}:base", f"docker://{base_ref}",
        ],
        check=True,
    )
    lock_file = tmp_path / "nemo-rl.lock.json"
    run_launcher(
        "lock", base_ref, "--name", "nemo-rl", "--out", str(lock_file), "--no-tls-verify",
        pex=launcher, cwd=tmp_path,
    )
    shutil.copy(lock_file, clone / LOCK)
    return LockedBuild(clone, base_ref, _package(clone))


def test_pants_package_builds_the_image_on_the_locked_base(locked_build: LockedBuild) -> None:
    clone, base_ref, locked = locked_build.clone, locked_build.base_ref, locked_build.manifest
    image = locked["image"]
    assert isinstance(image, dict), locked
    layout = Layout(clone / OUT / "image")
    index = layout.resolve("stage")
    assert index.digest == image["index_digest"]
    # The launcher's layers are the files this build wrote, on top of the locked base's.
    launcher_layers = [
        _sha256(clone / OUT / name) for name in ("dependencies-layer.tar", "launcher-layer.tar")
    ]
    lock = read_lock(clone / LOCK)
    manifests = {
        f"{m['platform']['os']}/{m['platform']['architecture']}": m
        for m in layout.read_json(index.digest)["manifests"]
    }
    assert sorted(manifests) == ["linux/amd64", "linux/arm64"]
    for platform in lock.platforms:
        manifest = layout.read_json(manifests[str(platform.platform)]["digest"])
        layers = [layer["digest"] for layer in manifest["layers"]]
        assert layers == [*(d.digest for d in platform.layers), *launcher_layers]
        config = layout.read_json(manifest["config"]["digest"])
        assert config["rootfs"]["diff_ids"][: len(platform.diff_ids)] == list(platform.diff_ids)
    # The base's layers are referenced by digest, never copied: `package` talks to no registry.
    assert image["base"] == f"{base_ref}@{lock.index.digest}"
    assert image["base_blobs"] == "missing"
    assert not any(layout.has_blob(d.digest) for p in lock.platforms for d in p.layers)


def test_the_ci_publish_job_ships_that_build_under_the_same_digest(
    locked_build: LockedBuild, registry: str
) -> None:
    clone = locked_build.clone
    built = json.loads((clone / OUT / "artifacts.json").read_text())["image"]["index_digest"]
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(clone / ".home")}
    # Both architecture jobs' records: this machine built the one set of bytes both would.
    for arch in ("amd64", "arm64"):
        subprocess.run(
            ["python3", "tools/ci_artifacts.py", "collect", "dist", f"dist/ci/{arch}.json"],
            cwd=clone, env=env, check=True, capture_output=True,
        )
    destination = f"{registry}/recipekit-ci"
    done = subprocess.run(
        ["bash", "tools/ci/assemble", "dist/ci", "--registry", destination, "--no-tls-verify"],
        cwd=clone, env=env, capture_output=True, text=True, check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "amd64.json and arm64.json: the same bytes" in done.stdout
    assert f"recipes.super3/dapo-b200: {destination}/dapo-b200@{built}" in done.stdout
    pushed = subprocess.run(
        ["skopeo", "inspect", "--raw", "--tls-verify=false", f"docker://{destination}/dapo-b200@{built}"],
        capture_output=True, check=True,
    ).stdout
    assert "sha256:" + hashlib.sha256(pushed).hexdigest() == built
