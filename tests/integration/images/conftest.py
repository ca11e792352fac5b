"""Fixtures: the tools (a missing one fails the test), a Debian base, a loopback registry."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from recipekit.images.layer import LAYER_MEDIA_TYPE
from recipekit.images.oci import (
    CONFIG_MEDIA_TYPE,
    INDEX_MEDIA_TYPE,
    MANIFEST_MEDIA_TYPE,
    Layout,
    Platform,
)

# Debian package -> the program the tests run (tools/system-packages/images.list).
TOOLS = {
    "skopeo": "skopeo",
    "umoci": "umoci",
    "mmdebstrap": "mmdebstrap",
    "docker-registry": "docker-registry",
    "squashfs-tools": "mksquashfs",
    "qemu-user-static": "qemu-aarch64-static",
    "binfmt-support": "update-binfmts",
}
# python3 for the launcher; no shell, no package manager: the extract variant runs no scripts.
BASE_PACKAGES = "python3-minimal,libpython3.11-stdlib,ca-certificates,libgcc-s1"
ARCHITECTURES = ("amd64", "arm64")
LAUNCHER = Path("recipes.super3/dapo-b200.pex")


@pytest.fixture(scope="session")
def tools() -> None:
    missing = [f"{pkg} ({prog})" for pkg, prog in TOOLS.items() if shutil.which(prog) is None]
    if missing:
        pytest.fail(
            "missing system packages: "
            + ", ".join(missing)
            + " (install tools/system-packages/images.list with apt-get)"
        )
    # arm64 binaries run through binfmt_misc and qemu-aarch64-static (idempotent).
    subprocess.run(["update-binfmts", "--enable", "qemu-aarch64"], check=False, capture_output=True)
    if not Path("/proc/sys/fs/binfmt_misc/qemu-aarch64").is_file():
        pytest.fail("binfmt_misc has no qemu-aarch64 entry: update-binfmts --enable qemu-aarch64")


@pytest.fixture(scope="session")
def launcher() -> Path:
    if not LAUNCHER.is_file():
        pytest.fail(f"{LAUNCHER} is missing: run under ./pants test (runtime_package_dependencies)")
    return LAUNCHER.resolve()


def run_launcher(
    *arguments: str, pex: Path, cwd: Path, extra_env: dict[str, str] | None = None
) -> str:
    """The launcher Pex, as a user runs it on the submit host."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PEX_ROOT": str(cwd / ".pex-root"),
        "HOME": str(cwd),
        **(extra_env or {}),
    }
    result = subprocess.run(
        [sys.executable, str(pex), *arguments],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        check=False,
    )
    assert result.returncode == 0, f"{arguments}: {result.stdout}\n{result.stderr}"
    return result.stdout


def _debian_rootfs_tar(arch: str, out: Path) -> bytes:
    """A small Debian 12 root filesystem with CPython 3.11, as a tar (about 20 s per arch)."""
    subprocess.run(
        [
            "mmdebstrap",
            "--quiet",
            "--variant=extract",
            f"--architectures={arch}",
            f"--include={BASE_PACKAGES}",
            "--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr",
            "--dpkgopt=path-exclude=/usr/share/man/*",
            "--dpkgopt=path-exclude=/usr/share/doc/*",
            "--dpkgopt=path-exclude=/usr/share/locale/*",
            "bookworm",
            str(out),
        ],
        check=True,
        capture_output=True,
        env={**os.environ, "SOURCE_DATE_EPOCH": "0"},
    )
    return out.read_bytes()


@pytest.fixture(scope="session")
def debian_base(tools: None, tmp_path_factory: pytest.TempPathFactory) -> Layout:
    """The stand-in for the NVIDIA images: a two-arch OCI image (tag ``base``) of Debian + Python.

    Written with recipekit's own layout writer: one uncompressed layer per architecture.
    """
    scratch = tmp_path_factory.mktemp("debian-base")
    layout = Layout.create(scratch / "layout")
    manifests = []
    for arch in ARCHITECTURES:
        layer = layout.write_blob(
            _debian_rootfs_tar(arch, scratch / f"{arch}.tar"), LAYER_MEDIA_TYPE
        )
        platform = Platform.parse(f"linux/{arch}")
        config = layout.write_json(
            {
                **platform.as_json(),
                "created": "1970-01-01T00:00:00Z",
                "config": {
                    "Env": ["PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8"],
                    "Cmd": ["/usr/bin/python3"],
                },
                "rootfs": {"type": "layers", "diff_ids": [layer.digest]},
                "history": [{"created": "1970-01-01T00:00:00Z", "created_by": "mmdebstrap"}],
            },
            CONFIG_MEDIA_TYPE,
        )
        manifest = layout.write_json(
            {
                "schemaVersion": 2,
                "mediaType": MANIFEST_MEDIA_TYPE,
                "config": config.as_json(),
                "layers": [layer.as_json()],
            },
            MANIFEST_MEDIA_TYPE,
        )
        manifests.append({**manifest.as_json(), "platform": platform.as_json()})
    index = layout.write_json(
        {"schemaVersion": 2, "mediaType": INDEX_MEDIA_TYPE, "manifests": manifests},
        INDEX_MEDIA_TYPE,
    )
    layout.tag("base", index)
    return layout


def _free_loopback_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


_REQUEST = re.compile(r'http\.request\.method=([A-Z]+) .*?http\.request\.uri="?([^" ]+)')


@pytest.fixture(scope="session")
def registry_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("registry")


@pytest.fixture(scope="session")
def registry_requests(registry: str, registry_root: Path) -> Callable[[], list[tuple[str, str]]]:
    """(method, URI) of every request the registry has answered so far, oldest first."""

    def requests() -> list[tuple[str, str]]:
        text = (registry_root / "registry.log").read_text(errors="replace")
        lines = [line for line in text.splitlines() if 'msg="response completed"' in line]
        return [(m[1], m[2]) for line in lines if (m := _REQUEST.search(line))]

    return requests


@pytest.fixture(scope="session")
def registry(tools: None, registry_root: Path) -> Iterator[str]:
    """A Docker distribution registry on 127.0.0.1 (only); yields ``127.0.0.1:PORT``."""
    root = registry_root
    port = _free_loopback_port()
    config = root / "config.yml"
    config.write_text(
        json.dumps(
            {
                "version": 0.1,
                # info: a line per request, which registry_requests reads.
                "log": {"level": "info"},
                "storage": {"filesystem": {"rootdirectory": str(root / "data")}},
                "http": {"addr": f"127.0.0.1:{port}"},
            }
        )
    )
    log = (root / "registry.log").open("wb")
    process = subprocess.Popen(
        ["docker-registry", "serve", str(config)], stdout=log, stderr=subprocess.STDOUT
    )
    try:
        deadline = time.monotonic() + 15
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/", timeout=1):
                    break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(
                        f"the registry did not start: {(root / 'registry.log').read_text()}"
                    )
                time.sleep(0.1)
        yield f"127.0.0.1:{port}"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()
