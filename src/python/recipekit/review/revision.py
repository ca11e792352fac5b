"""Compiled plans at another git revision, for ``recipekit diff REV``.

The revision's ``recipes/``, ``containers/`` and ``src/python/`` are written to a temporary
directory with ``git archive`` and compiled there in a fresh interpreter, with that revision's
own recipekit: the result is what would have run at REV, and nothing imported from the working
tree can leak into it (or the other way round). Only this package (``recipekit.review``) comes
from the working tree, so a revision older than it can still be compared.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from recipekit.errors import Issue, RecipeError
from recipekit.review import compiled, discover

# What the child imports from this package by name (imported here so that packaging, Pants'
# dependency inference included, carries them wherever this module goes).
CHILD_MODULES = (compiled.__name__, discover.__name__)

TREES = ("recipes", "containers", "src/python")
# Starts the lines the child writes to stderr to say how far it is: "<mark> <done> <total>".
PROGRESS_MARK = "recipekit-compiled"

# Run in the child: the revision's recipekit and recipes first on sys.path, this review package
# grafted in, then every stage compiled to its snapshot files, printed as JSON.
_CHILD = r"""
import importlib.util, json, sys
from pathlib import Path
review_dir, root = Path(sys.argv[1]), Path(sys.argv[2])
sys.path[:0] = [str(root / "src" / "python"), str(root)]
import recipekit
spec = importlib.util.spec_from_file_location(
    "recipekit.review", review_dir / "__init__.py", submodule_search_locations=[str(review_dir)]
)
module = importlib.util.module_from_spec(spec)
sys.modules["recipekit.review"] = module
spec.loader.exec_module(module)
from recipekit.review.compiled import compile_files_or_error
from recipekit.review.discover import discover_stages
out = {}
refs = discover_stages(root)
mark = sys.argv[3]
print(mark, 0, len(refs), file=sys.stderr, flush=True)
for done, ref in enumerate(refs, 1):
    out[ref.target] = {"stage": ref.stage.name, "files": compile_files_or_error(ref.stage)}
    print(mark, done, len(refs), file=sys.stderr, flush=True)
json.dump(out, sys.stdout)
"""


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise RecipeError([Issue(f"git {' '.join(args)}", done.stderr.strip() or "failed")])
    return done.stdout


def is_revision(repo: Path, rev: str) -> bool:
    done = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"],
        capture_output=True,
        check=False,
    )
    return done.returncode == 0


def stages_at(repo: Path, rev: str, *, show_progress: bool = False) -> dict[str, dict[str, Any]]:
    """``{target: {"stage": name, "files": {file: text}}}`` for every stage at ``rev``."""
    if not is_revision(repo, rev):
        raise RecipeError([Issue(rev, "not a git revision of this checkout")])
    commit = git(repo, "rev-parse", f"{rev}^{{commit}}").strip()
    present = [t for t in TREES if git(repo, "ls-tree", "--name-only", commit, t).strip()]
    from recipekit.progress import progress

    with tempfile.TemporaryDirectory(prefix="recipekit-diff-") as scratch:
        with progress(f"reading {rev} (git archive)", silent=not show_progress):
            archive = Path(scratch) / "rev.tar"
            git(repo, "archive", "--format=tar", f"--output={archive}", commit, *present)
            tree = Path(scratch) / "tree"
            with tarfile.open(archive) as tar:
                tar.extractall(tree, filter="data")
        return compile_tree(tree, label=rev, show_progress=show_progress)


def compile_tree(
    tree: Path, *, label: str, show_progress: bool = False
) -> dict[str, dict[str, Any]]:
    """Every stage of the checkout at ``tree``, compiled in a fresh interpreter (no shared
    module cache: two trees define the same ``recipes...`` module names). ``show_progress``:
    the stages compiled of all, as the child counts them (ten seconds or more a tree)."""
    from recipekit.progress import progress

    command = [sys.executable, "-c", _CHILD, str(Path(__file__).parent), str(tree), PROGRESS_MARK]
    errors: list[str] = []
    with (
        progress(f"compiling the stages at {label}", silent=not show_progress) as bar,
        subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tree,
        ) as child,
    ):
        assert child.stdout is not None and child.stderr is not None
        # stdout (the JSON, megabytes) is drained apart, so the child never blocks on it
        # while its stderr is read line by line here.
        output: list[str] = []
        stdout = child.stdout
        reader = threading.Thread(target=lambda: output.append(stdout.read()))
        reader.start()
        counted = 0
        for line in child.stderr:
            mark, _, numbers = line.partition(" ")
            if mark != PROGRESS_MARK:
                errors.append(line)
                continue
            done, total = (int(n) for n in numbers.split())
            if done == 0:
                bar.set_total(total)
            bar.advance(done - counted)
            counted = done
        reader.join()
        status = child.wait()
    if status != 0:
        hint = "".join(errors)[-2000:]
        raise RecipeError([Issue(label, "cannot compile the recipes here", hint=hint)])
    result: dict[str, dict[str, Any]] = json.loads("".join(output))
    return result


def select(found: dict[str, dict[str, Any]], wanted: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The entries ``wanted`` names: ``module:attr``, a stage name, or a Pants address."""
    if not wanted:
        return found
    return {t: v for t, v in found.items() if any(_names(t, v["stage"], w) for w in wanted)}


def _names(target: str, stage: str, wanted: str) -> bool:
    return wanted in (target, stage) or wanted.rsplit(":", 1)[-1] == stage
