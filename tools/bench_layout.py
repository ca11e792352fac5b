#!/usr/bin/env python3
"""Benchmark: `recipekit layout` as a whole process, one revision beside another.

    python3 tools/bench_layout.py --base ed2494b [--new HEAD] [--runs 5] \\
        [--target recipes.super35.rl:rlvr] [--node B200] [--nodes 36 ...] [--cluster b200]

Each revision is exported once (``git archive``) under ``--work`` and run from there with this
interpreter, ``PYTHONPATH=src/python:.``: start-up, imports, loading the stage, the search and
the table, as a user's ``recipekit layout`` runs (the progress lines on stderr are dropped).
For each case (``--nodes`` N, or ``--cluster``) both revisions print their table and their
``--format json`` once, which must be the same but for the table's own timing ("(17.73 s)");
then base and new run in turn, ``--runs`` times each after a warm-up of each, so that the
machine's drift falls on both alike, and the medians and the median of the pairs' ratios are
printed. A different answer stops the benchmark with status 1: a faster search that ranks
otherwise is not the same search.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

# The table's first line ends with the search's own time, which differs from run to run.
_SECONDS = re.compile(r" \(\d+\.\d\d s\)$", re.MULTILINE)
_MAIN = "from recipekit.cli.recipekit_cli import main; main()"


def _export(revision: str, work: Path) -> Path:
    """The tree of ``revision``, exported once under ``work`` (by its full commit); a directory
    (``--new .``: the checkout as it is, uncommitted changes too) is run where it is."""
    if Path(revision).is_dir():
        return Path(revision).resolve()
    commit = subprocess.run(
        ["git", "rev-parse", "--verify", f"{revision}^{{commit}}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    root = work / commit
    if not (root / ".exported").exists():
        root.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "archive", commit], check=True, capture_output=True)
        subprocess.run(["tar", "-x", "-C", str(root)], input=archive.stdout, check=True)
        (root / ".exported").write_text(commit + "\n")
    return root


def _command(arguments: list[str]) -> list[str]:
    return [sys.executable, "-c", _MAIN, "layout", *arguments]


def _run(root: Path, arguments: list[str]) -> tuple[float, str]:
    """(wall seconds, stdout) of one whole ``recipekit layout`` process in ``root``."""
    env = {**os.environ, "PYTHONPATH": "src/python:."}
    start = time.perf_counter()
    done = subprocess.run(
        _command(arguments),
        cwd=root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    seconds = time.perf_counter() - start
    if done.returncode not in (0, 1):  # 1: no layout fits, which is an answer
        raise SystemExit(f"error: {' '.join(arguments)} in {root} exited {done.returncode}")
    return seconds, done.stdout


def _answer(text: str) -> str:
    return _SECONDS.sub("", text)


def _same_answers(roots: dict[str, Path], arguments: list[str]) -> bool:
    """Whether both revisions print the same table (but its timing) and the same JSON."""
    same = True
    for extra in ([], ["--format", "json"]):
        answers = {name: _answer(_run(root, arguments + extra)[1]) for name, root in roots.items()}
        if answers["base"] != answers["new"]:
            same = False
            print(f"DIFFERENT answers for layout {' '.join(arguments + extra)}:")
            for name, text in answers.items():
                print(f"--- {name}\n{text}")
    return same


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--base", required=True, help="the revision to compare against")
    parser.add_argument(
        "--new", default="HEAD", help="the revision measured, or a checkout (default HEAD)"
    )
    parser.add_argument("--target", default="recipes.super35.rl:rlvr")
    parser.add_argument("--node", default="B200", help="with --nodes: the node type")
    parser.add_argument("--nodes", type=int, nargs="*", default=[36])
    parser.add_argument("--cluster", action="append", default=[], help="a case of its own")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--work", type=Path, default=Path("/tmp/bench_layout"))
    args = parser.parse_args()

    roots = {"base": _export(args.base, args.work), "new": _export(args.new, args.work)}
    for name, root in roots.items():
        print(f"{name}: {getattr(args, name)} ({root})")
    cases = [[args.target, "--node", args.node, "--nodes", str(n)] for n in args.nodes]
    cases += [[args.target, "--cluster", name] for name in args.cluster]
    failed = False
    for arguments in cases:
        if not _same_answers(roots, arguments):
            failed = True
            continue
        times: dict[str, list[float]] = {"base": [], "new": []}
        for root in roots.values():
            _run(root, arguments)  # warm-up: byte-compiles the exported tree
        for _ in range(args.runs):
            for name, root in roots.items():
                times[name].append(_run(root, arguments)[0])
        ratios = [new / base for new, base in zip(times["new"], times["base"], strict=True)]
        print(f"layout {' '.join(arguments)}: the same table and JSON")
        for name, measured in times.items():
            print(
                f"  {name:4s} runs={args.runs} median={statistics.median(measured):.2f} s "
                f"min={min(measured):.2f} s max={max(measured):.2f} s"
            )
        print(f"  new / base, pair by pair: median {statistics.median(ratios):.3f}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
