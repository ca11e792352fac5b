#!/usr/bin/env python3
"""Benchmark: planning every stage with its memory estimate, and the layout search.

    ./pants run tools:bench-memory            # or: ./pants run tools:bench-memory -- --runs 50

For each stage under recipes/: the median time of ``make_plan`` (compile, every check, the
memory estimate) and of the estimate alone; then ``recipekit layout`` for Super 3.5 ``rlvr`` on
its 32 GB200 nodes and moved to 32 B200 nodes. A benchmark, not a test: it prints and asserts
nothing.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _median_ms(action: Callable[[], Any], runs: int) -> float:
    action()  # warm-up: imports and caches
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def _cold_estimate(plan: Any) -> Any:
    """The estimate alone, its per-layer caches emptied first (the layout search keeps them
    warm; one plan computes them)."""
    from recipekit.memory import megatron, parameters

    megatron.clear_cache()
    for cached in (parameters.stack, parameters.layer):
        cached.cache_clear()
    stage = plan.stage
    return stage.framework.memory(plan.config, stage.hardware, stage.model, plan.layout)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--root", type=Path, default=Path.cwd(), help="the checkout")
    args = parser.parse_args()
    sys.path.insert(0, str(args.root))

    from recipekit.hardware import B200_NODE, Hardware
    from recipekit.layout_search import search
    from recipekit.plan import make_plan
    from recipekit.review.discover import discover_stages

    print(f"{'stage':34s} {'make_plan':>10s} {'estimate':>10s}  peak phase")
    for ref in discover_stages(args.root):
        plan = make_plan(ref.stage)
        whole = _median_ms(functools.partial(make_plan, ref.stage), args.runs)
        alone = _median_ms(functools.partial(_cold_estimate, plan), args.runs)
        memory = plan.memory
        peak = "" if memory is None else f"{memory.peak.name} {100 * memory.peak.fraction:.0f}%"
        print(f"{ref.stage.name:34s} {whole:8.1f}ms {alone:8.2f}ms  {peak}")

    rlvr = next(r.stage for r in discover_stages(args.root) if r.stage.name == "rlvr")
    for label, hardware in (
        ("rlvr layout, 32 x GB200", None),
        ("rlvr layout, 32 x B200", Hardware(B200_NODE, num_nodes=32)),
    ):
        times = [search(rlvr, hardware).seconds for _ in range(3)]
        print(f"{label:34s} runs=3 median={statistics.median(times):.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
