"""Everything one stage ships, written to one directory, with a manifest of digests and sizes.

``stage.pex`` (the launcher for both architectures), ``launcher-layer.tar`` (the Pex and the
rendered plan) and, when the stage's base is locked, ``image/`` (an OCI layout tagged ``TAG``,
``TAG-amd64`` and ``TAG-arm64``). ``artifacts.json`` lists them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from recipekit.images.layer import LayerFile, layer_tar
from recipekit.images.lock import BaseLock
from recipekit.images.oci import Layout
from recipekit.images.stage_image import (
    LABEL_GIT_COMMIT,
    LABEL_LOCKFILE,
    LABEL_PLAN_HASH,
    LABEL_STAGE,
    LAUNCHER_PEX,
    PLAN_DIR,
    ImageSettings,
    build_stage_image,
    missing_blobs,
)

LAYER_FILE = "launcher-layer.tar"
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


def launcher_layer(pex: bytes, rendered: Mapping[str, bytes], *, mtime: int) -> bytes:
    files = [LayerFile(LAUNCHER_PEX, pex, mode=0o755)]
    files += [LayerFile(f"{PLAN_DIR}/{name}", data) for name, data in sorted(rendered.items())]
    return layer_tar(files, mtime=mtime)


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
    out.mkdir(parents=True, exist_ok=True)
    (out / "stage.pex").write_bytes(pex)
    (out / "stage.pex").chmod(0o755)
    layer = launcher_layer(pex, rendered, mtime=info.epoch)
    (out / LAYER_FILE).write_bytes(layer)
    manifest: dict[str, Any] = {
        "stage": info.stage,
        "plan_hash": info.plan_hash,
        "git_commit": info.git_commit,
        "files": [_entry(out, out / "stage.pex"), _entry(out, out / LAYER_FILE)],
    }
    if lock is None:
        manifest["image"] = None
        manifest["image_note"] = "the stage's base image is not locked: no image was built"
    else:
        layout = Layout.create(out / IMAGE_DIR)
        index = build_stage_image(
            layout, lock, layer, image_settings(info), IMAGE_TAG, base_blobs=base_blobs
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
