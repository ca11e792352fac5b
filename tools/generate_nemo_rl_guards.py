#!/usr/bin/env python3
"""Write the checks of NeMo-RL's pydantic config classes at super-v3.5-posttraining, read from
the pinned source (``.reference/nemo-rl/super-v3.5-posttraining``, filled by
``tools/fetch-reference``): ``recipekit/nemo_rl/generated/config_guards.json``.

Every runner of that branch builds its master config as ``MasterConfig(**config)``
(``examples/run_ppo.py``, ``run_sft.py``, ...), and pydantic then validates every model the
config nests, each running its ``@model_validator(mode="after")`` methods. For each pydantic
model of the declared table (``recipekit/upstream/declared``) that has such a method, and each
model one of them nests, the table holds:

- ``defaults``: field -> its default's source, null where it has none or it is no constant (a
  nested model's ``default_factory`` is the nested model's own defaults, ``nested``);
- ``nested``: field -> the model it holds, where the declared table names one;
- ``program``: what runs when it is built (``tools/config_programs.py``), each guard and
  warning located, with its rule-catalogue anchor (``rule_catalogue/nemo-rl*.toml``), whether a
  hand-written check mirrors it, and whether the replay can evaluate it.

    PYTHONPATH=src/python:. python3 tools/generate_nemo_rl_guards.py           # rewrites it
    PYTHONPATH=src/python:. python3 tools/generate_nemo_rl_guards.py --check   # exit 1 if stale

``recipekit/nemo_rl/config_guards_test.py`` regenerates it and fails on any difference.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from recipekit.upstream.classes import UpstreamSource
from recipekit.upstream.declared import table
from tools.config_programs import Pinned, class_program, live, module_file, source_of
from tools.generated_modules import json_table, pins, reference_dir, write_or_check

TOOL = "tools/generate_nemo_rl_guards.py"
LABEL = "nemo-rl/super-v3.5-posttraining"
OUTPUT = "src/python/recipekit/nemo_rl/generated/config_guards.json"
# The check that evaluates the guards no hand-written check mirrors.
GENERIC = ("recipekit.nemo_rl.config_guards.config_validators_hold",)


def _nested(source: UpstreamSource, qualified: str) -> dict[str, str]:
    """Field -> the pydantic model it holds, where the declared table names exactly one."""
    declared = table(LABEL)[qualified]
    out = {}
    for key, spec in declared.keys.items():
        if len(spec.nested) == 1:
            held = source.config_class(spec.nested[0])
            if held is not None and held.kind == "model":
                out[key] = spec.nested[0]
    return out


def describe(source: UpstreamSource, pinned: Pinned, qualified: str) -> dict[str, Any]:
    config = source.config_class(qualified)
    assert config is not None, qualified
    fields = {name: f for name, f in config.fields.items() if f.init}
    nested = _nested(source, qualified)
    steps = class_program(source, pinned, qualified, frozenset(fields), frozenset(nested))
    return {
        "file": module_file(qualified.split(":")[0]),
        "defaults": {name: f.default or None for name, f in fields.items()},
        "nested": nested,
        "program": live(steps, set(fields)),
    }


def generate(reference: Path | None = None) -> dict[str, str]:
    pinned = Pinned((reference or reference_dir()) / LABEL, "nemo-rl", GENERIC, LABEL)
    source = source_of(pinned.root)
    models = [
        q
        for q in table(LABEL).classes
        if (found := source.config_class(q)) is not None and found.kind == "model"
    ]
    described = {q: describe(source, pinned, q) for q in models}
    # The models that validate something, and every model they nest (for its defaults).
    kept: set[str] = set()
    todo = [q for q, d in described.items() if d["program"]]
    while todo:
        q = todo.pop()
        if q not in kept:
            kept.add(q)
            todo += [n for n in described[q]["nested"].values() if n in described]
    return json_table(
        OUTPUT,
        TOOL,
        {
            LABEL: {
                "pin": pins()[LABEL],
                "note": "by qualified class: defaults (field -> its default's source, null "
                "where there is none or it is no constant), nested (field -> the model it "
                "holds) and program (tools/config_programs.py)",
                "classes": {q: described[q] for q in sorted(kept)},
            }
        },
    )


def main() -> int:
    return write_or_check(generate(), TOOL, __doc__)


if __name__ == "__main__":
    raise SystemExit(main())
