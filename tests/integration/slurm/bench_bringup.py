"""Benchmark: submit -> Ray cluster complete, for a 3-node plan on a real local Slurm.

    ./pants package 3rdparty/python:ray-runtime recipes/super3:dapo-b200-launcher
    python3 -m tests.integration.slurm.bench_bringup \\
        --launcher dist/recipes.super3/dapo-b200.pex \\
        --ray-runtime dist/3rdparty.python/ray-runtime.pex --runs 3

(as root, from the repository root, after tools/install-system-deps). Each run submits the
B200 stage to a fresh 3-node x 8-GPU Slurm in a loopback-only namespace and times, from the
moment `submit` is called: the job starting, every node passing preflight, and the head seeing
all 3 nodes and 24 GPUs. The whole job (fake driver included) is timed too.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from tests.integration.support.local_slurm import local_slurm
from tests.integration.support.ray_runtime import ray_python
from tests.integration.support.stage_workspace import Workspace

HERE = Path(__file__).parent


def one_run(root: Path, python: Path, launcher: Path) -> dict[str, float]:
    with local_slurm(root / "slurm", nodes=3, gpus_per_node=8) as cluster:
        ws = Workspace(
            root / "ws", cluster, python, "dapo-b200", launcher, HERE / "fake_run_grpo.py"
        )
        profile = ws.write_profile(node="B200_NODE")
        started = time.monotonic()
        job_id, log = ws.submit(profile)
        ws.wait_for_log(log, "dapo-b200 plan")
        job_started = time.monotonic() - started
        ws.wait_for_log(log, "ray cluster complete: 3 nodes, 24 GPUs")
        ray_complete = time.monotonic() - started
        state = cluster.wait_for_job(job_id, timeout=600)
        if state != "COMPLETED":
            raise SystemExit(f"job {job_id} ended {state}:\n{log.read_text()}")
        return {
            "job started": job_started,
            "ray complete": ray_complete,
            "job done": time.monotonic() - started,
        }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--launcher", type=Path, required=True)
    parser.add_argument("--ray-runtime", type=Path, required=True)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rk-bench-") as tmp:
        python = ray_python(args.ray_runtime.resolve(), Path(tmp) / "ray-venv")
        results = [one_run(Path(tmp) / f"run{i}", python, args.launcher) for i in range(args.runs)]
    for key in results[0]:
        values = [r[key] for r in results]
        print(
            f"submit -> {key:13s} runs={len(values)} median={statistics.median(values):.1f} s "
            f"min={min(values):.1f} s max={max(values):.1f} s"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
