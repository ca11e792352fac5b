"""A stage image end to end, through the launcher's own commands (the production code path).

Push a Debian base to a loopback registry, ``lock`` it, build the stage's artifacts twice
(byte-identical), validate with skopeo and umoci, run the launcher inside both architectures
(arm64 under qemu), ``publish`` and pull the index back by digest, ``export-sqsh``.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import unquote

from recipekit.images.lock import read_lock
from recipekit.images.oci import Layout
from recipekit.images.stage_image import LABEL_GIT_COMMIT, LABEL_PLAN_HASH
from tests.integration.images.conftest import ARCHITECTURES, run_launcher


def _skopeo(*arguments: str) -> bytes:
    return subprocess.run(["skopeo", *arguments], check=True, capture_output=True).stdout


def _tree_digests(root: Path) -> dict[str, str]:
    return {
        str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def _run_in_rootfs(rootfs: Path, config: dict[str, object], *arguments: str) -> str:
    """Run the image's entrypoint in its unpacked root filesystem, as a runtime would."""
    runtime = config["config"]
    assert isinstance(runtime, dict)
    env = dict(item.split("=", 1) for item in runtime["Env"])
    (rootfs / "tmp").mkdir(mode=0o1777, exist_ok=True)
    result = subprocess.run(
        ["/usr/sbin/chroot", str(rootfs), *runtime["Entrypoint"], *arguments],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=240,
    )
    assert result.returncode == 0, f"{arguments}: {result.stdout}\n{result.stderr}"
    return result.stdout


def test_a_stage_image_on_a_locked_base_builds_runs_publishes_and_exports(
    debian_base: Layout,
    registry: str,
    registry_requests: Callable[[], list[tuple[str, str]]],
    launcher: Path,
    tmp_path: Path,
) -> None:
    timings: dict[str, float] = {}
    started = time.monotonic()

    def lap(name: str) -> None:
        nonlocal started
        timings[name] = round(time.monotonic() - started, 1)
        started = time.monotonic()

    # The base goes to the registry the way an NVIDIA image sits in nvcr.io.
    base_ref = f"{registry}/recipekit/debian-python:bookworm"
    _skopeo(
        "copy",
        "--all",
        "--preserve-digests",
        "--quiet",
        "--dest-tls-verify=false",
        f"oci:{debian_base.root}:base",
        f"docker://{base_ref}",
    )
    lap("push base")

    lock_file = tmp_path / "debian-python.lock.json"
    run_launcher(
        "lock",
        base_ref,
        "--name",
        "debian-python",
        "--out",
        str(lock_file),
        "--no-tls-verify",
        pex=launcher,
        cwd=tmp_path,
    )
    lock = read_lock(lock_file)
    pushed_index = debian_base.resolve("base").digest
    assert lock.index.digest == pushed_index
    assert [str(p.platform) for p in lock.platforms] == ["linux/amd64", "linux/arm64"]
    lap("lock")

    # Two clean builds, byte for byte. The submitting shell's secrets are set (as they are when a
    # user builds): none of them may reach the Pex, the layer or the image.
    secrets = {"WANDB_API_KEY": "wandb-secret-7f3a9c", "HF_TOKEN": "hf_secret_51d2e8"}
    outs = [tmp_path / "build1", tmp_path / "build2"]
    for out in outs:
        run_launcher(
            "artifacts",
            str(out),
            "--pex",
            str(launcher),
            "--lock",
            str(lock_file),
            "--git-commit",
            "0123456789abcdef0123456789abcdef01234567",
            "--lockfile-sha256",
            "f" * 64,
            pex=launcher,
            cwd=tmp_path,
            extra_env=secrets,
        )
    assert _tree_digests(outs[0]) == _tree_digests(outs[1])
    for path in outs[0].rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert not [s for s in secrets.values() if s.encode() in data], path
    manifest = json.loads((outs[0] / "artifacts.json").read_text())
    assert manifest["image"]["base_blobs"] == "missing"  # sparse: the base is fetched on demand
    index_digest = manifest["image"]["index_digest"]
    lap("build twice")

    # export-sqsh fetches the base's blobs from the registry by digest (the layout is complete
    # afterwards), then writes the arm64 image as a squashfs.
    layout = outs[0] / "image"
    sqsh = tmp_path / "stage-arm64.sqsh"
    run_launcher(
        "export-sqsh",
        str(layout),
        "--arch",
        "arm64",
        "--out",
        str(sqsh),
        "--lock",
        str(lock_file),
        "--no-tls-verify",
        pex=launcher,
        cwd=tmp_path,
    )
    assert sqsh.stat().st_size > 10_000_000
    again = tmp_path / "stage-arm64-again.sqsh"
    run_launcher(
        "export-sqsh", str(layout), "--arch", "arm64", "--out", str(again),
        pex=launcher, cwd=tmp_path,
    )  # fmt: skip
    assert again.read_bytes() == sqsh.read_bytes()
    listing = subprocess.run(
        ["unsquashfs", "-lc", str(sqsh)], check=True, capture_output=True, text=True
    ).stdout
    assert (
        "squashfs-root/etc/rc" in listing
        and "squashfs-root/opt/recipekit/launcher/__main__.py" in listing
    )

    def sqsh_file(name: str) -> str:
        return subprocess.run(
            ["unsquashfs", "-cat", str(sqsh), name], check=True, capture_output=True, text=True
        ).stdout

    # enroot's conventions: the image's Env as /etc/environment, its entrypoint run by /etc/rc.
    assert "PEX_ROOT=/tmp/.recipekit-pex-root" in sqsh_file("etc/environment").splitlines()
    assert 'exec python3 /opt/recipekit/launcher "$@"' in sqsh_file("etc/rc")
    lap("export-sqsh")

    # skopeo and umoci agree the layout is a valid two-platform image.
    raw_index = _skopeo("inspect", "--raw", f"oci:{layout}:stage")
    assert "sha256:" + hashlib.sha256(raw_index).hexdigest() == index_digest
    platforms = [m["platform"] for m in json.loads(raw_index)["manifests"]]
    assert [p["architecture"] for p in platforms] == list(ARCHITECTURES)
    arm = json.loads(_skopeo("--override-arch", "arm64", "inspect", f"oci:{layout}:stage"))
    assert arm["Architecture"] == "arm64"
    assert arm["Labels"][LABEL_GIT_COMMIT] == "0123456789abcdef0123456789abcdef01234567"
    assert len(arm["Labels"][LABEL_PLAN_HASH]) == 64
    assert (
        "stage-amd64"
        in subprocess.run(
            ["umoci", "ls", "--layout", str(layout)], check=True, capture_output=True, text=True
        ).stdout
    )
    lap("validate")

    for arch in ARCHITECTURES:
        rootfs = tmp_path / f"rootfs-{arch}"
        subprocess.run(
            ["umoci", "raw", "unpack", "--image", f"{layout}:stage-{arch}", str(rootfs)],
            check=True,
            capture_output=True,
        )
        stat = json.loads(
            subprocess.run(
                ["umoci", "stat", "--json", "--image", f"{layout}:stage-{arch}"],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
        )
        assert [entry["created_by"] for entry in stat["history"][-2:]] == [
            "recipekit: launcher dependencies (Pex .deps, .bootstrap)",
            "recipekit: stage launcher and rendered plan",
        ]
        manifest_digest = Layout(layout).resolve(f"stage-{arch}").digest
        config = Layout(layout).read_json(
            Layout(layout).read_json(manifest_digest)["config"]["digest"]
        )
        machine = subprocess.run(
            [
                "chroot",
                str(rootfs),
                "/usr/bin/python3",
                "-c",
                "import platform; print(platform.machine())",
            ],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        assert machine == {"amd64": "x86_64", "arm64": "aarch64"}[arch]
        assert "version 0.1.0" in _run_in_rootfs(rootfs, config, "--version")
        plan = json.loads(_run_in_rootfs(rootfs, config, "plan", "--format", "json"))
        assert plan["stage"] == "dapo-b200" and plan["hash"] == manifest["plan_hash"]
        lap(f"unpack and run {arch}")

    # Publish: the registry serves the same index digest we built.
    stage_ref = f"{registry}/recipekit/dapo-b200:test"
    requests_before = len(registry_requests())
    published = run_launcher(
        "publish",
        str(layout),
        "--registry",
        stage_ref,
        "--lock",
        str(lock_file),
        "--no-tls-verify",
        pex=launcher,
        cwd=tmp_path,
    )
    assert f"@{index_digest}" in published
    pulled = _skopeo("inspect", "--raw", "--tls-verify=false", f"docker://{stage_ref}")
    assert "sha256:" + hashlib.sha256(pulled).hexdigest() == index_digest
    pulled_by_digest = _skopeo(
        "inspect",
        "--raw",
        "--tls-verify=false",
        f"docker://{registry}/recipekit/dapo-b200@{index_digest}",
    )
    assert pulled_by_digest == raw_index
    # Only the new blobs went up: each base layer was mounted from the base's repository on the
    # same registry (POST ...?mount=DIGEST&from=recipekit/debian-python), none uploaded.
    publishing = registry_requests()[requests_before:]
    uploads = "/v2/recipekit/dapo-b200/blobs/uploads/"
    uploaded = {
        unquote(uri.partition("digest=")[2])
        for m, uri in publishing
        if m == "PUT" and uploads in uri
    }
    mounted = {
        unquote(uri.partition("mount=")[2].partition("&")[0])
        for m, uri in publishing
        if m == "POST" and uploads in uri and "from=recipekit%2Fdebian-python" in uri
    }
    base_layers = {layer.digest for platform in lock.platforms for layer in platform.layers}
    assert base_layers <= mounted and not base_layers & uploaded, (uploaded, mounted)
    assert uploaded  # the launcher layers, configs: what the stage adds
    lap("publish and pull back")
    print("timings (s):", timings, "pex", os.path.getsize(launcher))


def test_a_base_served_as_a_docker_manifest_list_locks_builds_and_publishes(
    debian_base: Layout, registry: str, launcher: Path, tmp_path: Path
) -> None:
    """Most NVIDIA images are Docker v2 schema 2 manifest lists, not OCI indexes."""
    base_ref = f"{registry}/recipekit/debian-python-v2s2:bookworm"
    _skopeo(
        "copy",
        "--all",
        "--format",
        "v2s2",
        "--quiet",
        "--dest-tls-verify=false",
        f"oci:{debian_base.root}:base",
        f"docker://{base_ref}",
    )
    lock_file = tmp_path / "v2s2.lock.json"
    run_launcher(
        "lock", base_ref, "--out", str(lock_file), "--no-tls-verify", pex=launcher, cwd=tmp_path
    )
    lock = read_lock(lock_file)
    assert lock.index.media_type == "application/vnd.docker.distribution.manifest.list.v2+json"
    run_launcher(
        "artifacts", "out", "--pex", str(launcher), "--lock", str(lock_file),
        pex=launcher, cwd=tmp_path,
    )  # fmt: skip
    manifest = json.loads((tmp_path / "out" / "artifacts.json").read_text())
    stage_ref = f"{registry}/recipekit/dapo-b200-v2s2:test"
    published = run_launcher(
        "publish", "out/image", "--registry", stage_ref, "--lock", str(lock_file),
        "--no-tls-verify", pex=launcher, cwd=tmp_path,
    )  # fmt: skip
    assert f"@{manifest['image']['index_digest']}" in published
    # The base's layers went in as they were: same digests, OCI media types.
    layout = Layout(tmp_path / "out" / "image")
    amd = layout.read_json(layout.resolve("stage-amd64").digest)
    assert amd["layers"][0]["digest"] == lock.platforms[0].layers[0].digest
    assert amd["layers"][0]["mediaType"].startswith("application/vnd.oci.image.layer.v1.tar")
    subprocess.run(
        ["umoci", "raw", "unpack", "--image", f"{layout.root}:stage-amd64", str(tmp_path / "fs")],
        check=True,
        capture_output=True,
    )
    assert (tmp_path / "fs" / "opt/recipekit/launcher/__main__.py").is_file()
