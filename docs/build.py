"""Build the user's guide: ``./pants run docs:build [-- OUT]`` writes HTML to dist/docs/html.

The Pex this file is the entry point of holds Sphinx and its extensions (the ``docs`` resolve).
recipekit's own code, ``recipes/`` and ``tools/`` are read from the repository it is run in (or
``RECIPEKIT_DOCS_ROOT``), never packed into the Pex. Warnings are errors (``-W``), as in CI.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path


def _root() -> Path:
    configured = os.environ.get("RECIPEKIT_DOCS_ROOT") or os.environ.get(
        "BUILD_WORKSPACE_DIRECTORY"
    )
    if configured:
        return Path(configured).resolve()
    here = Path.cwd().resolve()
    for candidate in (here, *here.parents):
        if (candidate / "docs" / "conf.py").is_file() and (candidate / "pants.toml").is_file():
            return candidate
    raise SystemExit("error: run from the repository (or set RECIPEKIT_DOCS_ROOT)")


def build(out: Path, *, root: Path | None = None, builder: str = "html") -> int:
    """Copy docs/ aside (the generated pages are written there), then run sphinx-build -W."""
    from sphinx.cmd.build import build_main

    root = root or _root()
    os.environ["RECIPEKIT_DOCS_ROOT"] = str(root)
    with tempfile.TemporaryDirectory(prefix="recipekit-docs-") as tmp:
        source = Path(tmp) / "docs"
        shutil.copytree(
            root / "docs", source, ignore=shutil.ignore_patterns("_generated", "__pycache__")
        )
        return build_main(
            [
                "-W",
                "--keep-going",
                "-q",
                "-b",
                builder,
                "-d",
                str(Path(tmp) / "doctrees"),
                str(source),
                str(out),
            ]
        )


def main() -> None:
    root = _root()
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else root / "dist" / "docs" / "html"
    status = build(out.resolve(), root=root)
    if status == 0:
        print(f"wrote {out / 'index.html'}")
    sys.exit(status)


if __name__ == "__main__":
    main()
