#!/usr/bin/env python3
"""Write the checks of vLLM 0.25.1's engine config classes, read from the pinned wheel
(``.reference/vllm/0.25.1-wheel``, filled by ``tools/fetch-reference``):
``recipekit/vllm/generated/config_guards.json``.

``EngineArgs.create_engine_config`` builds ``ParallelConfig``, ``SchedulerConfig``,
``CacheConfig``, ``LoadConfig`` and ``ObservabilityConfig`` from the engine's arguments on every
start, which NeMo-RL's vLLM worker makes from ``policy.generation.vllm_cfg`` and
``vllm_kwargs``. (A class it builds only on a switch, as ``LoRAConfig`` with ``enable_lora``, is
not here: its checks would run where vLLM never builds it.) For each class the table holds:

- ``arguments``: field -> the engine argument handed to it as it is (``XConfig(f=self.f)``);
- ``defaults``: field -> its value when the config does not set the argument (the source of
  EngineArgs' default, or of the class's own for a field EngineArgs does not pass), null where
  that is not a constant: EngineArgs computes it (it passes another expression, or assigns the
  argument in a method) or the default is no constant;
- ``program``: what runs when the class is built (``tools/config_programs.py``: its
  ``__post_init__`` and pydantic after-validators), each guard and warning located, with its
  rule-catalogue anchor (``rule_catalogue/vllm.toml``), whether a hand-written check mirrors it,
  and whether the replay can evaluate it.

    PYTHONPATH=src/python:. python3 tools/generate_vllm_guards.py           # rewrites it
    PYTHONPATH=src/python:. python3 tools/generate_vllm_guards.py --check   # exit 1 if stale

``recipekit/vllm/guards_test.py`` regenerates it and fails on any difference.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from recipekit.upstream.classes import UpstreamSource
from tools.config_programs import Pinned, class_program, live, module_file
from tools.generate_vllm_kwargs import ENGINE_ARGS, VLLM, _default_field, handed_to_configs
from tools.generated_modules import json_table, pins, reference_dir, write_or_check
from tools.guard_reader import stored

TOOL = "tools/generate_vllm_guards.py"
OUTPUT = "src/python/recipekit/vllm/generated/config_guards.json"
CLASSES = (
    "vllm.config.parallel:ParallelConfig",
    "vllm.config.scheduler:SchedulerConfig",
    "vllm.config.cache:CacheConfig",
    "vllm.config.load:LoadConfig",
    "vllm.config.observability:ObservabilityConfig",
)
# The check that evaluates the guards no other check mirrors (vLLM warns through its logger,
# which the programs do not read).
GENERIC = ("recipekit.vllm.checks.engine_config_guards_hold",)


def describe(
    source: UpstreamSource,
    pinned: Pinned,
    qualified: str,
    handed: dict[str, tuple[dict[str, str], set[str]]],
) -> dict[str, Any]:
    config = source.config_class(qualified)
    engine = source.config_class(ENGINE_ARGS)
    assert config is not None and engine is not None, qualified
    fields = {name: f for name, f in config.fields.items() if getattr(f, "init", True)}
    as_is, computed = handed.get(qualified, ({}, set()))
    # An argument EngineArgs sets itself (self.x = ... in any of its methods) is not its default.
    assigned = {
        name
        for method in source.nodes[ENGINE_ARGS].body
        if isinstance(method, ast.FunctionDef)
        for name in stored(method, frozenset(engine.fields)) & set(engine.fields)
        if any(
            isinstance(t, ast.Attribute) and t.attr == name and ast.unparse(t.value) == "self"
            for t in ast.walk(method)
            if isinstance(t, ast.Attribute) and isinstance(t.ctx, ast.Store)
        )
    }
    module = ENGINE_ARGS.split(":")[0]
    defaults: dict[str, str | None] = {}
    for name, field in fields.items():
        argument = as_is.get(name)
        if name in computed and argument is None:
            defaults[name] = None
        elif argument is None:
            defaults[name] = field.default or None
        elif argument in assigned or argument not in engine.fields:
            defaults[name] = None
        else:
            text = engine.fields[argument].default
            # EngineArgs' default that names this very field is the class's own.
            if _default_field(text or "", module, source) == (qualified, name):
                text = field.default
            defaults[name] = text or None
    steps = class_program(source, pinned, qualified, frozenset(fields))
    return {
        "file": module_file(qualified.split(":")[0]),
        "arguments": {f: a for f, a in as_is.items() if f in fields},
        "defaults": defaults,
        "program": live(steps, set(fields)),
    }


def generate(reference: Path | None = None) -> dict[str, str]:
    pinned = Pinned((reference or reference_dir()) / VLLM, "vllm", GENERIC)
    source = UpstreamSource.from_tree(pinned.root / "vllm")
    handed = handed_to_configs(source)
    tables = {q.split(":")[1]: describe(source, pinned, q, handed) for q in CLASSES}
    return json_table(
        OUTPUT,
        TOOL,
        {
            VLLM: {
                "pin": pins()[VLLM],
                "note": "by class: arguments (field -> the engine argument handed to it as it "
                "is), defaults (field -> its value's source where the config leaves it, null "
                "where that is no constant) and program (tools/config_programs.py)",
                "classes": tables,
            }
        },
    )


def main() -> int:
    return write_or_check(generate(), TOOL, __doc__)


if __name__ == "__main__":
    raise SystemExit(main())
