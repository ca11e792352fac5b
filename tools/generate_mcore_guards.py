#!/usr/bin/env python3
"""Write the guards of Megatron-Core 0.19.2's config classes that a stage's settings can break,
read from the pinned wheel (``.reference/megatron-core/0.19.2``, filled by
``tools/fetch-reference``): ``recipekit/megatron_core/generated/guards.json`` (JSON: the plan
reads it in a fraction of a millisecond, where the same table as a module took 4 ms to import).

For each class a framework builds from the stage's settings (``TransformerConfig`` with its
base ``ModelParallelConfig``, ``OptimizerConfig``, ``DistributedDataParallelConfig``), the table
holds its fields' defaults (their source, where it is a constant) and every guard of its
``__post_init__`` that ``tools/guard_reader.py`` can read: an ``assert`` or ``raise`` whose
conditions read only the class's fields and constants, none of them assigned earlier in
``__post_init__`` (a base's ``__post_init__``, which ``super().__post_init__()`` runs first,
counts as earlier). Each guard carries its rule-catalogue anchor and whether a catalogued check
mirrors it already (``rule_catalogue/megatron-core.toml``), so the plan evaluates each rule once.

    PYTHONPATH=src/python:. python3 tools/generate_mcore_guards.py           # rewrites it
    PYTHONPATH=src/python:. python3 tools/generate_mcore_guards.py --check   # exit 1 if stale

``recipekit/megatron_core/guards_test.py`` regenerates it and fails on any difference.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from recipekit import rule_catalogue
from recipekit.upstream import anchors
from recipekit.upstream.classes import UpstreamSource
from tools.generated_modules import json_table, pins, reference_dir, write_or_check
from tools.guard_reader import Guard, guards, pinned_base, readable, stored, super_call

TOOL = "tools/generate_mcore_guards.py"
MCORE = "megatron-core/0.19.2"
OUTPUT = "src/python/recipekit/megatron_core/generated/guards.json"
# The classes recipekit.megatron_core.kwargs builds the arguments of, by its name for each.
CLASSES = {
    "model": "megatron.core.transformer.transformer_config:TransformerConfig",
    "optimizer": "megatron.core.optimizer.optimizer_config:OptimizerConfig",
    "ddp": (
        "megatron.core.distributed.distributed_data_parallel_config:DistributedDataParallelConfig"
    ),
}
POST_INIT = "__post_init__"
# The check that evaluates the guards no other check mirrors.
GENERIC = "recipekit.megatron_core.guards.post_init_guards_hold"


def _file(module: str) -> str:
    return module.replace(".", "/") + ".py"


def _source(reference: Path) -> UpstreamSource:
    root = reference / MCORE
    files = [p for p in root.rglob("*.py")]
    return UpstreamSource(
        {str(p.relative_to(root).with_suffix("")).replace("/", "."): p.read_text() for p in files}
    )


def _method(source: UpstreamSource, qualified: str) -> ast.FunctionDef | None:
    for item in source.nodes[qualified].body:
        if isinstance(item, ast.FunctionDef) and item.name == POST_INIT:
            return item
    return None


def class_guards(
    source: UpstreamSource, qualified: str, fields: frozenset[str], assigned: frozenset[str]
) -> tuple[list[tuple[str, Guard]], set[str]]:
    """(file, guard) of ``qualified``'s ``__post_init__`` and its bases' it runs, and every
    field they assign."""
    fn = _method(source, qualified)
    base = pinned_base(source, qualified)
    if fn is None:
        if base is None:
            return [], set()
        return class_guards(source, base, fields, assigned)
    found: list[tuple[str, Guard]] = []
    base_stores: set[str] = set()
    found_call = super_call(fn, POST_INIT)
    if base is not None and found_call is not None:
        index = found_call[0]
        before = stored(ast.Module(body=fn.body[:index], type_ignores=[]), fields)
        found, base_stores = class_guards(source, base, fields, assigned | before)
    file = _file(qualified.split(":")[0])
    own = guards(fn, fields, assigned | base_stores)
    found += [(file, g) for g in readable(own, fields)]
    return found, base_stores | stored(fn, fields)


def _mirrored(reference: Path) -> set[tuple[str, str]]:
    """(file, anchor) of each Megatron-Core rule a catalogued check other than the generic one
    mirrors."""
    return {
        (e.file, e.anchor)
        for e in rule_catalogue.load("megatron-core")
        if e.check and e.check != GENERIC and e.source == MCORE
    }


def describe(source: UpstreamSource, reference: Path, qualified: str) -> dict[str, Any]:
    config = source.config_class(qualified)
    assert config is not None, f"{qualified} is not a config class of the pinned source"
    fields = {name: f for name, f in config.fields.items() if f.init}
    mirrored = _mirrored(reference)
    sites: dict[str, list[anchors.RuleSite]] = {}
    rows = []
    for file, guard in class_guards(source, qualified, frozenset(fields), frozenset())[0]:
        if file not in sites:
            sites[file] = anchors.rule_sites((reference / MCORE / file).read_text())
        site = anchors.site_at(sites[file], guard.line)
        anchor = site.anchor if site is not None else ""
        rows.append(
            (guard.text, guard.raised, f"{file}:{guard.line}", anchor, (file, anchor) in mirrored)
        )
    return {
        "defaults": {name: f.default or None for name, f in fields.items()},
        "guards": tuple(rows),
    }


def generate(reference: Path | None = None) -> dict[str, str]:
    reference = reference or reference_dir()
    source = _source(reference)
    tables = {name: describe(source, reference, q) for name, q in CLASSES.items()}
    return json_table(
        OUTPUT,
        TOOL,
        {
            MCORE: {
                "pin": pins()[MCORE],
                "files": sorted({_file(q.split(":")[0]) for q in CLASSES.values()}),
                "note": "by the name recipekit.megatron_core.kwargs gives each class: defaults "
                "(field -> its default's source, null where there is none or it is no constant) "
                "and guards (condition over the fields, what it raises, file:line, its "
                "rule-catalogue anchor, whether a catalogued check mirrors it already)",
                "classes": tables,
            }
        },
    )


def main() -> int:
    return write_or_check(generate(), TOOL, __doc__)


if __name__ == "__main__":
    raise SystemExit(main())
