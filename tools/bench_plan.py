#!/usr/bin/env python3
"""Benchmark: how long planning a stage takes in the packaged launcher.

    ./pants package recipes/super3:dapo-gb200-launcher
    python3 tools/bench_plan.py dist/recipes.super3/dapo-gb200.pex [--runs 20]

Reports the wall time of a whole `plan` process (start-up, import, plan, print), run as a user
runs it: the Pex as a program, which boots through /bin/sh straight into its venv. Then the same
through the interpreter (`python3 PEX plan`, as `pants run` and the images run it), which first
imports Pex's bootstrap to find that venv; then `make_plan` inside one process, nothing else.
The first run of each is a warm-up (a venv-mode Pex installs itself on first use).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path


def _time_once(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("pex", type=Path, help="a stage launcher Pex built by ./pants package")
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    if not args.pex.is_file():
        print(f"error: {args.pex} does not exist; run ./pants package first", file=sys.stderr)
        return 2
    # The interpreter's own start-up, for scale: every figure below includes it once, and what
    # its site-packages run at start (.pth files) is the machine's, not the Pex's.
    pex = str(args.pex.resolve())
    for label, command in (
        ("python -c pass", [sys.executable, "-c", "pass"]),
        ("PEX plan", [pex, "plan"]),
        ("PEX plan --format json", [pex, "plan", "--format", "json"]),
        ("python3 PEX plan", [sys.executable, pex, "plan"]),
    ):
        _time_once(command)  # warm-up
        times = [_time_once(command) for _ in range(args.runs)]
        print(
            f"{label:24s} runs={args.runs} median={statistics.median(times) * 1000:.0f} ms "
            f"min={min(times) * 1000:.0f} ms max={max(times) * 1000:.0f} ms"
        )
    # make_plan alone, inside the Pex's own environment: compile + validate + hash.
    probe = (
        "import os, time, statistics\n"
        "from recipekit.loading import load_object\n"
        "from recipekit.plan import make_plan\n"
        "stage = load_object(os.environ['RECIPEKIT_STAGE'])\n"
        "s = time.perf_counter(); make_plan(stage); first = time.perf_counter() - s\n"
        "t = []\n"
        "for _ in range(50):\n"
        "    s = time.perf_counter(); make_plan(stage); t.append(time.perf_counter() - s)\n"
        "print(f'{first * 1000:.1f} {statistics.median(t) * 1000:.1f}')\n"
    )
    env = {**os.environ, "PEX_INTERPRETER": "1"}
    out = subprocess.run(
        [sys.executable, str(args.pex), "-c", probe],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    ).stdout.split()
    # The first call is the one a `plan` process makes; the later ones find the process's
    # caches (section checks, memory terms) warm.
    first, warm = out
    print(f"{'make_plan first call':24s} {first} ms (the one a plan process makes)")
    print(f"{'make_plan in-process':24s} runs=50 median={warm} ms (warm caches)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
