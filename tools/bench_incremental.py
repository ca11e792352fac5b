"""Benchmark: a recipe-only change to a new two-architecture stage image.

    python3 tools/bench_incremental.py CLONE [--target recipes/super3:dapo-b200] [--runs 3]

CLONE is a checkout whose stage target has its base locked (``containers/<base>.lock.json``;
``tests/integration/images/package_test.py`` leaves one). Each run edits the stage's recipe (a
value the plan reads, so the plan hash and the launcher layer change), runs
``./pants package TARGET`` with a warm cache, and reports the seconds from the edit to the new
index, which layers changed, and the size of the new launcher layer. The edit is undone at the
end. ``--recipe`` and ``--edit`` choose another value to change (a regex whose first group is
kept and whose second, a number, is replaced). Goal (issue 13): under 10 s and under 1 MiB on
a 2-core machine.
"""

from __future__ import annotations

import argparse
import json
import os
import pwd
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

DEFAULT_TARGET = "recipes/super3:dapo-b200"
# The recipe value each run changes (recipes/super3/dapo.py): one the plan renders.
DEFAULT_EDIT = r'("logger.num_val_samples_to_print": )(\d+)'


def _package(clone: Path, target: str) -> float:
    home = pwd.getpwuid(os.getuid()).pw_dir
    started = time.monotonic()
    done = subprocess.run(
        ["./pants", "package", target],
        cwd=clone,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home},
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(done.stderr[-3000:])
    return time.monotonic() - started


def _built(clone: Path, target: str) -> dict[str, str]:
    folder, name = target.split(":")
    out = clone / "dist" / folder.replace("/", ".") / name / "artifacts.json"
    manifest = json.loads(out.read_text())
    files = {entry["path"]: entry["sha256"] for entry in manifest["files"]}
    files["index"] = (manifest.get("image") or {}).get("index_digest") or "none"
    return files


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("clone", type=Path)
    parser.add_argument("--target", default=DEFAULT_TARGET)
    parser.add_argument("--recipe", type=Path, default=Path("recipes/super3/dapo.py"))
    parser.add_argument(
        "--edit", default=DEFAULT_EDIT, help="(kept)(number) in --recipe: the value each run sets"
    )
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    clone, target = args.clone.resolve(), args.target
    recipe = clone / args.recipe
    original = recipe.read_text()
    edit = re.compile(args.edit)
    if not edit.search(original):
        raise SystemExit(f"{recipe}: nothing matches {args.edit}")
    print(f"warm-up: {_package(clone, target):.1f} s")
    before = _built(clone, target)
    if before["index"] == "none":
        raise SystemExit(f"{target}: no image (lock its base first, see the docstring)")
    seconds = []
    try:
        for run in range(args.runs):
            recipe.write_text(edit.sub(rf"\g<1>{20 + run}", original, count=1))
            seconds.append(_package(clone, target))
            after = _built(clone, target)
            changed = sorted(k for k in after if after[k] != before.get(k) and "blobs" not in k)
            layer = clone / "dist" / target.split(":")[0].replace("/", ".") / target.split(":")[1]
            size = (layer / "launcher-layer.tar").stat().st_size
            print(
                f"run {run + 1}: {seconds[-1]:.1f} s to a new index; launcher layer "
                f"{size / 1024:.0f} KiB; changed: {', '.join(changed)}"
            )
            before = after
    finally:
        recipe.write_text(original)
    print(f"median {statistics.median(seconds):.1f} s over {len(seconds)} runs")
    # Others' work on a shared machine shows here: the figures are only as quiet as the machine.
    print("load average (1, 5, 15 min): " + ", ".join(f"{v:.2f}" for v in os.getloadavg()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
