"""`lock` refuses what it must: bytes that do not hash to their digest, a single-platform base,
and TLS switched off for a registry that is not on this host.

The registry is a real HTTP server on a loopback port speaking the part of the OCI distribution
API that ``skopeo inspect`` reads (``/v2/``, manifests by tag and digest, blobs), serving what
each test puts in it; skopeo is Debian's (tools/system-packages/images.list).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from recipekit.errors import RecipeError
from recipekit.images.lock import BaseImage, lock_base, registry_requests
from recipekit.images.oci import CONFIG_MEDIA_TYPE, INDEX_MEDIA_TYPE, MANIFEST_MEDIA_TYPE
from recipekit.images.registry import tls_flags

CONFIG = json.dumps(
    {"architecture": "amd64", "os": "linux", "rootfs": {"type": "layers", "diff_ids": []}}
).encode()


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


class Registry:
    """Manifests by tag or digest and blobs by digest, as bytes with their media types."""

    def __init__(self) -> None:
        self.manifests: dict[str, tuple[str, bytes]] = {}
        self.blobs: dict[str, bytes] = {}
        registry = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                parts = self.path.split("/")
                if self.path == "/v2/":
                    return self._send(200, "application/json", b"{}")
                if len(parts) >= 5 and parts[-2] == "manifests" and parts[-1] in registry.manifests:
                    media_type, body = registry.manifests[parts[-1]]
                    return self._send(200, media_type, body)
                if len(parts) >= 5 and parts[-2] == "blobs" and parts[-1] in registry.blobs:
                    return self._send(200, "application/octet-stream", registry.blobs[parts[-1]])
                return self._send(404, "application/json", b'{"errors":[]}')

            do_HEAD = do_GET  # noqa: N815

            def _send(self, status: int, media_type: str, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", media_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            def log_message(self, *_: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.host = f"127.0.0.1:{self.server.server_address[1]}"

    def image(self, config: bytes, *, config_digest: str | None = None) -> tuple[str, bytes]:
        """An image manifest whose config is ``config``, listed under ``config_digest``."""
        digest = config_digest or _digest(config)
        self.blobs[digest] = config
        manifest = json.dumps(
            {
                "schemaVersion": 2,
                "mediaType": MANIFEST_MEDIA_TYPE,
                "config": {"mediaType": CONFIG_MEDIA_TYPE, "digest": digest, "size": len(config)},
                "layers": [],
            }
        ).encode()
        self.manifests[_digest(manifest)] = (MANIFEST_MEDIA_TYPE, manifest)
        return _digest(manifest), manifest

    def index(self, tag: str, entries: list[tuple[str, bytes, str]]) -> None:
        """``tag`` names an index of (digest, manifest, architecture) entries."""
        body = json.dumps(
            {
                "schemaVersion": 2,
                "mediaType": INDEX_MEDIA_TYPE,
                "manifests": [
                    {
                        "mediaType": MANIFEST_MEDIA_TYPE,
                        "digest": digest,
                        "size": len(manifest),
                        "platform": {"architecture": arch, "os": "linux"},
                    }
                    for digest, manifest, arch in entries
                ],
            }
        ).encode()
        self.manifests[tag] = (INDEX_MEDIA_TYPE, body)


@pytest.fixture()
def registry() -> Iterator[Registry]:
    if shutil.which("skopeo") is None:
        pytest.fail("skopeo is missing: install tools/system-packages/images.list with apt-get")
    served = Registry()
    thread = threading.Thread(target=served.server.serve_forever, daemon=True)
    thread.start()
    yield served
    served.server.shutdown()
    served.server.server_close()
    thread.join()


def _lock(registry: Registry, tag: str, platforms: tuple[str, ...]) -> None:
    base = BaseImage(name="test", reference=f"{registry.host}/team/base:{tag}", platforms=platforms)
    lock_base(base, tls_verify=False)


def test_a_good_base_locks(registry: Registry) -> None:
    digest, manifest = registry.image(CONFIG)
    registry.index("good", [(digest, manifest, "amd64")])
    reference = f"{registry.host}/team/base:good"
    base = BaseImage(name="t", reference=reference, platforms=("linux/amd64",))
    asked: list[str] = []
    locked = lock_base(base, tls_verify=False, asked=asked.append)
    assert locked.platform("linux/amd64").config.digest == _digest(CONFIG)
    # What `recipekit lock` counts as it goes: every registry request, as many as it expects.
    assert asked == ["index", "linux/amd64 manifest", "linux/amd64 config"]
    assert len(asked) == registry_requests(base)


def test_a_manifest_that_does_not_hash_to_its_digest_is_refused(registry: Registry) -> None:
    # The index names a manifest by digest; the registry serves other bytes under it. skopeo
    # hands raw bytes over unchecked, so this is lock's own check.
    digest, manifest = registry.image(CONFIG)
    registry.manifests[digest] = (MANIFEST_MEDIA_TYPE, manifest.replace(b"[]", b"[ ]"))
    registry.index("tampered", [(digest, manifest, "amd64")])
    with pytest.raises(RecipeError, match=f"the registry's bytes do not hash to {digest}"):
        _lock(registry, "tampered", ("linux/amd64",))


def test_a_config_that_does_not_hash_to_its_digest_is_refused(registry: Registry) -> None:
    # The manifest names the config by the digest of other bytes than the registry serves.
    wrong = CONFIG.replace(b"amd64", b"arm64")
    digest, manifest = registry.image(wrong, config_digest=_digest(CONFIG))
    registry.index("tampered", [(digest, manifest, "amd64")])
    with pytest.raises(RecipeError) as caught:
        _lock(registry, "tampered", ("linux/amd64",))
    assert _digest(CONFIG) in caught.value.render()


def test_a_single_platform_base_is_refused(registry: Registry) -> None:
    digest, manifest = registry.image(CONFIG)
    registry.manifests["single"] = (MANIFEST_MEDIA_TYPE, manifest)
    with pytest.raises(RecipeError, match="is a single-platform image; a two-architecture base"):
        _lock(registry, "single", ("linux/amd64", "linux/arm64"))
    assert digest  # the same manifest, listed in an index, would lock (test_a_good_base_locks)


def test_a_base_without_one_of_its_platforms_is_refused(registry: Registry) -> None:
    digest, manifest = registry.image(CONFIG)
    registry.index("amd64-only", [(digest, manifest, "amd64")])
    with pytest.raises(RecipeError, match="has no linux/arm64 image"):
        _lock(registry, "amd64-only", ("linux/amd64", "linux/arm64"))


def test_tls_is_switched_off_only_for_a_loopback_registry() -> None:
    assert tls_flags("127.0.0.1:5000", "--tls-verify", False) == ["--tls-verify=false"]
    assert tls_flags("localhost:5000", "--tls-verify", False) == ["--tls-verify=false"]
    assert tls_flags("nvcr.io", "--tls-verify", True) == []
    with pytest.raises(RecipeError, match="only be switched off for a loopback registry"):
        tls_flags("registry.example.com", "--tls-verify", False)
    base = BaseImage(name="t", reference="registry.example.com/team/base:1")
    with pytest.raises(RecipeError, match="registry.example.com: TLS verification"):
        lock_base(base, tls_verify=False)  # refused before anything is asked of the network
