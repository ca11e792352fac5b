"""Fixtures for tests that need a real Slurm cluster and Ray (see tests/integration/support/).

- ``local_slurm_cluster`` (module scope): 3 nodes x 4 fake GPUs in a loopback-only network
  namespace, torn down after the module.
- ``ray_python`` (session scope): ``bin/python`` of a venv built from the ray-runtime PEX (the
  training container's Python with Ray); ``ray_python.parent / "ray"`` is Ray's CLI.

Nothing here skips: a missing binary, PEX or permission fails the test with the reason.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

import pytest

from tests.integration.support.local_slurm import LocalSlurm, local_slurm
from tests.integration.support.ray_runtime import RAY_RUNTIME_PEX
from tests.integration.support.ray_runtime import ray_python as build_ray_python


def _exit_on_sigterm(signum: int, frame: FrameType | None) -> None:
    # A SIGTERM (e.g. a test timeout) becomes SystemExit, so fixture finalizers and atexit
    # handlers run and stop the clusters' daemons.
    sys.exit(128 + signum)


if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
    signal.signal(signal.SIGTERM, _exit_on_sigterm)


def _ray_runtime_pex() -> Path:
    """The PEX from runtime_package_dependencies (relative to the sandbox's working directory), or
    RECIPEKIT_RAY_RUNTIME_PEX when running outside Pants."""
    configured = os.environ.get("RECIPEKIT_RAY_RUNTIME_PEX")
    return Path(configured) if configured else RAY_RUNTIME_PEX


@pytest.fixture(scope="session")
def ray_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    started = time.monotonic()
    python = build_ray_python(_ray_runtime_pex(), tmp_path_factory.mktemp("ray-venv"))
    print(f"ray venv built in {time.monotonic() - started:.1f} s: {python}")
    return python


@pytest.fixture(scope="module")
def local_slurm_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalSlurm]:
    started = time.monotonic()
    with local_slurm(tmp_path_factory.mktemp("slurm"), nodes=3, gpus_per_node=4) as cluster:
        print(f"local Slurm {cluster.netns} up in {time.monotonic() - started:.1f} s")
        yield cluster
