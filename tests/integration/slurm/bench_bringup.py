"""Benchmark: submit -> Ray up, at several node counts, on a real local Slurm; with the Slurm calls
of each phase.

    ./pants package 3rdparty/python:ray-runtime tests/integration/slurm:stage-launcher
    python3 -m tests.integration.slurm.bench_bringup \\
        --launcher dist/tests.integration.slurm/stage-launcher.pex \\
        --ray-runtime dist/3rdparty.python/ray-runtime.pex --nodes 4 8 16 --runs 1

(as root, from the repository root, after tools/install-system-deps). Each run submits the B200
GRPO stage at N nodes (bringup_stages.py) to a fresh N-node x 8-GPU Slurm in a loopback-only
namespace and times, from the moment `submit` is called: the job starting, every node passing
preflight, and the head seeing all N nodes and 8N GPUs ("Ray up"). Every Slurm client call up to
Ray up is counted by phase (wrappers on the PATH: support/slurm_calls.py), and slurmctld's own
RPC counters (sdiag, reset before the submit) are read at Ray up. Then a least-squares line
through (N, seconds) gives the fixed and the per-node cost, and its value at --project nodes.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from tests.integration.slurm.bringup_stages import NODES_VARIABLE
from tests.integration.support.local_slurm import TERMINAL_STATES, local_slurm
from tests.integration.support.ray_runtime import ray_python
from tests.integration.support.slurm_calls import (
    install_wrappers,
    phases,
    read_calls,
    rpc_counts,
    step_names,
)
from tests.integration.support.stage_workspace import Workspace

HERE = Path(__file__).resolve().parent
STAGES = HERE / "bringup_stages.py"
# Slurm's RPCs a job's bring-up makes itself (the rest are the daemons' own: pings, registrations;
# REQUEST_JOB_INFO_SINGLE is this benchmark's own look at the job's state, every 5 s).
CLIENT_RPCS = (
    "REQUEST_SUBMIT_BATCH_JOB",
    "REQUEST_JOB_INFO",
    "REQUEST_NODE_INFO",
    "REQUEST_NODE_INFO_SINGLE",
    "REQUEST_JOB_STEP_CREATE",
    "REQUEST_STEP_COMPLETE",
    "REQUEST_JOB_ALLOCATION_INFO",
    "REQUEST_BUILD_INFO",
)


class BringUpFailed(Exception):
    """The job ended, or waited too long, before Ray was up."""


def bring_up(
    root: Path,
    python: Path,
    launcher: Path,
    nodes: int,
    *,
    parallel_workers: bool = False,
    environment: dict[str, str] | None = None,
    ray_start_timeout_s: int = 180,
) -> dict[str, Any]:
    """One bring-up of the stage at ``nodes`` nodes: seconds from submit to each milestone, the
    Slurm client calls by phase up to Ray up, and slurmctld's RPCs by type."""
    with local_slurm(root / "slurm", nodes=nodes, gpus_per_node=8, start_timeout=120) as cluster:
        stage = f"bringup-{nodes}n"
        ws = Workspace(root / "ws", cluster, python, stage, launcher, HERE / "fake_run_grpo.py")
        calls_log = root / "slurm-calls.log"
        wrappers = install_wrappers(root / "slurm-bin", calls_log)
        ws.environment.update(
            {
                "RECIPEKIT_STAGE": f"{STAGES}:dapo",
                NODES_VARIABLE: str(nodes),
                "PATH": f"{wrappers}:{cluster.env()['PATH']}",
                **(environment or {}),
            }
        )
        profile = ws.write_profile(node="B200_NODE")
        # The test profile's choices for a few nodes on one host, changed where asked.
        path = Path(profile.partition(":")[0])
        text = path.read_text().replace(
            "ray_start_timeout_s=180", f"ray_start_timeout_s={ray_start_timeout_s}"
        )
        if parallel_workers:
            text = text.replace(
                "start_workers_one_at_a_time=True", "start_workers_one_at_a_time=False"
            )
        path.write_text(text)
        cluster.run(["sdiag", "--reset"], timeout=30, check=True)
        started = time.monotonic()
        job_id, log = ws.submit(profile)
        submitted = time.monotonic() - started

        def reached(text: str, count: int = 1) -> float:
            """Seconds from submit until ``text`` is in the job's log ``count`` times; a job that
            ends first (a Ray node that timed out starting, say) ends the run."""
            deadline, polls = time.monotonic() + 900, 0
            while True:
                content = log.read_text(errors="replace") if log.exists() else ""
                if content.count(text) >= count:
                    return round(time.monotonic() - started, 1)
                # The job's state only every 5 s: each look is an RPC that sdiag counts too.
                polls += 1
                state = (cluster.job_state(job_id) or "").split() if polls % 25 == 0 else []
                if state and state[0] in TERMINAL_STATES:
                    raise BringUpFailed(
                        f"{nodes} nodes: job {job_id} ended {state[0]} before {text!r}:\n"
                        + content[-3000:]
                    )
                if time.monotonic() > deadline:
                    raise BringUpFailed(f"{nodes} nodes: no {text!r} in 900 s")
                time.sleep(0.2)

        job_started = reached(f"{stage} plan")
        preflight = reached("preflight passed", nodes)
        ray_up = reached(f"ray cluster complete: {nodes} nodes")
        ray_up_at = time.time()
        rpcs = rpc_counts(cluster)
        # Bring-up is measured; how the job ends after it is the stand-in's business (recorded).
        state = cluster.wait_for_job(job_id, timeout=600)
        script = (log.parent.parent / "job.sbatch").read_text()
        calls = [c for c in read_calls(calls_log) if c.when <= ray_up_at]
        by_phase = phases(calls, job_id, step_names(script))
        by_client = Counter(
            f"{c.client} {c.argv[1] if c.client == 'scontrol' else ''}".strip() for c in calls
        )
        return {
            "nodes": nodes,
            "seconds": {
                "submitted": round(submitted, 1),
                "job started": job_started,
                "preflight passed": preflight,
                "ray up": ray_up,
            },
            "slurm calls by phase": dict(by_phase),
            "slurm calls by client": dict(by_client),
            "slurm calls": sum(by_phase.values()),
            "job ended": state,
            "controller RPCs (sdiag)": {k: v for k, v in rpcs.items() if k in CLIENT_RPCS},
            "controller RPCs, all types (sdiag)": sum(rpcs.values()),
        }


def fit(points: list[tuple[int, float]]) -> tuple[float, float]:
    """Least squares ``seconds = fixed + per_node * nodes``: (fixed, per_node)."""
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    per_node = sum((x - mx) * (y - my) for x, y in points) / sum((x - mx) ** 2 for x in xs)
    return my - per_node * mx, per_node


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--launcher", type=Path, required=True, help="the stage-launcher Pex")
    parser.add_argument("--ray-runtime", type=Path, required=True)
    parser.add_argument("--nodes", type=int, nargs="+", default=[4, 8, 16])
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--project", type=int, default=144, help="node count to project to")
    parser.add_argument(
        "--parallel-workers",
        action="store_true",
        help="start every worker at once, as on a real cluster (the test profile starts them "
        "one at a time: the fake nodes share one host)",
    )
    parser.add_argument("--json", type=Path, help="write every run's results here")
    parser.add_argument(
        "--ray-start-timeout",
        type=int,
        default=180,
        help="the profile's ray_start_timeout_s: how long the head waits for every node (one "
        "host starts its fake nodes one at a time: 16 of them need more than the tests' 180 s)",
    )
    parser.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="set in the submitting shell, so in the job (sbatch --export=ALL); e.g. "
        "RAY_agent_register_timeout_ms=120000 where this loaded host's Ray agents start slowly",
    )
    parser.add_argument(
        "--retries", type=int, default=1, help="runs again a bring-up that failed (counted)"
    )
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory(prefix="rk-bench-") as tmp:
        python = ray_python(args.ray_runtime.resolve(), Path(tmp) / "ray-venv")
        for nodes in args.nodes:
            for i in range(args.runs):
                for attempt in range(1 + args.retries):
                    root = Path(tmp) / f"n{nodes}-run{i}-{attempt}"
                    try:
                        result = bring_up(
                            root,
                            python,
                            args.launcher.resolve(),
                            nodes,
                            parallel_workers=args.parallel_workers,
                            environment=dict(v.split("=", 1) for v in args.env),
                            ray_start_timeout_s=args.ray_start_timeout,
                        )
                    except BringUpFailed as failed:
                        print(f"FAILED (attempt {attempt + 1}): {failed}", flush=True)
                        continue
                    result["load average"] = round(os.getloadavg()[0], 1)
                    print(json.dumps(result), flush=True)
                    results.append(result)
                    break
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    print(f"{'nodes':>5} {'job start':>9} {'preflight':>9} {'Ray up':>7} {'s/node':>7} calls")
    for r in results:
        s = r["seconds"]
        print(
            f"{r['nodes']:>5} {s['job started']:>9.1f} {s['preflight passed']:>9.1f} "
            f"{s['ray up']:>7.1f} {s['ray up'] / r['nodes']:>7.2f} {r['slurm calls by phase']}"
        )
    if len({r["nodes"] for r in results}) >= 2:
        fixed, per_node = fit([(r["nodes"], r["seconds"]["ray up"]) for r in results])
        print(
            f"model: ray up = {fixed:.1f} s + {per_node:.2f} s x nodes; at {args.project} nodes "
            f"{fixed + per_node * args.project:.0f} s"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
