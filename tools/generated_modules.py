"""What every generator of a module read from the pinned sources shares: where ``.reference/``
is, each pinned source's commit, and writing the modules or (``--check``) failing on a stale
one. A generated module is never edited by hand; a test regenerates it and compares."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tomllib
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

CHECKOUT = Path(__file__).resolve().parent.parent
MANIFEST = CHECKOUT / "3rdparty/reference/manifest.toml"


def reference_dir() -> Path:
    """``.reference/`` (``$RECIPEKIT_REFERENCE_DIR`` where set, as the tests set it)."""
    configured = os.environ.get("RECIPEKIT_REFERENCE_DIR", "")
    return Path(configured) if configured else CHECKOUT / ".reference"


def pins() -> dict[str, str]:
    """Each pinned source's commit by label (a wheel's: its sha256, shortened)."""
    manifest = tomllib.loads(MANIFEST.read_text())
    found = {label: s["commit"] for label, s in manifest["sources"].items()}
    found |= {label: f"sha256:{w['sha256'][:16]}" for label, w in manifest["wheels"].items()}
    return found


def json_table(output: str, tool: str, sources: Mapping[str, Any]) -> dict[str, str]:
    """A generated JSON table per pinned source, as ``write_or_check`` takes it: ``output`` ->
    its text, naming the tool that writes it."""
    document = {"generated_by": tool, "note": "do not edit", "sources": sources}
    return {output: json.dumps(document, indent=1, sort_keys=True) + "\n"}


def write_or_check(outputs: dict[str, str], tool: str, description: str | None) -> int:
    """Write each output (a path under the checkout -> its text), or with ``--check`` exit 1
    naming the ones that differ."""
    parser = argparse.ArgumentParser(
        description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--check", action="store_true", help="exit 1 if a module differs")
    args = parser.parse_args()
    stale = []
    for path, text in outputs.items():
        target = CHECKOUT / path
        if target.exists() and target.read_text() == text:
            continue
        stale.append(path)
        if not args.check:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
    if args.check and stale:
        print("stale: " + ", ".join(stale) + f": run python3 {tool}", file=sys.stderr)
        return 1
    return 0


def stale_outputs(generate: Callable[[], dict[str, str]], labels: Iterable[str]) -> list[str]:
    """For a test: the outputs ``generate`` writes that differ from the checkout's. A test of
    pins whose files are absent here is skipped: the table it would read differs."""
    absent = absent_pins(reference_dir(), tuple(labels))
    if absent:
        import pytest  # pants: no-infer-dep

        pytest.skip(f"{len(absent)} pinned files absent here, e.g. {absent[0]}")
    return [
        path
        for path, text in generate().items()
        if not (CHECKOUT / path).is_file() or (CHECKOUT / path).read_text() != text
    ]


def absent_pins(reference: Path, labels: tuple[str, ...]) -> list[str]:
    """The files of the pinned sources ``labels`` that ``reference`` lacks: only ones the
    manifest marks unmirrored can be (GitHub serves them; tools/fetch-reference skips them
    where it cannot reach GitHub), and a table read without them would differ."""
    manifest = tomllib.loads(MANIFEST.read_text())
    missing = []
    for label in labels:
        source = manifest["sources"].get(label)
        if source is None:
            continue
        missing += [
            f"{label}/{path}"
            for path, _ in source["files"]
            if not (reference / label / path).is_file()
        ]
    return missing
