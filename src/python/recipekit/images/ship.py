"""Moving a stage image: fill in the base's blobs, publish to a registry, export a ``.sqsh``."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from recipekit.errors import Issue, RecipeError
from recipekit.images.layer import sha256_digest
from recipekit.images.lock import BaseLock
from recipekit.images.oci import Layout, Platform, platform_tag
from recipekit.images.registry import Reference, copy_all, tls_flags
from recipekit.images.stage_image import missing_blobs

if TYPE_CHECKING:
    from recipekit.progress import Tracker


def fetch_base_blobs(layout: Layout, tag: str, lock: BaseLock | None, *, tls_verify: bool) -> int:
    """Copy the base's blobs the layout lacks from the base's registry (pinned by digest)."""
    missing = missing_blobs(layout, tag)
    if not missing:
        return 0
    if lock is None:
        raise RecipeError(
            [Issue(str(layout.root), f"{len(missing)} base blobs are missing", hint="pass --lock")]
        )
    host = Reference.parse(lock.reference).host
    with tempfile.TemporaryDirectory(prefix="recipekit-base-") as scratch:
        # skopeo's dir: transport keeps any manifest type as it is (a Docker manifest list, as
        # most NVIDIA images are, cannot enter an OCI layout without conversion) and stores each
        # blob as a file named by its digest.
        copy_all(
            f"docker://{Reference.parse(lock.reference).by_digest(lock.index.digest)}",
            f"dir:{scratch}",
            flags=tls_flags(host, "--src-tls-verify", tls_verify),
        )
        for digest in missing:
            blob = Path(scratch) / digest.partition(":")[2]
            if not blob.is_file() or sha256_digest(blob.read_bytes()) != digest:
                raise RecipeError([Issue(lock.reference, f"the registry did not serve {digest}")])
            shutil.copyfile(blob, layout.blob_path(digest))
    return len(missing)


def image_blobs(layout: Layout, tag: str) -> dict[str, int]:
    """Every blob (config and layers) of every platform under ``tag``, by digest: its size."""
    blobs: dict[str, int] = {}
    index = layout.read_json(layout.resolve(tag).digest)
    for entry in index["manifests"]:
        manifest = layout.read_json(entry["digest"])
        for blob in [manifest["config"], *manifest["layers"]]:
            blobs[blob["digest"]] = int(blob["size"])
    return blobs


def publish(
    layout: Layout,
    tag: str,
    destination: str,
    lock: BaseLock | None,
    *,
    tls_verify: bool,
    show_progress: bool = False,
) -> str:
    """Push the two-platform image; returns the index digest the registry now serves.
    ``show_progress``: the bytes of its blobs copied of all, and the rate (stderr), counted a
    blob at a time as skopeo takes them up (a blob the registry has counts as copied)."""
    from recipekit.progress import progress

    with progress(f"publish: base blobs for {tag}", silent=not show_progress):
        fetch_base_blobs(layout, tag, lock, tls_verify=tls_verify)
    target = Reference.parse(destination)
    sizes = image_blobs(layout, tag)
    with (
        tempfile.TemporaryDirectory(prefix="recipekit-publish-") as scratch,
        progress(
            f"publish -> {destination}",
            total=sum(sizes.values()),
            counts_bytes=True,
            silent=not show_progress,
        ) as bar,
    ):
        digest_file = Path(scratch) / "digest"
        current: list[str] = []  # the blob skopeo is copying
        counted: set[str] = set()  # a blob both platforms share is named twice

        def finished() -> None:
            if current and current[0] not in counted:
                counted.add(current[0])
                bar.advance(sizes.get(current[0], 0))

        def on_blob(digest: str) -> None:
            finished()  # skopeo names a blob when it starts it: the one before is done
            current[:] = [digest]

        copy_all(
            f"oci:{layout.root}:{tag}",
            f"docker://{target}",
            flags=tls_flags(target.host, "--dest-tls-verify", tls_verify),
            digest_file=digest_file,
            on_blob=on_blob,
        )
        finished()
        return digest_file.read_text().strip()


def enroot_rc(entrypoint: list[str], workdir: str) -> str:
    """``/etc/rc`` as enroot writes it on import: start in WorkingDir, run the entrypoint."""
    command = " ".join(shlex.quote(part) for part in entrypoint)
    return (
        f"mkdir -p {shlex.quote(workdir)} 2> /dev/null\n"
        f"cd {shlex.quote(workdir)} && unset OLDPWD || exit 1\n\n"
        "if [ -s /etc/rc.local ]; then\n    . /etc/rc.local\nfi\n\n"
        f'exec {command} "$@"\n'
    )


def _watched(
    command: list[str], grows: Path, bar: Tracker, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    """Run ``command`` while counting the bytes of ``grows`` (what it writes) as they come."""
    from recipekit.progress import tree_bytes

    def size() -> int:
        return tree_bytes(grows) if grows.exists() else 0

    seen, wait_s = 0, 1.0
    # stderr to a file: a pipe nobody reads while we wait could fill and stall the tool.
    with (
        tempfile.TemporaryFile() as errors,
        subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=errors, env=env) as child,
    ):
        while True:
            try:
                child.wait(timeout=wait_s)
                break
            except subprocess.TimeoutExpired:
                pass
            started = time.monotonic()
            now = size()
            # Walking a root filesystem of many files takes a while: never more than a
            # third of the time.
            wait_s = max(1.0, 2 * (time.monotonic() - started))
            bar.advance(max(now - seen, 0))
            seen = max(now, seen)
        errors.seek(0)
        stderr = errors.read()
    bar.advance(max(size() - seen, 0))
    return subprocess.CompletedProcess(command, child.returncode, b"", stderr)


def export_sqsh(
    layout: Layout,
    tag: str,
    architecture: str,
    out: Path,
    lock: BaseLock | None,
    *,
    tls_verify: bool,
    epoch: int = 0,
    show_progress: bool = False,
) -> Path:
    """One architecture of the image as a squashfs, with enroot's /etc/environment and /etc/rc.
    ``show_progress``: the bytes unpacked, then written to the squashfs, with the rate (stderr;
    a large image takes minutes)."""
    from recipekit.progress import progress

    for tool in ("umoci", "mksquashfs"):
        if shutil.which(tool) is None:
            raise RecipeError(
                [Issue(tool, "not found", hint="apt-get install umoci squashfs-tools")]
            )
    quiet = not show_progress
    with progress(f"export-sqsh: base blobs for {tag}", silent=quiet):
        fetch_base_blobs(layout, tag, lock, tls_verify=tls_verify)
    arch_tag = platform_tag(tag, Platform.parse(f"linux/{architecture}"))
    manifest = layout.read_json(layout.resolve(arch_tag).digest)
    config = layout.read_json(manifest["config"]["digest"]).get("config", {})
    with tempfile.TemporaryDirectory(prefix="recipekit-sqsh-") as scratch:
        rootfs = Path(scratch) / "rootfs"
        unpack = ["umoci", "raw", "unpack", "--image", f"{layout.root}:{arch_tag}", str(rootfs)]
        with progress(
            f"export-sqsh: unpacking {architecture}", counts_bytes=True, silent=quiet
        ) as bar:
            unpacked = _watched(unpack, rootfs, bar)
        if unpacked.returncode != 0:
            raise RecipeError([Issue("umoci unpack", unpacked.stderr.decode(errors="replace"))])
        etc = rootfs / "etc"
        etc.mkdir(exist_ok=True)
        (etc / "environment").write_text("".join(f"{item}\n" for item in config.get("Env") or []))
        entrypoint = [*(config.get("Entrypoint") or []), *(config.get("Cmd") or [])]
        (etc / "rc").write_text(enroot_rc(entrypoint, config.get("WorkingDir") or "/"))
        out.unlink(missing_ok=True)
        squash = progress(
            f"export-sqsh: writing {out.name} (zstd)", counts_bytes=True, silent=quiet
        )
        with squash as bar:
            result = _watched(
                [
                    "mksquashfs",
                    str(rootfs),
                    str(out),
                    "-noappend",
                    "-all-root",
                    "-no-progress",
                    "-comp",
                    "zstd",
                    "-Xcompression-level",
                    "3",
                    "-mkfs-time",
                    str(epoch),
                    "-all-time",
                    str(epoch),
                ],
                out,
                bar,
                env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"},
            )
        if result.returncode != 0:
            raise RecipeError([Issue("mksquashfs", result.stderr.decode(errors="replace"))])
    return out
