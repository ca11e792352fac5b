"""Everything one stage ships, written to one directory, with a manifest of digests and sizes.

``stage.pex`` (the launcher for both architectures), ``dependencies-layer.tar`` (the Pex's
wheels and bootstrap, unzipped), ``launcher-layer.tar`` (its sources and the rendered plan) and,
when the stage's base is locked, ``image/`` (an OCI layout tagged ``TAG``, ``TAG-amd64`` and
``TAG-arm64``). ``artifacts.json`` lists them.
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs

from recipekit.errors import Issue, RecipeError
from recipekit.images.layer import LayerFile, layer_tar
from recipekit.images.lock import BaseLock
from recipekit.images.oci import Layout
from recipekit.images.paths import LAUNCHER_PEX, PLAN_DIR
from recipekit.images.stage_image import (
    LABEL_GIT_COMMIT,
    LABEL_LOCKFILE,
    LABEL_PLAN_HASH,
    LABEL_STAGE,
    AppendedLayer,
    ImageSettings,
    build_stage_image,
    missing_blobs,
)

LAYER_FILE = "launcher-layer.tar"
DEPS_LAYER_FILE = "dependencies-layer.tar"
# What of a Pex is third-party code and Pex's own runtime (changes with the lockfile only).
DEPENDENCY_DIRS = (".deps/", ".bootstrap/")
IMAGE_DIR = "image"
MANIFEST_FILE = "artifacts.json"
IMAGE_TAG = "stage"


@attrs.frozen(kw_only=True)
class BuildInfo:
    stage: str
    plan_hash: str
    git_commit: str
    lockfile_sha256: str
    epoch: int


def _pex_files(pex: bytes) -> Iterator[LayerFile]:
    with zipfile.ZipFile(io.BytesIO(pex)) as archive:
        for member in archive.infolist():
            if member.is_dir():
                continue
            executable = (member.external_attr >> 16) & 0o111
            yield LayerFile(
                f"{LAUNCHER_PEX}/{member.filename}",
                archive.read(member),
                mode=0o755 if executable else 0o644,
            )


def launcher_layers(
    pex: bytes, rendered: Mapping[str, bytes], *, mtime: int
) -> tuple[bytes, bytes]:
    """(dependencies layer, launcher layer): a recipe-only change alters only the second."""
    dependencies: list[LayerFile] = []
    launcher: list[LayerFile] = []
    for file in _pex_files(pex):
        inside = file.path[len(LAUNCHER_PEX) + 1 :]
        (dependencies if inside.startswith(DEPENDENCY_DIRS) else launcher).append(file)
    launcher += [LayerFile(f"{PLAN_DIR}/{name}", data) for name, data in sorted(rendered.items())]
    return layer_tar(dependencies, mtime=mtime), layer_tar(launcher, mtime=mtime)


def image_settings(info: BuildInfo) -> ImageSettings:
    return ImageSettings(
        entrypoint=("python3", LAUNCHER_PEX),
        # A venv-mode Pex unpacks itself once; /tmp is writable under enroot, pyxis and runc.
        env={"PEX_ROOT": "/tmp/.recipekit-pex-root", "RECIPEKIT_PLAN_DIR": PLAN_DIR},
        labels={
            LABEL_STAGE: info.stage,
            LABEL_PLAN_HASH: info.plan_hash,
            LABEL_GIT_COMMIT: info.git_commit,
            LABEL_LOCKFILE: info.lockfile_sha256,
        },
        created=info.epoch,
    )


def _entry(out: Path, path: Path) -> dict[str, Any]:
    data = path.read_bytes()
    return {
        "path": str(path.relative_to(out)),
        "sha256": hashlib.sha256(data).hexdigest(),
        "size": len(data),
    }


def build_artifacts(
    out: Path,
    *,
    pex: bytes,
    rendered: Mapping[str, bytes],
    info: BuildInfo,
    lock: BaseLock | None,
    base_blobs: Layout | None = None,
) -> dict[str, Any]:
    """Write the stage's artifacts into ``out``; returns (and writes) their manifest."""
    if out.exists() and any(out.iterdir()):
        # Old blobs would sit in the layout and in the manifest beside the new ones.
        raise RecipeError([Issue(str(out), "is not empty", hint="give a new or empty directory")])
    out.mkdir(parents=True, exist_ok=True)
    (out / "stage.pex").write_bytes(pex)
    (out / "stage.pex").chmod(0o755)
    dependencies, launcher = launcher_layers(pex, rendered, mtime=info.epoch)
    (out / DEPS_LAYER_FILE).write_bytes(dependencies)
    (out / LAYER_FILE).write_bytes(launcher)
    manifest: dict[str, Any] = {
        "stage": info.stage,
        "plan_hash": info.plan_hash,
        "git_commit": info.git_commit,
        "files": [_entry(out, out / name) for name in ("stage.pex", DEPS_LAYER_FILE, LAYER_FILE)],
    }
    if lock is None:
        manifest["image"] = None
        manifest["image_note"] = "the stage's base image is not locked: no image was built"
    else:
        layout = Layout.create(out / IMAGE_DIR)
        index = build_stage_image(
            layout,
            lock,
            [
                AppendedLayer("launcher dependencies (Pex .deps, .bootstrap)", dependencies),
                AppendedLayer("stage launcher and rendered plan", launcher),
            ],
            image_settings(info),
            IMAGE_TAG,
            base_blobs=base_blobs,
        )
        manifest["image"] = {
            "layout": IMAGE_DIR,
            "tag": IMAGE_TAG,
            "index_digest": index.digest,
            "base": f"{lock.reference}@{lock.index.digest}",
            "base_blobs": "missing" if missing_blobs(layout, IMAGE_TAG) else "included",
        }
        manifest["files"] += [
            _entry(out, path) for path in sorted((out / IMAGE_DIR).rglob("*")) if path.is_file()
        ]
    (out / MANIFEST_FILE).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return manifest
