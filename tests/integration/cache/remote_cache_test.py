"""Two clean clones, each with an empty local Pants store, share one BuildGrid cache on loopback.

The first clone builds the stage launchers and writes the cache; the second gets every process
result from it (Pants' own run statistics count the hits) and writes byte-identical Pex files.
A blob corrupted in the server's store is detected by its digest and rebuilt, never shipped.
The clones run ./pants exactly as README's "CI at scale" says a CI runner does:
``RECIPEKIT_REMOTE_CACHE=grpc://HOST:PORT ./pants --pants-config-files=pants.remote-cache.toml``.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.support.checkout import clone_checkout, run_pants
from tools.remote_cache import free_port, server_command, wait_for_port, write_config

BGD = Path("3rdparty.python/bgd.pex")
TARGETS = [
    "recipes/super3:dapo-b200-launcher",
    "recipes/super3:dapo-gb200-launcher",
    "recipes/super35:rlvr-launcher",
]
OUTPUTS = [
    "recipes.super3/dapo-b200.pex",
    "recipes.super3/dapo-gb200.pex",
    "recipes.super35/rlvr.pex",
]


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """BuildGrid on a loopback port: (its address, its blob store)."""
    root = tmp_path_factory.mktemp("buildgrid")
    port = free_port()
    config = write_config(port, root)
    log = (root / "bgd.log").open("w")
    server = subprocess.Popen(
        server_command(BGD.resolve(), config), stdout=log, stderr=subprocess.STDOUT, cwd=root
    )
    try:
        wait_for_port(port, server, "BuildGrid", root / "bgd.log")
        yield f"grpc://127.0.0.1:{port}", root / "cas"
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()


def _build(
    clone: Path, address: str, store: Path, targets: list[str] = TARGETS
) -> dict[str, int]:
    """./pants package ``targets`` in ``clone`` with its own empty local store; Pants'
    counters."""
    done = run_pants(
        clone,
        "--pants-config-files=pants.remote-cache.toml",
        f"--local-store-dir={store}",
        "--stats-log",
        "package",
        *targets,
        env={"RECIPEKIT_REMOTE_CACHE": address},
    )
    assert done.returncode == 0, done.stderr[-4000:]
    counters = dict(re.findall(r"^\s+(remote_cache_\w+): (\d+)$", done.stderr, re.MULTILINE))
    return {name: int(value) for name, value in counters.items()}


def _digests(clone: Path, outputs: list[str] = OUTPUTS) -> dict[str, str]:
    return {
        name: hashlib.sha256((clone / "dist" / name).read_bytes()).hexdigest() for name in outputs
    }


def test_a_second_clone_builds_from_the_first_ones_cache_byte_for_byte(
    cache: tuple[str, Path], tmp_path: Path
) -> None:
    address, blobs = cache
    first = _build(clone_checkout(tmp_path / "first"), address, tmp_path / "store-first")
    assert first["remote_cache_write_successes"] > 0
    assert first["remote_cache_write_errors"] == 0
    second = _build(clone_checkout(tmp_path / "second"), address, tmp_path / "store-second")
    assert second["remote_cache_requests"] > 0
    assert second["remote_cache_requests_cached"] == second["remote_cache_requests"]
    assert second["remote_cache_requests_uncached"] == 0
    assert _digests(tmp_path / "first") == _digests(tmp_path / "second")

    # Corrupt the blob of the rlvr launcher in the server's store: a third clone, building that
    # launcher alone (the other two would only be cache hits again), detects it by its digest,
    # runs the process itself and ships the right bytes.
    wanted = _digests(tmp_path / "first")["recipes.super35/rlvr.pex"]
    # BuildGrid's disk store keeps a blob at objects/<first 2 hex digits>/<the rest>.
    [stored] = [p for p in blobs.rglob(wanted[2:]) if p.parent.name == wanted[:2]]
    data = bytearray(stored.read_bytes())
    data[len(data) // 2] ^= 0xFF
    stored.write_bytes(bytes(data))
    third = _build(
        clone_checkout(tmp_path / "third"), address, tmp_path / "store-third", TARGETS[-1:]
    )
    assert third["remote_cache_read_errors"] >= 1
    assert _digests(tmp_path / "third", OUTPUTS[-1:]) == {OUTPUTS[-1]: wanted}
