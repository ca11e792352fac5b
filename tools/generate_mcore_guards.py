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
import functools
from pathlib import Path
from typing import Any

from recipekit import rule_catalogue
from recipekit.upstream import anchors, conditions
from recipekit.upstream.classes import UpstreamSource
from tools.generated_modules import json_table, pins, reference_dir, write_or_check
from tools.guard_reader import BUILTIN_NAMES, EVERYTHING, Step, is_super_call, pinned_base, program

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
# The checks that evaluate the guards and warnings no other check mirrors.
GENERIC = (
    "recipekit.megatron_core.guards.post_init_guards_hold",
    "recipekit.megatron_core.guards.post_init_warnings",
)


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


def class_program(
    source: UpstreamSource, qualified: str, fields: frozenset[str], reference: Path
) -> list[Step]:
    """``qualified``'s ``__post_init__`` as a program (``tools/guard_reader.program``), its
    base's run in place of ``super().__post_init__()``; each guard and warning located
    (``file:line``, its rule-catalogue anchor, whether a catalogued check mirrors it)."""
    fn = _method(source, qualified)
    base = pinned_base(source, qualified)
    if fn is None:
        return [] if base is None else class_program(source, base, fields, reference)

    def inline(call: ast.Call) -> list[Step] | None:
        if base is None or not is_super_call(call, POST_INIT):
            return None
        return class_program(source, base, fields, reference)

    file = _file(qualified.split(":")[0])
    sites = anchors.rule_sites((reference / MCORE / file).read_text())
    return _located(program(fn, fields, inline), file, sites, _mirrored(reference))


class _Known:
    """The names that may have a value at a point of a program: the fields (a config may give
    any), and what the program assigns from what the replay evaluates, unless forgotten since."""

    def __init__(self, names: set[str]) -> None:
        self.names = names

    def copy(self) -> _Known:
        return _Known(set(self.names))

    def reads_unknown(self, text: str | None) -> bool:
        """Whether ``text`` (None: not evaluable) reads a name that has no value."""
        if text is None:
            return True
        return any(n not in self.names and n not in BUILTIN_NAMES for n in conditions.names(text))

    def forget(self, names: list[str]) -> None:
        self.names = set() if EVERYTHING in names else self.names - set(names)


def live(steps: list[Step], known: _Known, reached: bool = True) -> _Known:
    """Append to each guard and warning whether any config can make the replay evaluate it
    (every branch on its way decidable, every name it reads with a value); what is known after
    ``steps``."""
    for step in steps:
        kind = step[0]
        if kind == "set":
            known.forget([step[1]])  # type: ignore[list-item]
            if not known.reads_unknown(step[2]):  # type: ignore[arg-type]
                known.names.add(step[1])  # type: ignore[arg-type]
        elif kind == "forget":
            known.forget(step[1])  # type: ignore[arg-type]
        elif kind == "if":
            decidable = reached and not known.reads_unknown(step[1])  # type: ignore[arg-type]
            then = live(step[2], known.copy(), decidable)  # type: ignore[arg-type]
            orelse = live(step[3], known.copy(), decidable)  # type: ignore[arg-type]
            if decidable:
                known = _Known(then.names & orelse.names)
            else:
                known.forget(step[4])  # type: ignore[arg-type]
                # A branch that may return leaves the rest of the function undecided.
                reached = reached and not step[5]
        elif kind == "guard":
            step.append(reached and not known.reads_unknown(step[1]))  # type: ignore[arg-type]
        elif kind == "warn":
            step.append(reached)
        elif kind == "call":
            known = live(step[1], known, reached)  # type: ignore[arg-type]
    return known


def _located(
    steps: list[Step], file: str, sites: list[anchors.RuleSite], mirrored: set[tuple[str, str]]
) -> list[Step]:
    out: list[Step] = []
    for step in steps:
        if step[0] in ("guard", "warn"):
            line = step[3] if step[0] == "guard" else step[1]
            site = anchors.site_at(sites, int(line))  # type: ignore[call-overload]
            anchor = site.anchor if site is not None else ""
            where = f"{file}:{line}"
            located = (
                [*step[:3], where, step[4]] if step[0] == "guard" else ["warn", where, step[2]]
            )
            out.append([*located, anchor, (file, anchor) in mirrored])
        elif step[0] == "if":
            then, orelse = (_located(s, file, sites, mirrored) for s in step[2:4])  # type: ignore[arg-type]
            out.append([*step[:2], then, orelse, *step[4:]])
        else:
            out.append(step)
    return out


@functools.cache
def _mirrored(reference: Path) -> set[tuple[str, str]]:
    """(file, anchor) of each Megatron-Core rule a catalogued check other than the generic one
    mirrors."""
    return {
        (e.file, e.anchor)
        for e in rule_catalogue.load("megatron-core")
        if e.check and e.check not in GENERIC and e.source == MCORE
    }


def describe(source: UpstreamSource, reference: Path, qualified: str) -> dict[str, Any]:
    config = source.config_class(qualified)
    assert config is not None, f"{qualified} is not a config class of the pinned source"
    fields = {name: f for name, f in config.fields.items() if f.init}
    return {
        "defaults": {name: f.default or None for name, f in fields.items()},
        "program": _live_marked(
            class_program(source, qualified, frozenset(fields), reference), set(fields)
        ),
    }


def _live_marked(steps: list[Step], fields: set[str]) -> list[Step]:
    live(steps, _Known(fields))
    return steps


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
