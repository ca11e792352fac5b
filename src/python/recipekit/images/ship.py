"""Moving a stage image: fill in the base's blobs, publish to a registry, export a ``.sqsh``."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

from recipekit.errors import Issue, RecipeError
from recipekit.images.layer import sha256_digest
from recipekit.images.lock import BaseLock
from recipekit.images.oci import Layout, Platform, platform_tag
from recipekit.images.registry import Reference, copy_all, tls_flags
from recipekit.images.stage_image import missing_blobs


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


def publish(
    layout: Layout, tag: str, destination: str, lock: BaseLock | None, *, tls_verify: bool
) -> str:
    """Push the two-platform image; returns the index digest the registry now serves."""
    fetch_base_blobs(layout, tag, lock, tls_verify=tls_verify)
    target = Reference.parse(destination)
    with tempfile.TemporaryDirectory(prefix="recipekit-publish-") as scratch:
        digest_file = Path(scratch) / "digest"
        copy_all(
            f"oci:{layout.root}:{tag}",
            f"docker://{target}",
            flags=tls_flags(target.host, "--dest-tls-verify", tls_verify),
            digest_file=digest_file,
        )
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


def export_sqsh(
    layout: Layout,
    tag: str,
    architecture: str,
    out: Path,
    lock: BaseLock | None,
    *,
    tls_verify: bool,
    epoch: int = 0,
) -> Path:
    """One architecture of the image as a squashfs, with enroot's /etc/environment and /etc/rc."""
    for tool in ("umoci", "mksquashfs"):
        if shutil.which(tool) is None:
            raise RecipeError(
                [Issue(tool, "not found", hint="apt-get install umoci squashfs-tools")]
            )
    fetch_base_blobs(layout, tag, lock, tls_verify=tls_verify)
    arch_tag = platform_tag(tag, Platform.parse(f"linux/{architecture}"))
    manifest = layout.read_json(layout.resolve(arch_tag).digest)
    config = layout.read_json(manifest["config"]["digest"]).get("config", {})
    with tempfile.TemporaryDirectory(prefix="recipekit-sqsh-") as scratch:
        rootfs = Path(scratch) / "rootfs"
        subprocess.run(
            ["umoci", "raw", "unpack", "--image", f"{layout.root}:{arch_tag}", str(rootfs)],
            check=True,
            capture_output=True,
        )
        etc = rootfs / "etc"
        etc.mkdir(exist_ok=True)
        (etc / "environment").write_text("".join(f"{item}\n" for item in config.get("Env") or []))
        entrypoint = [*(config.get("Entrypoint") or []), *(config.get("Cmd") or [])]
        (etc / "rc").write_text(enroot_rc(entrypoint, config.get("WorkingDir") or "/"))
        out.unlink(missing_ok=True)
        result = subprocess.run(
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
            capture_output=True,
            check=False,
            env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"},
        )
        if result.returncode != 0:
            raise RecipeError([Issue("mksquashfs", result.stderr.decode(errors="replace"))])
    return out
