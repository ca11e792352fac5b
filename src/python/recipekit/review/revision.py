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
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from recipekit.errors import Issue, RecipeError
from recipekit.review import compiled, discover

# What the child imports from this package by name (imported here so that packaging, Pants'
# dependency inference included, carries them wherever this module goes).
CHILD_MODULES = (compiled.__name__, discover.__name__)

TREES = ("recipes", "containers", "src/python")

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
for ref in discover_stages(root):
    out[ref.target] = {"stage": ref.stage.name, "files": compile_files_or_error(ref.stage)}
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


def stages_at(repo: Path, rev: str) -> dict[str, dict[str, Any]]:
    """``{target: {"stage": name, "files": {file: text}}}`` for every stage at ``rev``."""
    if not is_revision(repo, rev):
        raise RecipeError([Issue(rev, "not a git revision of this checkout")])
    commit = git(repo, "rev-parse", f"{rev}^{{commit}}").strip()
    present = [t for t in TREES if git(repo, "ls-tree", "--name-only", commit, t).strip()]
    with tempfile.TemporaryDirectory(prefix="recipekit-diff-") as scratch:
        archive = Path(scratch) / "rev.tar"
        git(repo, "archive", "--format=tar", f"--output={archive}", commit, *present)
        tree = Path(scratch) / "tree"
        with tarfile.open(archive) as tar:
            tar.extractall(tree, filter="data")
        return compile_tree(tree, label=rev)


def compile_tree(tree: Path, *, label: str) -> dict[str, dict[str, Any]]:
    """Every stage of the checkout at ``tree``, compiled in a fresh interpreter (no shared
    module cache: two trees define the same ``recipes...`` module names)."""
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(Path(__file__).parent), str(tree)],
        capture_output=True,
        text=True,
        cwd=tree,
        check=False,
    )
    if done.returncode != 0:
        raise RecipeError(
            [Issue(label, "cannot compile the recipes here", hint=done.stderr[-2000:])]
        )
    result: dict[str, dict[str, Any]] = json.loads(done.stdout)
    return result


def select(found: dict[str, dict[str, Any]], wanted: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The entries ``wanted`` names: ``module:attr``, a stage name, or a Pants address."""
    if not wanted:
        return found
    return {t: v for t, v in found.items() if any(_names(t, v["stage"], w) for w in wanted)}


def _names(target: str, stage: str, wanted: str) -> bool:
    return wanted in (target, stage) or wanted.rsplit(":", 1)[-1] == stage
