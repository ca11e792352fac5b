"""Checked-in compiled plans beside each recipe: ``<recipe folder>/snapshots/<stage>/``.

A pull request that changes a base recipe shows, in its own diff, every stage it moves.
``check`` compares what the recipes compile to now with the files; ``update`` rewrites them
(``recipekit snapshots --update``), and removes the snapshots of stages that no longer exist.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import attrs

from recipekit.progress import progress
from recipekit.review.compiled import FILES, compile_files, document, read_files
from recipekit.review.discover import StageRef, discover_stages
from recipekit.review.keydiff import Change, diff

SNAPSHOTS = "snapshots"
# Makes the snapshot files visible to tests run by Pants (the snapshot test depends on it).
BUILD_FILE = (
    "# Compiled plans of this folder's stages, written by `recipekit snapshots --update`.\n"
    'files(name="snapshots", sources=["*/*"])\n'
)


@attrs.frozen
class Mismatch:
    target: str
    directory: Path
    changes: tuple[Change, ...] = ()
    problem: str = ""  # "missing", "stale": no keys to compare


def _stages(root: Path, show_progress: bool) -> list[StageRef]:
    with progress("snapshots: loading the recipes", silent=not show_progress):
        return discover_stages(root)


def check(root: Path, *, show_progress: bool = False) -> list[Mismatch]:
    """Every stage whose snapshot is missing or differs, and every snapshot with no stage.
    ``show_progress``: how many stages are compiled of all (stderr; 10 s or more)."""
    refs = _stages(root, show_progress)
    out = []
    with progress("snapshots: compiling", total=len(refs), silent=not show_progress) as bar:
        for ref in refs:
            bar.advance()
            directory = ref.snapshot_dir
            if not all((directory / name).is_file() for name in FILES):
                out.append(Mismatch(ref.target, _rel(directory, root), problem="missing"))
                continue
            now = document(compile_files(ref.stage))
            then = document(read_files(directory))
            changes = diff(then, now)
            if changes:
                out.append(Mismatch(ref.target, _rel(directory, root), tuple(changes)))
    for directory in _stale(root, refs):
        out.append(Mismatch("(no stage)", _rel(directory, root), problem="stale"))
    return out


def update(root: Path, *, show_progress: bool = False) -> list[Path]:
    """Rewrite every stage's snapshot files; remove those of stages gone. Returns what changed."""
    refs = _stages(root, show_progress)
    written: list[Path] = []
    with progress("snapshots: compiling", total=len(refs), silent=not show_progress) as bar:
        for ref in refs:
            bar.advance()
            directory = ref.snapshot_dir
            directory.mkdir(parents=True, exist_ok=True)
            for name, text in compile_files(ref.stage).items():
                path = directory / name
                if not path.is_file() or path.read_text() != text:
                    path.write_text(text)
                    written.append(_rel(path, root))
            build = directory.parent / "BUILD"
            if not build.is_file():
                build.write_text(BUILD_FILE)
                written.append(_rel(build, root))
    for directory in _stale(root, refs):
        shutil.rmtree(directory)
        written.append(_rel(directory, root))
    return written


def _stale(root: Path, refs: list[StageRef]) -> list[Path]:
    expected = {ref.snapshot_dir.resolve() for ref in refs}
    found = []
    for snapshots in sorted((root / "recipes").rglob(SNAPSHOTS)):
        if not snapshots.is_dir():
            continue
        for directory in sorted(p for p in snapshots.iterdir() if p.is_dir()):
            if directory.resolve() not in expected:
                found.append(directory)
    return found


def _rel(path: Path, root: Path) -> Path:
    try:
        return path.resolve().relative_to(root.resolve())
    except ValueError:
        return path


def mismatch_text(mismatches: list[Mismatch]) -> str:
    from recipekit.review.keydiff import changes_text

    lines = []
    for m in mismatches:
        if m.problem == "missing":
            lines.append(f"{m.target}: no snapshot at {m.directory}")
        elif m.problem == "stale":
            lines.append(f"{m.directory}: a snapshot of no stage any recipe defines")
        else:
            lines.append(
                f"{m.target}: compiled plan differs from {m.directory} in {len(m.changes)} keys:"
            )
            lines += changes_text(list(m.changes), indent="    ")
    if lines:
        lines.append("regenerate with: ./pants run src/python/recipekit:cli -- snapshots --update")
    return "\n".join(lines) + "\n"
