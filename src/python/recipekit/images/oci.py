"""An OCI image layout on disk (image-spec v1.1): blobs by digest, an ``index.json`` of tags.

Only what recipekit needs: write blobs, describe them, and tag an image index together with one
manifest per platform (``TAG-amd64``, ``TAG-arm64``), because ``umoci`` refuses a tag that names
a multi-platform index ("tag is ambiguous").
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import attrs

from recipekit.images.layer import sha256_digest

OCI_LAYOUT_VERSION = "1.0.0"
INDEX_MEDIA_TYPE = "application/vnd.oci.image.index.v1+json"
MANIFEST_MEDIA_TYPE = "application/vnd.oci.image.manifest.v1+json"
CONFIG_MEDIA_TYPE = "application/vnd.oci.image.config.v1+json"
REF_NAME = "org.opencontainers.image.ref.name"

# Docker's media types and their OCI equivalents (same bytes, so the same digests).
DOCKER_TO_OCI = {
    "application/vnd.docker.image.rootfs.diff.tar.gzip": (
        "application/vnd.oci.image.layer.v1.tar+gzip"
    ),
    "application/vnd.docker.image.rootfs.diff.tar": "application/vnd.oci.image.layer.v1.tar",
    "application/vnd.docker.container.image.v1+json": CONFIG_MEDIA_TYPE,
    "application/vnd.docker.distribution.manifest.v2+json": MANIFEST_MEDIA_TYPE,
    "application/vnd.docker.distribution.manifest.list.v2+json": INDEX_MEDIA_TYPE,
}


def oci_media_type(media_type: str) -> str:
    return DOCKER_TO_OCI.get(media_type, media_type)


@attrs.frozen(kw_only=True)
class Platform:
    os: str
    architecture: str
    variant: str | None = None

    @classmethod
    def parse(cls, text: str) -> Platform:
        """``linux/arm64`` or ``linux/arm64/v8``; arm64 always carries variant v8."""
        parts = text.split("/")
        if len(parts) not in (2, 3) or not all(parts):
            raise ValueError(f"{text!r}: expected OS/ARCH[/VARIANT], e.g. linux/arm64")
        variant = parts[2] if len(parts) == 3 else ("v8" if parts[1] == "arm64" else None)
        return cls(os=parts[0], architecture=parts[1], variant=variant)

    def __str__(self) -> str:
        return f"{self.os}/{self.architecture}"

    def as_json(self) -> dict[str, str]:
        out = {"architecture": self.architecture, "os": self.os}
        if self.variant:
            out["variant"] = self.variant
        return out


@attrs.frozen(kw_only=True)
class Descriptor:
    media_type: str
    digest: str
    size: int
    platform: Platform | None = None
    annotations: dict[str, str] | None = None

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "mediaType": self.media_type,
            "digest": self.digest,
            "size": self.size,
        }
        if self.platform is not None:
            out["platform"] = self.platform.as_json()
        if self.annotations:
            out["annotations"] = dict(sorted(self.annotations.items()))
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Descriptor:
        platform = data.get("platform")
        return cls(
            media_type=data["mediaType"],
            digest=data["digest"],
            size=int(data["size"]),
            platform=Platform(
                os=platform["os"],
                architecture=platform["architecture"],
                variant=platform.get("variant"),
            )
            if platform
            else None,
            annotations=data.get("annotations") or None,
        )


def canonical_json(value: Any) -> bytes:
    """The one serialisation recipekit writes: sorted keys, no spaces (digests depend on it)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


class Layout:
    """A directory holding an OCI image layout."""

    def __init__(self, root: Path) -> None:
        self.root = root

    @classmethod
    def create(cls, root: Path) -> Layout:
        (root / "blobs" / "sha256").mkdir(parents=True, exist_ok=True)
        (root / "oci-layout").write_bytes(
            canonical_json({"imageLayoutVersion": OCI_LAYOUT_VERSION})
        )
        return cls(root)

    def blob_path(self, digest: str) -> Path:
        algorithm, _, hex_digest = digest.partition(":")
        return self.root / "blobs" / algorithm / hex_digest

    def has_blob(self, digest: str) -> bool:
        return self.blob_path(digest).is_file()

    def write_blob(self, data: bytes, media_type: str) -> Descriptor:
        digest = sha256_digest(data)
        path = self.blob_path(digest)
        if not path.is_file():
            path.write_bytes(data)
        return Descriptor(media_type=media_type, digest=digest, size=len(data))

    def write_json(self, value: Any, media_type: str) -> Descriptor:
        return self.write_blob(canonical_json(value), media_type)

    def copy_blob_from(self, other: Layout, digest: str) -> None:
        if not self.has_blob(digest):
            shutil.copyfile(other.blob_path(digest), self.blob_path(digest))

    def read_json(self, digest: str) -> Any:
        return json.loads(self.blob_path(digest).read_bytes())

    def index(self) -> dict[str, Any]:
        path = self.root / "index.json"
        if not path.is_file():
            return {"schemaVersion": 2, "mediaType": INDEX_MEDIA_TYPE, "manifests": []}
        value = json.loads(path.read_text())
        assert isinstance(value, dict)
        return value

    def tag(self, name: str, descriptor: Descriptor) -> None:
        """Point tag ``name`` at ``descriptor`` in ``index.json`` (replacing an older one)."""
        index = self.index()
        kept = [
            entry
            for entry in index["manifests"]
            if entry.get("annotations", {}).get(REF_NAME) != name
        ]
        annotations = {**(descriptor.annotations or {}), REF_NAME: name}
        tagged = attrs.evolve(descriptor, annotations=annotations).as_json()
        manifests = sorted(
            [*kept, tagged], key=lambda entry: entry.get("annotations", {}).get(REF_NAME, "")
        )
        (self.root / "index.json").write_bytes(
            canonical_json(
                {"schemaVersion": 2, "mediaType": INDEX_MEDIA_TYPE, "manifests": manifests}
            )
        )

    def resolve(self, name: str) -> Descriptor:
        for entry in self.index()["manifests"]:
            if entry.get("annotations", {}).get(REF_NAME) == name:
                return Descriptor.from_json(entry)
        raise KeyError(f"{self.root}: no tag {name!r}")


def platform_tag(tag: str, platform: Platform) -> str:
    return f"{tag}-{platform.architecture}"
