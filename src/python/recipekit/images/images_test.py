"""Layers, layouts and stage images are deterministic and well formed (no tools, no network)."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import tarfile
import zipfile
from pathlib import Path
from typing import Any

import pytest

from recipekit.errors import RecipeError
from recipekit.images.artifacts import (
    BuildInfo,
    build_artifacts,
    dependencies_layer,
    launcher_layer,
    write_dependencies_layer,
)
from recipekit.images.layer import LAYER_MEDIA_TYPE, LayerFile, layer_tar, sha256_digest
from recipekit.images.lock import BaseLock, LockedPlatform
from recipekit.images.oci import (
    CONFIG_MEDIA_TYPE,
    INDEX_MEDIA_TYPE,
    MANIFEST_MEDIA_TYPE,
    Descriptor,
    Layout,
    Platform,
)
from recipekit.images.registry import Reference, is_loopback, pinned_image_issue
from recipekit.progress import human_bytes


def _pex(recipe: bytes = b"STAGE = 1\n") -> bytes:
    """A zipapp shaped like a Pex: third-party code under .deps/, first-party at the root."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(".bootstrap/pex/__init__.py", b"")
        archive.writestr(".deps/attrs-26.1.0-py3-none-any.whl/attrs/__init__.py", b"A = 1\n")
        archive.writestr("__main__.py", b"print('hi')\n")
        archive.writestr("recipes/stage.py", recipe)
    return buffer.getvalue()


def _base_lock(layout: Layout) -> BaseLock:
    """A two-platform base with one (real) layer each, written into ``layout``."""
    platforms = []
    for name in ("linux/amd64", "linux/arm64"):
        layer = layer_tar([LayerFile(f"/etc/{name.split('/')[1]}", b"base\n")], mtime=0)
        blob = layout.write_blob(layer, LAYER_MEDIA_TYPE)
        platform = Platform.parse(name)
        config_json = {
            **platform.as_json(),
            "config": {"Env": ["PATH=/usr/bin:/bin"], "Cmd": ["/bin/bash"]},
            "rootfs": {"type": "layers", "diff_ids": [blob.digest]},
        }
        config = layout.write_json(config_json, CONFIG_MEDIA_TYPE)
        platforms.append(
            LockedPlatform(
                platform=platform,
                manifest=Descriptor(media_type=MANIFEST_MEDIA_TYPE, digest=config.digest, size=1),
                config=config,
                layers=(blob,),
                diff_ids=(blob.digest,),
                config_json=config_json,
            )
        )
    index = Descriptor(media_type=INDEX_MEDIA_TYPE, digest=sha256_digest(b"index"), size=5)
    return BaseLock(
        name="test", reference="127.0.0.1:5000/base:1", index=index, platforms=tuple(platforms)
    )


def test_a_layer_is_byte_identical_whatever_the_order_and_has_root_owned_sorted_entries() -> None:
    files = [LayerFile("/opt/a/x.pex", b"x", mode=0o755), LayerFile("/opt/b.json", b"{}")]
    first = layer_tar(files, mtime=1700000000)
    assert first == layer_tar(list(reversed(files)), mtime=1700000000)
    with tarfile.open(fileobj=io.BytesIO(first)) as tar:
        members = tar.getmembers()
    assert [m.name for m in members] == ["opt", "opt/a", "opt/a/x.pex", "opt/b.json"]
    assert {(m.uid, m.gid, m.uname, m.gname, m.mtime) for m in members} == {
        (0, 0, "", "", 1700000000)
    }
    assert members[2].mode == 0o755 and members[0].isdir()


def test_two_builds_give_identical_artifacts_and_index(tmp_path: Path) -> None:
    base = Layout.create(tmp_path / "base")
    lock = _base_lock(base)
    info = BuildInfo(
        stage="s", plan_hash="abc", git_commit="0" * 40, lockfile_sha256="f" * 64, epoch=0
    )
    # One Pex for both builds: zipfile stamps each entry with the current time.
    pex = _pex()
    manifests = [
        build_artifacts(
            tmp_path / f"out{n}",
            pex=pex,
            rendered={"plan.json": b"{}"},
            info=info,
            lock=lock,
            base_blobs=base,
        )
        for n in (1, 2)
    ]
    assert manifests[0] == manifests[1]
    assert manifests[0]["image"]["base_blobs"] == "included"
    for name in ("dependencies-layer.tar", "launcher-layer.tar", "image/index.json"):
        assert (tmp_path / "out1" / name).read_bytes() == (tmp_path / "out2" / name).read_bytes()


def _rewritten(pex: bytes, changes: dict[str, bytes], compress_type: int) -> bytes:
    """The same Pex with some files changed, its entries compressed with ``compress_type``."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(pex)) as source, zipfile.ZipFile(buffer, "w") as archive:
        for member in source.infolist():
            data = changes.get(member.filename) or source.read(member)
            archive.writestr(member, data, compress_type=compress_type)
    return buffer.getvalue()


def test_a_dependencies_layer_built_apart_gives_the_same_manifest_and_index(
    tmp_path: Path,
) -> None:
    """What `./pants package` does: the dependencies layer from a Pex of the requirements only
    (here: another recipe, entries deflated), then the artifacts referencing it."""
    base = Layout.create(tmp_path / "base")
    lock = _base_lock(base)
    info = BuildInfo(stage="s", plan_hash="abc", git_commit="0", lockfile_sha256="f", epoch=0)
    pex = _pex()
    whole = build_artifacts(
        tmp_path / "whole", pex=pex, rendered={"plan.json": b"{}"}, info=info, lock=lock
    )
    record = write_dependencies_layer(
        tmp_path / "deps",
        pex=_rewritten(pex, {"recipes/stage.py": b"STAGE = 2\n"}, zipfile.ZIP_DEFLATED),
        mtime=info.epoch,
    )
    apart = build_artifacts(
        tmp_path / "apart",
        pex=pex,
        rendered={"plan.json": b"{}"},
        info=info,
        lock=lock,
        dependencies=record,
    )
    assert apart == whole
    deps = (tmp_path / "deps" / "dependencies-layer.tar").read_bytes()
    assert deps == (tmp_path / "whole" / "dependencies-layer.tar").read_bytes()
    # The big files are the caller's to place: the Pex and the dependencies layer's tar and blob.
    written = {str(p.relative_to(tmp_path / "apart")) for p in (tmp_path / "apart").rglob("*")}
    assert "stage.pex" not in written and "dependencies-layer.tar" not in written
    assert f"image/blobs/sha256/{record.sha256}" not in written
    attrs_init = ".deps/attrs-26.1.0-py3-none-any.whl/attrs/__init__.py"
    with pytest.raises(RecipeError, match=r"other requirements.*differ in \.deps/attrs-26"):
        other = _rewritten(pex, {attrs_init: b"A = 2\n"}, zipfile.ZIP_STORED)
        build_artifacts(
            tmp_path / "other", pex=other, rendered={}, info=info, lock=lock, dependencies=record
        )
    # Bytecode a run wrote into Pex's cache, which the next Pex build zipped: not part of it.
    compiled = io.BytesIO()
    with zipfile.ZipFile(compiled, "w") as archive:
        with zipfile.ZipFile(io.BytesIO(pex)) as source:
            for member in source.infolist():
                archive.writestr(member, source.read(member))
        pycache = ".deps/attrs-26.1.0-py3-none-any.whl/attrs/__pycache__/__init__.cpython-312.pyc"
        archive.writestr(pycache, b"compiled")
    with_bytecode = build_artifacts(
        tmp_path / "bytecode",
        pex=compiled.getvalue(),
        rendered={"plan.json": b"{}"},
        info=info,
        lock=lock,
        dependencies=record,
    )
    # The same layers and image; only the Pex file itself (stage.pex) holds the bytecode.
    def shipped(manifest: dict[str, Any]) -> dict[str, Any]:
        files = [f for f in manifest["files"] if f["path"] != "stage.pex"]
        return {**manifest, "files": files}

    assert shipped(with_bytecode) == shipped(whole)


def test_the_stage_image_appends_one_layer_per_platform_with_entrypoint_and_labels(
    tmp_path: Path,
) -> None:
    base = Layout.create(tmp_path / "base")
    lock = _base_lock(base)
    info = BuildInfo(stage="s", plan_hash="abc", git_commit="c0ffee", lockfile_sha256="f", epoch=0)
    manifest = build_artifacts(
        tmp_path / "out", pex=_pex(), rendered={}, info=info, lock=lock, base_blobs=None
    )
    assert manifest["image"]["base_blobs"] == "missing"
    layout = Layout(tmp_path / "out" / "image")
    index = layout.read_json(layout.resolve("stage").digest)
    assert [m["platform"] for m in index["manifests"]] == [
        {"architecture": "amd64", "os": "linux"},
        {"architecture": "arm64", "os": "linux", "variant": "v8"},
    ]
    arm = layout.read_json(layout.resolve("stage-arm64").digest)
    assert arm["layers"][0] == lock.platforms[1].layers[0].as_json()
    for position, name in ((1, "dependencies-layer.tar"), (2, "launcher-layer.tar")):
        layer = (tmp_path / "out" / name).read_bytes()
        assert arm["layers"][position]["digest"] == "sha256:" + hashlib.sha256(layer).hexdigest()
    config = json.loads(layout.blob_path(arm["config"]["digest"]).read_bytes())
    assert config["config"]["Entrypoint"] == ["python3", "/opt/recipekit/launcher"]
    assert "Cmd" not in config["config"]
    assert config["config"]["Labels"]["org.opencontainers.image.revision"] == "c0ffee"
    assert config["rootfs"]["diff_ids"][-2:] == [layer["digest"] for layer in arm["layers"][1:]]
    assert config["architecture"] == "arm64"


def test_a_recipe_only_change_alters_only_the_small_launcher_layer() -> None:
    before = [
        dependencies_layer(_pex(b"STAGE = 1\n"), mtime=0),
        launcher_layer(_pex(b"STAGE = 1\n"), {"plan.json": b"{}"}, mtime=0),
    ]
    after = [
        dependencies_layer(_pex(b"STAGE = 2\n"), mtime=0),
        launcher_layer(_pex(b"STAGE = 2\n"), {"plan.json": b"{}"}, mtime=0),
    ]
    assert before[0] == after[0]
    assert before[1] != after[1]
    with tarfile.open(fileobj=io.BytesIO(after[1])) as tar:
        names = tar.getnames()
    assert "opt/recipekit/launcher/recipes/stage.py" in names
    assert "opt/recipekit/plan/plan.json" in names
    assert not [name for name in names if "/.deps/" in name]


def test_references_and_loopback() -> None:
    ref = Reference.parse("nvcr.io/nvidia/nemo-rl:v0.4.0")
    assert (ref.repository, ref.tag, ref.host) == ("nvcr.io/nvidia/nemo-rl", "v0.4.0", "nvcr.io")
    assert Reference.parse("127.0.0.1:5000/base@sha256:ab").digest == "sha256:ab"
    assert Reference.parse("127.0.0.1:5000/base").tag is None
    assert is_loopback("127.0.0.1:5000") and is_loopback("localhost:80")
    assert not is_loopback("nvcr.io") and not is_loopback("10.0.0.1:5000")


def test_an_image_given_by_tag_alone_is_refused() -> None:
    digest = "sha256:" + "ab" * 32
    assert pinned_image_issue(f"nvcr.io/nvidia/nemo-rl@{digest}") is None
    assert pinned_image_issue(f"docker://127.0.0.1:5000/x:tag@{digest}") is None
    issue = pinned_image_issue("nvcr.io/nvidia/nemo-rl:v0.4.0", "profile.container.image")
    assert issue is not None and issue.path == "profile.container.image"
    assert "digest" in issue.render()


def test_artifacts_refuse_a_directory_that_holds_an_older_build(tmp_path: Path) -> None:
    info = BuildInfo(stage="s", plan_hash="abc", git_commit="c", lockfile_sha256="f", epoch=0)
    build_artifacts(tmp_path / "out", pex=_pex(), rendered={}, info=info, lock=None)
    with pytest.raises(RecipeError, match="is not empty"):
        build_artifacts(tmp_path / "out", pex=_pex(), rendered={}, info=info, lock=None)


def test_a_copy_names_each_blob_it_takes_up_so_publish_can_count_its_bytes(
    tmp_path: Path,
) -> None:
    _require("skopeo")
    from recipekit.images.registry import copy_all
    from recipekit.images.ship import image_blobs

    base = Layout.create(tmp_path / "base")
    lock = _base_lock(base)
    info = BuildInfo(stage="s", plan_hash="abc", git_commit="c0ffee", lockfile_sha256="f", epoch=0)
    build_artifacts(
        tmp_path / "out", pex=_pex(), rendered={}, info=info, lock=lock, base_blobs=base
    )
    layout = Layout(tmp_path / "out" / "image")
    sizes = image_blobs(layout, "stage")
    # Per platform a config and its base layer; the dependencies and launcher layers shared.
    assert len(sizes) == 6
    named: list[str] = []
    copy_all(f"oci:{layout.root}:stage", f"dir:{tmp_path / 'copy'}", flags=[], on_blob=named.append)
    # Every blob is named (the layers both platforms share, once each time skopeo takes them up).
    assert set(named) == set(sizes)


def test_artifacts_and_export_sqsh_say_how_far_they_are(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _require("umoci", "mksquashfs")
    from recipekit.images.ship import export_sqsh

    base = Layout.create(tmp_path / "base")
    lock = _base_lock(base)
    info = BuildInfo(stage="s", plan_hash="abc", git_commit="c0ffee", lockfile_sha256="f", epoch=0)
    build_artifacts(
        tmp_path / "out", pex=_pex(), rendered={}, info=info, lock=lock, base_blobs=base
    )
    build_artifacts(
        tmp_path / "again", pex=_pex(), rendered={}, info=info, lock=lock, show_progress=True
    )
    parts = capsys.readouterr().err
    assert "artifacts s: done: 4 of 4 (100%)" in parts, parts  # launcher, deps, image, manifest
    out = tmp_path / "stage.sqsh"
    layout = Layout(tmp_path / "out" / "image")
    export_sqsh(layout, "stage", "amd64", out, None, tls_verify=True, show_progress=True)
    assert out.stat().st_size > 0
    # stderr is no terminal here: timestamped lines, each phase's bytes and rate at its end.
    err = capsys.readouterr().err
    assert "export-sqsh: unpacking amd64: done: " in err and "B/s" in err, err
    written = f"export-sqsh: writing stage.sqsh (zstd): done: {human_bytes(out.stat().st_size)}"
    assert written in err, err


def _require(*programs: str) -> None:
    """Fail, not skip, without the OCI tools: tools/install-system-deps installs them."""
    missing = [program for program in programs if shutil.which(program) is None]
    if missing:
        pytest.fail(f"needs {', '.join(missing)}: run tools/install-system-deps")
