"""Base images, pinned: a declaration by reference, and a lock file of what the registry serves.

A lock holds, for every platform, the manifest digest, the config (digest, size, and the config
itself, so a stage image is built without asking the registry again), the layers (digest, size,
media type) and their diff_ids. ``lock_base`` writes it by asking the registry through skopeo,
and checks every digest against the bytes it received.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from recipekit.errors import Issue, RecipeError
from recipekit.images.layer import sha256_digest
from recipekit.images.oci import (
    INDEX_MEDIA_TYPE,
    Descriptor,
    Platform,
    oci_media_type,
)
from recipekit.images.registry import Reference, raw_config, raw_manifest

LOCK_FORMAT = "recipekit.base-lock/1"
BOTH_ARCHITECTURES = ("linux/amd64", "linux/arm64")


@attrs.frozen(kw_only=True)
class BaseImage:
    """A base image declared by reference; ``lock`` pins it."""

    name: str
    reference: str
    platforms: tuple[str, ...] = BOTH_ARCHITECTURES
    description: str = ""

    def lock_path(self, containers_dir: Path) -> Path:
        return containers_dir / f"{self.name}.lock.json"


@attrs.frozen(kw_only=True)
class LockedPlatform:
    platform: Platform
    manifest: Descriptor
    config: Descriptor
    layers: tuple[Descriptor, ...]
    diff_ids: tuple[str, ...]
    config_json: dict[str, Any]

    def as_json(self) -> dict[str, Any]:
        return {
            "platform": str(self.platform),
            "manifest": self.manifest.as_json(),
            "config": self.config.as_json(),
            "layers": [layer.as_json() for layer in self.layers],
            "diff_ids": list(self.diff_ids),
            "config_json": self.config_json,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LockedPlatform:
        return cls(
            platform=Platform.parse(data["platform"]),
            manifest=Descriptor.from_json(data["manifest"]),
            config=Descriptor.from_json(data["config"]),
            layers=tuple(Descriptor.from_json(layer) for layer in data["layers"]),
            diff_ids=tuple(data["diff_ids"]),
            config_json=data["config_json"],
        )


@attrs.frozen(kw_only=True)
class BaseLock:
    name: str
    reference: str
    index: Descriptor
    platforms: tuple[LockedPlatform, ...]

    @property
    def repository(self) -> str:
        return Reference.parse(self.reference).repository

    def as_json(self) -> dict[str, Any]:
        return {
            "format": LOCK_FORMAT,
            "name": self.name,
            "reference": self.reference,
            "index": self.index.as_json(),
            "platforms": [p.as_json() for p in self.platforms],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> BaseLock:
        if data.get("format") != LOCK_FORMAT:
            raise RecipeError(
                [Issue("format", f"expected {LOCK_FORMAT}", value=data.get("format"))]
            )
        return cls(
            name=data["name"],
            reference=data["reference"],
            index=Descriptor.from_json(data["index"]),
            platforms=tuple(LockedPlatform.from_json(p) for p in data["platforms"]),
        )

    def platform(self, name: str) -> LockedPlatform:
        for locked in self.platforms:
            if str(locked.platform) == name:
                return locked
        raise RecipeError([Issue(self.name, f"the lock has no {name} image")])


def write_lock(lock: BaseLock, path: Path) -> None:
    path.write_text(json.dumps(lock.as_json(), indent=2, sort_keys=True) + "\n")


def read_lock(path: Path) -> BaseLock:
    try:
        return BaseLock.from_json(json.loads(path.read_text()))
    except RecipeError as exc:
        raise exc.under(str(path)) from None


def _checked(data: bytes, digest: str, what: str) -> Any:
    if sha256_digest(data) != digest:
        raise RecipeError([Issue(what, f"the registry's bytes do not hash to {digest}")])
    return json.loads(data)


def _lock_platform(
    repository: Reference,
    manifest: Descriptor,
    platform: Platform,
    *,
    tls_verify: bool,
    asked: Callable[[str], None],
) -> LockedPlatform:
    where = repository.by_digest(manifest.digest)
    body = _checked(raw_manifest(where, tls_verify=tls_verify), manifest.digest, where)
    asked(f"{platform} manifest")
    config_descriptor = Descriptor.from_json(body["config"])
    config_bytes = raw_config(where, tls_verify=tls_verify)
    asked(f"{platform} config")
    config = _checked(config_bytes, config_descriptor.digest, f"{where} config")
    layers = tuple(Descriptor.from_json(layer) for layer in body["layers"])
    diff_ids = tuple(config["rootfs"]["diff_ids"])
    if len(diff_ids) != len(layers):
        raise RecipeError([Issue(where, f"{len(layers)} layers but {len(diff_ids)} diff_ids")])
    return LockedPlatform(
        platform=platform,
        manifest=manifest,
        config=config_descriptor,
        layers=layers,
        diff_ids=diff_ids,
        config_json=config,
    )


def registry_requests(base: BaseImage) -> int:
    """How many times ``lock_base`` asks the registry: the index, then each platform's
    manifest and config."""
    return 1 + 2 * len(base.platforms)


def lock_base(
    base: BaseImage, *, tls_verify: bool = True, asked: Callable[[str], None] | None = None
) -> BaseLock:
    """Ask the registry what ``base.reference`` is now, for each of ``base.platforms``.
    ``asked`` is told each answer the registry gave (``registry_requests`` in all)."""
    told = asked or (lambda _: None)
    reference = Reference.parse(base.reference)
    raw = raw_manifest(str(reference), tls_verify=tls_verify)
    told("index")
    index = json.loads(raw)
    media_type = oci_media_type(index.get("mediaType", INDEX_MEDIA_TYPE))
    if media_type != INDEX_MEDIA_TYPE:
        raise RecipeError(
            [Issue(base.reference, "is a single-platform image; a two-architecture base is needed")]
        )
    index_descriptor = Descriptor(
        media_type=index.get("mediaType", INDEX_MEDIA_TYPE),
        digest=sha256_digest(raw),
        size=len(raw),
    )
    found: dict[str, Descriptor] = {}
    for entry in index["manifests"]:
        descriptor = Descriptor.from_json(entry)
        if descriptor.platform is not None:
            found.setdefault(str(descriptor.platform), descriptor)
    missing = [p for p in base.platforms if p not in found]
    if missing:
        raise RecipeError(
            [Issue(base.reference, f"has no {', '.join(missing)} image", value=sorted(found))]
        )
    platforms = tuple(
        _lock_platform(
            reference, found[name], Platform.parse(name), tls_verify=tls_verify, asked=told
        )
        for name in base.platforms
    )
    # The lock names the base by the digest it pinned, whatever the tag says tomorrow.
    return BaseLock(
        name=base.name, reference=str(reference), index=index_descriptor, platforms=platforms
    )
