"""A stage's image: the locked base's layers, by digest, plus the stage's layers, per platform.

Nothing here asks a registry or reads the clock: the same lock, layers and labels give
the same index digest. The base's layer blobs are copied in when a layout holding them is at
hand (``base_blobs``); otherwise the layout references them by digest only (a sparse layout),
and ``publish`` fetches them from the base's registry before pushing.
"""

from __future__ import annotations

import copy
import datetime
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from recipekit.images.layer import LAYER_MEDIA_TYPE, sha256_digest
from recipekit.images.lock import BaseLock, LockedPlatform
from recipekit.images.oci import (
    CONFIG_MEDIA_TYPE,
    INDEX_MEDIA_TYPE,
    MANIFEST_MEDIA_TYPE,
    Descriptor,
    Layout,
    oci_media_type,
    platform_tag,
)

LABEL_PLAN_HASH = "dev.recipekit.plan.hash"
LABEL_STAGE = "dev.recipekit.stage"
LABEL_GIT_COMMIT = "org.opencontainers.image.revision"
LABEL_LOCKFILE = "dev.recipekit.lockfile.sha256"
ANNOTATION_BASE_NAME = "org.opencontainers.image.base.name"
ANNOTATION_BASE_DIGEST = "org.opencontainers.image.base.digest"


@attrs.frozen(kw_only=True)
class ImageSettings:
    entrypoint: tuple[str, ...]
    env: Mapping[str, str]
    labels: Mapping[str, str]
    created: int  # seconds since the epoch: SOURCE_DATE_EPOCH

    @property
    def created_text(self) -> str:
        moment = datetime.datetime.fromtimestamp(self.created, tz=datetime.UTC)
        return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _merged_env(base: Sequence[str], ours: Mapping[str, str]) -> list[str]:
    names = {item.partition("=")[0] for item in base}
    out = [
        f"{name}={ours[name]}" if name in ours else f"{name}={value}"
        for name, _, value in (item.partition("=") for item in base)
    ]
    return out + [f"{name}={value}" for name, value in sorted(ours.items()) if name not in names]


@attrs.frozen
class AppendedLayer:
    """A layer the stage adds on top of the base; ``what`` goes into the image's history.

    Either its bytes (``data``, written into the layout), or the descriptor of a blob built
    apart (``blob``): the image references it, and whoever built it places it in the layout.
    """

    what: str
    data: bytes | None = attrs.field(
        default=None, repr=lambda data: "None" if data is None else f"<{len(data)} bytes>"
    )
    blob: Descriptor | None = None

    def __attrs_post_init__(self) -> None:
        if (self.data is None) == (self.blob is None):
            raise ValueError(f"{self.what}: give the layer's data or its blob, not both")

    @property
    def diff_id(self) -> str:
        # Uncompressed, so the diff_id is the blob's digest.
        if self.blob is not None:
            return self.blob.digest
        assert self.data is not None
        return sha256_digest(self.data)

    def write(self, layout: Layout) -> Descriptor:
        if self.blob is not None:
            return self.blob
        assert self.data is not None
        return layout.write_blob(self.data, LAYER_MEDIA_TYPE)


def image_config(
    base: LockedPlatform, layers: Sequence[AppendedLayer], settings: ImageSettings
) -> dict[str, Any]:
    config = copy.deepcopy(base.config_json)
    config["created"] = settings.created_text
    runtime = config.setdefault("config", {})
    runtime["Entrypoint"] = list(settings.entrypoint)
    # The base's Cmd would become the launcher's arguments.
    runtime.pop("Cmd", None)
    runtime["Env"] = _merged_env(runtime.get("Env") or [], settings.env)
    runtime["Labels"] = {**(runtime.get("Labels") or {}), **settings.labels}
    config.setdefault("rootfs", {"type": "layers", "diff_ids": []})
    config["rootfs"]["diff_ids"] = [*base.diff_ids, *(layer.diff_id for layer in layers)]
    config["history"] = [
        *(config.get("history") or []),
        *(
            {"created": settings.created_text, "created_by": f"recipekit: {layer.what}"}
            for layer in layers
        ),
    ]
    return config


def build_stage_image(
    layout: Layout,
    lock: BaseLock,
    layers: Sequence[AppendedLayer],
    settings: ImageSettings,
    tag: str,
    *,
    base_blobs: Layout | None = None,
) -> Descriptor:
    """Write the two-platform image into ``layout`` under ``tag``; returns the index descriptor."""
    appended = [layer.write(layout) for layer in layers]
    manifests = []
    for base in lock.platforms:
        if base_blobs is not None:
            for blob in base.layers:
                layout.copy_blob_from(base_blobs, blob.digest)
        config = layout.write_json(image_config(base, layers, settings), CONFIG_MEDIA_TYPE)
        manifest = {
            "schemaVersion": 2,
            "mediaType": MANIFEST_MEDIA_TYPE,
            "config": config.as_json(),
            "layers": [
                *(
                    attrs.evolve(blob, media_type=oci_media_type(blob.media_type)).as_json()
                    for blob in base.layers
                ),
                *(blob.as_json() for blob in appended),
            ],
            "annotations": {
                ANNOTATION_BASE_NAME: lock.reference,
                ANNOTATION_BASE_DIGEST: base.manifest.digest,
            },
        }
        descriptor = attrs.evolve(
            layout.write_json(manifest, MANIFEST_MEDIA_TYPE), platform=base.platform
        )
        layout.tag(platform_tag(tag, base.platform), descriptor)
        manifests.append(descriptor)
    index = layout.write_json(
        {
            "schemaVersion": 2,
            "mediaType": INDEX_MEDIA_TYPE,
            "manifests": [m.as_json() for m in manifests],
        },
        INDEX_MEDIA_TYPE,
    )
    layout.tag(tag, index)
    return index


def missing_blobs(layout: Layout, tag: str) -> list[str]:
    """The digests the image under ``tag`` references but the layout does not hold."""
    missing = []
    index = layout.read_json(layout.resolve(tag).digest)
    for entry in index["manifests"]:
        manifest = layout.read_json(entry["digest"])
        for blob in [manifest["config"], *manifest["layers"]]:
            if not layout.has_blob(blob["digest"]):
                missing.append(blob["digest"])
    return sorted(set(missing))
