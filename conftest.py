"""Fixtures every test may use: where the upstream reference data was materialised."""

from __future__ import annotations

import os
import random
import socket
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

# tools/fetch-reference writes this stamp once every file of 3rdparty/reference/manifest.toml is
# in place with its pinned git blob id.
VERIFIED_STAMP = ".verified"


def _reference_dir() -> Path:
    # pants.toml ([test] extra_env_vars) sets it to <buildroot>/.reference.
    configured = os.environ.get("RECIPEKIT_REFERENCE_DIR", "")
    path = Path(configured) if configured else Path(__file__).resolve().parent / ".reference"
    if not (path / VERIFIED_STAMP).is_file():
        raise RuntimeError(
            f"the upstream reference data is not in {path}: run tools/fetch-reference "
            "(it reads 3rdparty/reference/manifest.toml)"
        )
    return path


@pytest.fixture(scope="session")
def reference_dir() -> Path:
    return _reference_dir()


@pytest.fixture()
def listening_port() -> Iterator[Callable[[], int]]:
    """Make a socket listen on a free loopback port below the ephemeral range (Ray and torch
    ports must be there) and return the port; the sockets close when the test ends. Test files
    run side by side, so no test may count on a fixed port being free."""
    held: list[socket.socket] = []

    def take() -> int:
        for port in random.sample(range(22000, 32768), 200):
            sock = socket.socket()
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                sock.close()
                continue
            sock.listen()
            held.append(sock)
            return port
        raise RuntimeError("no free loopback port in 22000..32767")

    yield take
    for sock in held:
        sock.close()
