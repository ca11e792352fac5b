"""The training container's Python environment (with Ray), for integration tests.

``3rdparty/python:ray-runtime`` is a venv-mode PEX of the ``ray`` resolve with the PEX tools in it.
``ray_python(pex, dest)`` turns it into a real virtualenv at ``dest`` (``PEX_TOOLS=1 python PEX
venv --force DEST``): ``dest/bin/python`` imports ray, ``dest/bin/ray`` is Ray's CLI. Both are plain
files under ``dest``, so any process on the fake Slurm nodes (same host, same filesystem) can run
them by absolute path. Takes about 8 s with a cold PEX_ROOT (~/.pex), 3 s warm.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.integration.support.local_slurm import clean_environ

# Where Pants puts `runtime_package_dependencies=["3rdparty/python:ray-runtime"]` in a test sandbox
# (relative to the sandbox's working directory), and `./pants package` under dist/.
RAY_RUNTIME_PEX = Path("3rdparty.python/ray-runtime.pex")


def ray_python(pex: Path, dest: Path) -> Path:
    """Builds (or rebuilds, ``--force``) a venv from the ray-runtime PEX at ``dest`` and checks it.

    Returns ``dest/bin/python``; ``dest/bin/ray`` exists next to it. Raises RuntimeError with the
    tool's output if the PEX is missing, the venv cannot be built, or ``import ray`` fails.
    """
    pex = Path(pex).resolve()
    dest = Path(dest).absolute()
    if not pex.is_file():
        raise RuntimeError(
            f"the ray-runtime PEX is missing at {pex}: depend on it with "
            'runtime_package_dependencies=["3rdparty/python:ray-runtime"], or build it with '
            "./pants package 3rdparty/python:ray-runtime"
        )
    env = clean_environ()
    env["PEX_TOOLS"] = "1"
    build = subprocess.run(
        [sys.executable, str(pex), "venv", "--force", str(dest)],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if build.returncode != 0:
        raise RuntimeError(
            f"PEX_TOOLS=1 {sys.executable} {pex} venv --force {dest} failed "
            f"({build.returncode}):\n{build.stdout}\n{build.stderr}"
        )
    python, ray = dest / "bin" / "python", dest / "bin" / "ray"
    for path in (python, ray):
        if not os.access(path, os.X_OK):
            raise RuntimeError(f"the ray venv at {dest} has no executable {path}")
    check = subprocess.run(
        [str(python), "-c", "import ray; print(ray.__version__)"],
        env=clean_environ(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if check.returncode != 0:
        raise RuntimeError(f"{python} cannot import ray:\n{check.stdout}\n{check.stderr}")
    return python


def ray_port_args(node_index: int, *, head: bool, gcs_port: int = 6379) -> list[str]:
    """A ``ray start`` port plan for fake node ``node_index`` (0-based) on a shared host.

    Every fake node binds its own block, 24000 + 1000 * node_index .. + 999 (node manager +1,
    object manager +2, runtime-env agent +3, dashboard agent gRPC +4 and HTTP +5, metrics
    export +6, workers +100..+999), all below the ephemeral range (32768..). The head also binds
    the GCS at ``gcs_port``. Meant for the tests' own Ray; the launcher has its plan in
    recipekit.launch.ray_ports.
    """
    base = 24000 + 1000 * node_index
    if base + 999 >= 32768:
        raise ValueError(f"node_index={node_index}: the port block would reach the ephemeral range")
    args = [
        f"--node-manager-port={base + 1}",
        f"--object-manager-port={base + 2}",
        f"--runtime-env-agent-port={base + 3}",
        f"--dashboard-agent-grpc-port={base + 4}",
        f"--dashboard-agent-listen-port={base + 5}",
        f"--metrics-export-port={base + 6}",
        f"--min-worker-port={base + 100}",
        f"--max-worker-port={base + 999}",
    ]
    if head:
        args.append(f"--port={gcs_port}")
    return args
