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

from pathlib import Path
from typing import Any

from recipekit.upstream.classes import UpstreamSource
from tools.config_programs import Pinned, class_program, live, module_file, source_of
from tools.generated_modules import json_table, pins, reference_dir, write_or_check

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
# The checks that evaluate the guards and warnings no other check mirrors.
GENERIC = (
    "recipekit.megatron_core.guards.post_init_guards_hold",
    "recipekit.megatron_core.guards.post_init_warnings",
)


def describe(source: UpstreamSource, pinned: Pinned, qualified: str) -> dict[str, Any]:
    config = source.config_class(qualified)
    assert config is not None, f"{qualified} is not a config class of the pinned source"
    fields = {name: f for name, f in config.fields.items() if f.init}
    steps = class_program(source, pinned, qualified, frozenset(fields))
    return {
        "defaults": {name: f.default or None for name, f in fields.items()},
        "program": live(steps, set(fields)),
    }


def generate(reference: Path | None = None) -> dict[str, str]:
    pinned = Pinned((reference or reference_dir()) / MCORE, "megatron-core", GENERIC)
    source = source_of(pinned.root)
    tables = {name: describe(source, pinned, q) for name, q in CLASSES.items()}
    return json_table(
        OUTPUT,
        TOOL,
        {
            MCORE: {
                "pin": pins()[MCORE],
                "files": sorted({module_file(q.split(":")[0]) for q in CLASSES.values()}),
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
