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


def json_table(
    output: str, tool: str, sources: Mapping[str, Any], one_line_below: int | None = None
) -> dict[str, str]:
    """A generated JSON table per pinned source, as ``write_or_check`` takes it: ``output`` ->
    its text, naming the tool that writes it. ``one_line_below``: each value that deep in the
    document (the document is 0) on one line, without spaces: a large table reads faster at
    plan time, and a change to one entry is still one line of the diff."""
    document = {"generated_by": tool, "note": "do not edit", "sources": sources}
    if one_line_below is None:
        return {output: json.dumps(document, indent=1, sort_keys=True) + "\n"}
    return {output: _nested(document, 0, one_line_below) + "\n"}


def _nested(value: Any, depth: int, one_line_below: int) -> str:
    if depth >= one_line_below or not isinstance(value, dict) or not value:
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    pad = " " * (depth + 1)
    items = [
        f"{pad}{json.dumps(key)}: {_nested(value[key], depth + 1, one_line_below)}"
        for key in sorted(value)
    ]
    return "{\n" + ",\n".join(items) + "\n" + " " * depth + "}"


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


# --- generated Python modules -------------------------------------------------------------

# ruff's line length (ruff.toml): the modules are written as ruff formats them.
LINE = 100


def python_header(
    tool: str, labels: list[str], pins: dict[str, str], files: list[str], what: str
) -> str:
    """A generated Python module's docstring (the tool, each source at its pin, the files read,
    then ``what``) and a ruff directive: a type's text is one line, however long."""
    sources = ", ".join(f"{label} @ {pins[label]}" for label in labels)
    text = f"generated by {tool} from {sources}; do not edit.\n\nRead from {', '.join(files)}."
    return '"""' + text + "\n\n" + what + '\n"""\n\n# ruff: noqa: E501\n'


def _src(value: object) -> str:
    """``value`` (str, number, dict, tuple of them) as Python source on one line, strings in
    double quotes as ruff formats them."""
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_src(k)}: {_src(v)}" for k, v in value.items()) + "}"
    if isinstance(value, tuple):
        return "(" + ", ".join(_src(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    return repr(value)


def _entry(indent: int, key: str, value: object) -> list[str]:
    """``key: value,`` at ``indent`` as ruff formats it: on one line where it fits, else one
    item a line (a dict's items as entries of their own)."""
    return _item(indent, f"{_src(key)}: ", value)


def _item(indent: int, lead: str, value: object) -> list[str]:
    """``lead`` and ``value,`` at ``indent``: on one line where it fits, else split as ruff
    splits it, each item on its own line and split in turn."""
    pad = " " * indent
    line = f"{pad}{lead}{_src(value)},"
    if len(line) <= LINE or not isinstance(value, dict | tuple) or not value:
        return [line]
    if isinstance(value, dict):
        inner = [x for k, v in value.items() for x in _entry(indent + 4, k, v)]
        return [f"{pad}{lead}{{", *inner, f"{pad}}},"]
    inner = [x for v in value for x in _item(indent + 4, "", v)]
    return [f"{pad}{lead}(", *inner, f"{pad}),"]


def python_dict(name: str, comment: str, annotation: str, items: dict[str, Any]) -> str:
    """A module-level dict ``name: annotation = {...}`` under ``# comment``, as ruff formats it."""
    if not items:
        return f"# {comment}\n{name}: {annotation} = {{}}\n"
    lines = [f"# {comment}", f"{name}: {annotation} = {{"]
    lines += [x for k, v in items.items() for x in _entry(4, k, v)]
    return "\n".join([*lines, "}", ""])
