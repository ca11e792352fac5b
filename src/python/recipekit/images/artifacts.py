"""Everything one stage ships, written to one directory, with a manifest of digests and sizes.

``stage.pex`` (the launcher for both architectures), ``dependencies-layer.tar`` (the Pex's
wheels and bootstrap, unzipped), ``launcher-layer.tar`` (its sources and the rendered plan) and,
when the stage's base is locked, ``image/`` (an OCI layout tagged ``TAG``, ``TAG-amd64`` and
``TAG-arm64``). ``artifacts.json`` lists them.

The dependencies layer can be built apart (``write_dependencies_layer``, from a Pex of the same
requirements) and handed to ``build_artifacts``: then a source change rebuilds only the launcher
layer and the image's small files, and the big files (the Pex and that layer) are the caller's to
place (``./pants package`` adds them from its store without copying them).
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs

from recipekit.errors import Issue, RecipeError
from recipekit.images.layer import LAYER_MEDIA_TYPE, LayerFile, layer_tar
from recipekit.images.lock import BaseLock
from recipekit.images.oci import Descriptor, Layout
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
DEPS_RECORD_FILE = "dependencies-layer.json"
PEX_FILE = "stage.pex"
DEPS_LAYER_WHAT = "launcher dependencies (Pex .deps, .bootstrap)"
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


def _members(archive: zipfile.ZipFile, *, dependencies: bool) -> list[zipfile.ZipInfo]:
    """The Pex's files of one layer: its dependencies' (``.deps``, ``.bootstrap``) or the rest.

    Bytecode is left out. Pex zips a wheel from the chroot it installed it to in its cache,
    and a process that ran Python from that cache (a test, ``pants run``) may have written
    ``__pycache__`` into it: two Pexes of one lockfile then differ by when they were built
    (seen here: protobuf's and urllib3's chroots, after a run imported wandb). Python
    compiles what it imports at start-up, so the layers stay the same bytes for the same
    commit."""
    return [
        member
        for member in archive.infolist()
        if not member.is_dir()
        and member.filename.startswith(DEPENDENCY_DIRS) == dependencies
        and not _bytecode(member.filename)
    ]


def _bytecode(name: str) -> bool:
    return "/__pycache__/" in f"/{name}" or name.endswith((".pyc", ".pyo"))


def _executable(member: zipfile.ZipInfo) -> bool:
    return bool((member.external_attr >> 16) & 0o111)


def _pex_files(pex: bytes, *, dependencies: bool) -> Iterator[LayerFile]:
    with zipfile.ZipFile(io.BytesIO(pex)) as archive:
        for member in _members(archive, dependencies=dependencies):
            yield LayerFile(
                f"{LAUNCHER_PEX}/{member.filename}",
                archive.read(member),
                mode=0o755 if _executable(member) else 0o644,
            )


def dependencies_fingerprint(pex: bytes) -> str:
    """What the dependencies layer is built from, read from the zip's directory alone (names,
    CRC-32s, sizes, modes): two Pexes with the same fingerprint give the same dependencies layer,
    whatever their sources and however they are compressed."""
    digest = hashlib.sha256()
    for line in _dependency_lines(pex):
        digest.update(line.encode())
    return digest.hexdigest()


def dependency_parts(pex: bytes) -> dict[str, str]:
    """The fingerprint per part of the dependencies (each wheel under ``.deps``, the
    bootstrap): which of them two Pexes disagree on, when their fingerprints differ."""
    parts: dict[str, hashlib._Hash] = {}
    for line in _dependency_lines(pex):
        name = "/".join(line.split("\0", 1)[0].split("/")[:2])
        parts.setdefault(name, hashlib.sha256()).update(line.encode())
    return {name: digest.hexdigest()[:16] for name, digest in sorted(parts.items())}


def _dependency_lines(pex: bytes) -> Iterator[str]:
    with zipfile.ZipFile(io.BytesIO(pex)) as archive:
        for member in sorted(_members(archive, dependencies=True), key=lambda m: m.filename):
            mode = "x" if _executable(member) else "-"
            yield f"{member.filename}\0{member.CRC:08x}\0{member.file_size}\0{mode}\n"


def dependencies_layer(pex: bytes, *, mtime: int) -> bytes:
    """The Pex's wheels and bootstrap, unzipped: changes only with the lockfile."""
    return layer_tar(_pex_files(pex, dependencies=True), mtime=mtime)


def launcher_layer(pex: bytes, rendered: Mapping[str, bytes], *, mtime: int) -> bytes:
    """The Pex's sources and PEX-INFO, and the rendered plan: what a recipe change alters."""
    files = list(_pex_files(pex, dependencies=False))
    files += [LayerFile(f"{PLAN_DIR}/{name}", data) for name, data in sorted(rendered.items())]
    return layer_tar(files, mtime=mtime)


@attrs.frozen(kw_only=True)
class DependenciesLayer:
    """A dependencies layer built apart (``write_dependencies_layer``): its tar's digest and size,
    and the ``dependencies_fingerprint`` of the Pex it was built from."""

    sha256: str
    size: int
    fingerprint: str
    # dependency_parts of that Pex: what a mismatch names.
    parts: dict[str, str] = attrs.field(factory=dict, eq=False)

    @property
    def blob(self) -> Descriptor:
        return Descriptor(
            media_type=LAYER_MEDIA_TYPE, digest=f"sha256:{self.sha256}", size=self.size
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "fingerprint": self.fingerprint,
            "sha256": self.sha256,
            "size": self.size,
            "parts": self.parts,
        }

    def described_at(self, path: str) -> dict[str, Any]:
        """Its manifest entry at ``path`` in OUT (as ``_described`` gives), without its bytes."""
        return {"path": path, "sha256": self.sha256, "size": self.size}

    @classmethod
    def read(cls, path: Path) -> DependenciesLayer:
        data = json.loads(path.read_text())
        return cls(
            sha256=data["sha256"],
            size=int(data["size"]),
            fingerprint=data["fingerprint"],
            parts=dict(data.get("parts", {})),
        )


def write_dependencies_layer(out: Path, *, pex: bytes, mtime: int) -> DependenciesLayer:
    """Write ``out/dependencies-layer.tar`` and its record ``out/dependencies-layer.json``.

    ``pex`` may hold only the requirements (no sources): the layer is the same as the full Pex's
    when their ``dependencies_fingerprint`` is."""
    out.mkdir(parents=True, exist_ok=True)
    data = dependencies_layer(pex, mtime=mtime)
    (out / DEPS_LAYER_FILE).write_bytes(data)
    record = DependenciesLayer(
        sha256=hashlib.sha256(data).hexdigest(),
        size=len(data),
        fingerprint=dependencies_fingerprint(pex),
        parts=dependency_parts(pex),
    )
    record_text = json.dumps(record.as_json(), indent=2, sort_keys=True) + "\n"
    (out / DEPS_RECORD_FILE).write_text(record_text)
    return record


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
    return _described(str(path.relative_to(out)), path.read_bytes())


def _described(path: str, data: bytes) -> dict[str, Any]:
    """A manifest entry: the file's path in OUT, its sha256 and size."""
    return {"path": path, "sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}


def build_artifacts(
    out: Path,
    *,
    pex: bytes,
    rendered: Mapping[str, bytes],
    info: BuildInfo,
    lock: BaseLock | None,
    base_blobs: Layout | None = None,
    dependencies: DependenciesLayer | None = None,
    show_progress: bool = False,
) -> dict[str, Any]:
    """Write the stage's artifacts into ``out``; returns (and writes) their manifest.

    With ``dependencies`` (a layer built apart from a Pex of the same requirements), ``out`` gets
    neither ``stage.pex`` nor the dependencies layer (tar and blob): the manifest lists them, and
    the caller places them. ``show_progress``: which of the parts (launcher layer, dependencies
    layer, image, manifest) is done of all (stderr)."""
    from recipekit.progress import progress

    parts = 2 + (dependencies is None) + (lock is not None)
    what = f"artifacts {info.stage}"
    with progress(what, total=parts, silent=not show_progress) as bar:

        def done(part: str) -> None:
            bar.advance()
            bar.note(part)

        return _build_artifacts(
            out,
            pex=pex,
            rendered=rendered,
            info=info,
            lock=lock,
            base_blobs=base_blobs,
            dependencies=dependencies,
            done=done,
        )


def _build_artifacts(
    out: Path,
    *,
    pex: bytes,
    rendered: Mapping[str, bytes],
    info: BuildInfo,
    lock: BaseLock | None,
    base_blobs: Layout | None,
    dependencies: DependenciesLayer | None,
    done: Callable[[str], None],
) -> dict[str, Any]:
    if out.exists() and any(out.iterdir()):
        # Old blobs would sit in the layout and in the manifest beside the new ones.
        raise RecipeError([Issue(str(out), "is not empty", hint="give a new or empty directory")])
    out.mkdir(parents=True, exist_ok=True)
    launcher = launcher_layer(pex, rendered, mtime=info.epoch)
    (out / LAYER_FILE).write_bytes(launcher)
    done("launcher layer")
    if dependencies is None:
        (out / PEX_FILE).write_bytes(pex)
        (out / PEX_FILE).chmod(0o755)
        deps_data = dependencies_layer(pex, mtime=info.epoch)
        (out / DEPS_LAYER_FILE).write_bytes(deps_data)
        deps_layer = AppendedLayer(DEPS_LAYER_WHAT, data=deps_data)
        big = [_described(PEX_FILE, pex), _described(DEPS_LAYER_FILE, deps_data)]
        done("dependencies layer")
    else:
        if dependencies.fingerprint != dependencies_fingerprint(pex):
            ours = dependency_parts(pex)
            differ = sorted(
                name
                for name in {*ours, *dependencies.parts}
                if ours.get(name) != dependencies.parts.get(name)
            )
            shown = ", ".join(differ[:6]) + (f" and {len(differ) - 6} more" if differ[6:] else "")
            raise RecipeError(
                [
                    Issue(
                        DEPS_LAYER_FILE,
                        "was built from other requirements than this Pex's"
                        + (f" (they differ in {shown})" if differ else ""),
                        hint="rebuild it from this Pex (dependencies-layer)",
                    )
                ]
            )
        deps_layer = AppendedLayer(DEPS_LAYER_WHAT, blob=dependencies.blob)
        big = [_described(PEX_FILE, pex), dependencies.described_at(DEPS_LAYER_FILE)]
    manifest: dict[str, Any] = {
        "stage": info.stage,
        "plan_hash": info.plan_hash,
        "git_commit": info.git_commit,
        "files": [*big, _described(LAYER_FILE, launcher)],
    }
    if lock is None:
        manifest["image"] = None
        manifest["image_note"] = "the stage's base image is not locked: no image was built"
    else:
        layout = Layout.create(out / IMAGE_DIR)
        # The dependencies layer's blob, when the caller places it, is not missing from the image.
        placed_apart = {dependencies.blob.digest} if dependencies is not None else set()
        index = build_stage_image(
            layout,
            lock,
            [deps_layer, AppendedLayer("stage launcher and rendered plan", data=launcher)],
            image_settings(info),
            IMAGE_TAG,
            base_blobs=base_blobs,
        )
        done("image")
        missing = set(missing_blobs(layout, IMAGE_TAG)) - placed_apart
        manifest["image"] = {
            "layout": IMAGE_DIR,
            "tag": IMAGE_TAG,
            "index_digest": index.digest,
            "base": f"{lock.reference}@{lock.index.digest}",
            "base_blobs": "missing" if missing else "included",
        }
        image_files = {path: _entry(out, path) for path in layout.root.rglob("*") if path.is_file()}
        if dependencies is not None:
            blob = layout.blob_path(dependencies.blob.digest)
            image_files[blob] = dependencies.described_at(str(blob.relative_to(out)))
        manifest["files"] += [image_files[path] for path in sorted(image_files)]
    (out / MANIFEST_FILE).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    done("manifest")
    return manifest
