"""A deterministic layer: the same files give the same bytes, on any machine, at any time.

PAX tar, entries sorted by path, parent directories written explicitly, owner 0:0 with no
user or group names, every mtime the build's ``SOURCE_DATE_EPOCH``. Layers stay uncompressed:
gzip's bytes depend on the zlib that Python links, and launcher layers are small.
"""

from __future__ import annotations

import hashlib
import io
import os
import tarfile
from collections.abc import Iterable, Mapping
from pathlib import PurePosixPath

import attrs

from recipekit.validators import matching

LAYER_MEDIA_TYPE = "application/vnd.oci.image.layer.v1.tar"


def source_date_epoch(default: int = 0) -> int:
    """The build's timestamp: ``SOURCE_DATE_EPOCH`` if set (reproducible-builds.org), else 0."""
    value = os.environ.get("SOURCE_DATE_EPOCH", "")
    return int(value) if value.strip() else default


@attrs.frozen
class LayerFile:
    """One regular file of a layer, at an absolute path inside the image."""

    # One line (no control character: it is a file's name in the image), absolute, not a folder.
    path: str = attrs.field(
        validator=matching(r"/.*[^/]", "a layer's file is an absolute path, not ending in '/'")
    )
    data: bytes = attrs.field(repr=lambda data: f"<{len(data)} bytes>")
    mode: int = 0o644


def _directories(paths: Iterable[str]) -> set[str]:
    found: set[str] = set()
    for path in paths:
        for parent in PurePosixPath(path).parents:
            if str(parent) != "/":
                found.add(str(parent))
    return found


def _member(name: str, mtime: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.mtime = mtime
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def layer_tar(files: Iterable[LayerFile], *, mtime: int) -> bytes:
    """The tar bytes of a layer holding ``files`` (and their parent directories)."""
    by_path: Mapping[str, LayerFile] = {f.path: f for f in files}
    entries: list[tuple[str, LayerFile | None]] = [(d, None) for d in _directories(by_path)]
    entries += list(by_path.items())
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        # Layer entries are relative ("opt/recipekit"), as `docker save` and umoci write them.
        for path, file in sorted(entries, key=lambda entry: entry[0]):
            info = _member(path.lstrip("/"), mtime)
            if file is None:
                info.type = tarfile.DIRTYPE
                info.mode = 0o755
                tar.addfile(info)
            else:
                info.mode = file.mode
                info.size = len(file.data)
                tar.addfile(info, io.BytesIO(file.data))
    return buffer.getvalue()


def sha256_digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()
