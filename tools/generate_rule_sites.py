#!/usr/bin/env python3
"""Write each framework's table of where its catalogued rules stand upstream, so that a check's
message cites a rule by its catalogue id and no upstream line is written by hand:

- ``recipekit/nemo_rl/generated/rule_sites.json`` (``rule_catalogue/nemo-rl*.toml``)
- ``recipekit/megatron_core/generated/rule_sites.json``
- ``recipekit/megatron_bridge/generated/rule_sites.json``
- ``recipekit/nemo_evaluator/generated/rule_sites.json``
- ``recipekit/vllm/generated/rule_sites.json`` (the vLLM engine's own rules, NeMo-RL's checks cite)

Each maps a rule id to (source label, file, line): the line is where the entry's anchor stands
in the pinned file under ``.reference/`` (``rule_catalogue.locate_line``). A ``keyword`` rule
(a call that spreads a config's mapping with ``**``) also lists the keywords the call passes
itself, which the mapping must not hold. An entry whose file no
source of the manifest pins is left out; an anchor the pinned file does not hold is an error.

    python3 tools/generate_rule_sites.py           # rewrites the tables
    python3 tools/generate_rule_sites.py --check   # exit 1 if one differs

``rule_catalogue/sites_test.py`` regenerates them and fails on any difference. The plan reads
the tables (``recipekit.rule_sites``), never the catalogue or ``.reference/``. Regenerate after
editing an anchor (an upgrade re-anchors the catalogue).
"""

from __future__ import annotations

import ast
import json
import sys
import tomllib
from pathlib import Path

from recipekit import rule_catalogue
from tools import generated_modules

CHECKOUT = generated_modules.CHECKOUT
TOOL = "tools/generate_rule_sites.py"

# catalogue framework -> the package whose generated/rule_sites.json holds its table
PACKAGES = {
    "nemo-rl": "nemo_rl",
    "megatron-core": "megatron_core",
    "megatron-bridge": "megatron_bridge",
    "nemo-evaluator": "nemo_evaluator",
    "vllm": "vllm",
}


def output(framework: str) -> str:
    return f"src/python/recipekit/{PACKAGES[framework]}/generated/rule_sites.json"


def _pinned() -> set[tuple[str, str]]:
    manifest = tomllib.loads(generated_modules.MANIFEST.read_text())
    files = {
        (label, path)
        for label, source in manifest["sources"].items()
        for path, _ in source["files"]
    }
    return files | {
        (label, path) for label, wheel in manifest["wheels"].items() for path in wheel["files"]
    }


def cited(framework: str) -> list[rule_catalogue.RuleEntry]:
    """The framework's upstream entries whose file the manifest pins."""
    pinned = _pinned()
    return [
        e
        for e in rule_catalogue.load(framework)
        if not e.from_issue and (e.source, e.file) in pinned
    ]


def absent(framework: str, reference: Path) -> list[str]:
    """The pinned files the table reads that ``reference`` lacks (GitHub-only ones can be)."""
    return sorted(
        {
            f"{e.source}/{e.file}"
            for e in cited(framework)
            if not rule_catalogue.pinned_file(e, reference).is_file()
        }
    )


def explicit_keywords(statement: str) -> list[str]:
    """The keywords a call that spreads a mapping (``f(a, x=1, **cfg)``) passes itself, in the
    statement's text: a key of the mapping named the same is a duplicate keyword."""
    found: list[str] = []
    for node in ast.walk(ast.parse(statement)):
        if isinstance(node, ast.Call) and any(k.arg is None for k in node.keywords):
            found += [k.arg for k in node.keywords if k.arg is not None]
    return sorted(set(found))


def table_text(framework: str, reference: Path) -> str:
    entries = cited(framework)
    pins = generated_modules.pins()
    labels = sorted({e.source for e in entries})
    rows, keyword_rows = [], []
    for entry in entries:
        site = rule_catalogue.site_of(entry, reference)
        if site is None:
            raise SystemExit(
                f"{entry.id}: {entry.anchor} is not in {entry.source}/{entry.file} under "
                f"{reference} (run tools/fetch-reference, or re-anchor the entry)"
            )
        rows.append(
            f"  {json.dumps(entry.id)}: {json.dumps([entry.source, entry.file, site.line])}"
        )
        passed = explicit_keywords(site.text) if entry.kind == "keyword" else []
        if passed:
            keyword_rows.append(f"  {json.dumps(entry.id)}: {json.dumps(passed)}")
    sources = {label: pins[label] for label in labels}
    # One site a line, so that a regenerated table reads as a diff of the rules that moved.
    return "\n".join(
        [
            "{",
            f'"generated_by": {json.dumps(f"{TOOL} from rule_catalogue/{framework}*.toml")},',
            f'"sources": {json.dumps(sources, sort_keys=True)},',
            '"sites": {',
            ",\n".join(rows),
            "},",
            '"keywords": {',
            ",\n".join(keyword_rows),
            "}",
            "}",
            "",
        ]
    )


def generate(reference: Path | None = None) -> dict[str, str]:
    reference = reference or generated_modules.reference_dir()
    missing = [path for framework in PACKAGES for path in absent(framework, reference)]
    if missing:
        raise SystemExit(f"not fetched: {', '.join(missing)}: run tools/fetch-reference")
    return {output(framework): table_text(framework, reference) for framework in PACKAGES}


def main() -> int:
    return generated_modules.write_or_check(generate(), TOOL, __doc__)


if __name__ == "__main__":
    sys.exit(main())
