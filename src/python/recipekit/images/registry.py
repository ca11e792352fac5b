"""Talking to registries and layouts through skopeo (Debian's package; no container engine).

skopeo reads the user's registry credentials itself (``skopeo login``, ``REGISTRY_AUTH_FILE``),
so no secret passes through recipekit. TLS verification is only switched off for loopback
registries (the tests' local registry).
"""

from __future__ import annotations

import ipaddress
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import attrs

from recipekit.errors import Issue, RecipeError


@attrs.frozen
class Reference:
    """``HOST/REPO[:TAG][@sha256:...]``, as a registry names an image."""

    repository: str
    tag: str | None = None
    digest: str | None = None

    @classmethod
    def parse(cls, text: str) -> Reference:
        name, _, digest = text.partition("@")
        slash = name.rfind("/")
        colon = name.rfind(":")
        tag = None
        if colon > slash:
            name, tag = name[:colon], name[colon + 1 :]
        if "/" not in name or not name.split("/")[0]:
            raise RecipeError([Issue(text, "expected HOST/REPO[:TAG][@DIGEST]")])
        return cls(name, tag, digest or None)

    @property
    def host(self) -> str:
        return self.repository.split("/")[0]

    def __str__(self) -> str:
        text = self.repository
        if self.tag:
            text += f":{self.tag}"
        if self.digest:
            text += f"@{self.digest}"
        return text

    def by_digest(self, digest: str) -> str:
        return f"{self.repository}@{digest}"


def pinned_image_issue(image: str, where: str = "image") -> Issue | None:
    """An image a job would start from must be pinned by digest: a tag can move under a run.

    For ``submit`` (both ways of shipping: the published stage image, or the upstream image with
    the launcher mounted). Returns the problem, or None when ``image`` names a digest.
    """
    reference = image.removeprefix("docker://")
    digest = reference.partition("@")[2]
    if re.fullmatch(r"sha256:[0-9a-f]{64}", digest):
        return None
    return Issue(
        where,
        "names a tag, not a digest: the image could change between plan and run",
        value=image,
        hint="use HOST/REPO@sha256:... (the digest `publish` prints, or the base's lock file)",
    )


def is_loopback(host: str) -> bool:
    name = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name.strip("[]")).is_loopback
    except ValueError:
        return False


def tls_flags(host: str, option: str, tls_verify: bool) -> list[str]:
    if tls_verify:
        return []
    if not is_loopback(host):
        raise RecipeError(
            [Issue(host, "TLS verification can only be switched off for a loopback registry")]
        )
    return [f"{option}=false"]


def skopeo(*arguments: str) -> bytes:
    """Run skopeo; a failure is an error that shows skopeo's own message."""
    if shutil.which("skopeo") is None:
        raise RecipeError(
            [Issue("skopeo", "not found", hint="install it: apt-get install skopeo (Debian 12)")]
        )
    result = subprocess.run(["skopeo", *arguments], capture_output=True, check=False)
    if result.returncode != 0:
        message = result.stderr.decode(errors="replace").strip()
        raise RecipeError([Issue("skopeo " + " ".join(arguments[:2]), message)])
    return result.stdout


def raw_manifest(reference: str, *, tls_verify: bool = True) -> bytes:
    host = Reference.parse(reference).host
    return skopeo(
        "inspect", "--raw", *tls_flags(host, "--tls-verify", tls_verify), f"docker://{reference}"
    )


def raw_config(reference: str, *, tls_verify: bool = True) -> bytes:
    host = Reference.parse(reference).host
    return skopeo(
        "inspect",
        "--config",
        "--raw",
        *tls_flags(host, "--tls-verify", tls_verify),
        f"docker://{reference}",
    )


def copy_all(
    source: str,
    destination: str,
    *,
    flags: list[str],
    digest_file: Path | None = None,
    on_blob: Callable[[str], None] | None = None,
) -> None:
    """``skopeo copy --all``: every platform of an index, blobs the destination has are skipped.

    ``--preserve-digests``: without it skopeo gzips uncompressed layers on the way to a registry
    (and into an OCI layout), and every manifest and the index get new digests.

    ``on_blob``: called with each blob's digest as skopeo starts copying it (off a terminal,
    skopeo writes one "Copying blob sha256:..." line a blob), so a caller can count bytes.
    """
    extra = ["--digestfile", str(digest_file)] if digest_file else []
    arguments = ["copy", "--all", "--preserve-digests", *flags, *extra, source, destination]
    if on_blob is None:
        skopeo(arguments[0], "--quiet", *arguments[1:])
        return
    if shutil.which("skopeo") is None:
        skopeo()  # says how to install it
    # stderr joins stdout: one pipe read to its end cannot fill while the other waits.
    other: list[str] = []
    with subprocess.Popen(
        ["skopeo", *arguments], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    ) as child:
        assert child.stdout is not None
        for line in child.stdout:
            words = line.split()
            if len(words) >= 3 and words[0] == "Copying" and words[1] in ("blob", "config"):
                on_blob(words[2])
            else:
                other.append(line)
    if child.returncode != 0:
        raise RecipeError([Issue("skopeo copy", "".join(other).strip())])
