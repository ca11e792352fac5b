#!/usr/bin/env python3
"""Write the checks of NeMo-RL's pydantic config classes at super-v3.5-posttraining, read from
the pinned source (``.reference/nemo-rl/super-v3.5-posttraining``, filled by
``tools/fetch-reference``): ``recipekit/nemo_rl/generated/config_guards.json``.

Every runner of that branch builds its master config as ``MasterConfig(**config)``
(``examples/run_ppo.py``, ``run_sft.py``, ...), and pydantic then validates every model the
config nests: its required fields, and its ``@model_validator(mode="after")`` methods. For each
pydantic model of the declared table (``recipekit/upstream/declared``), and each model a
boundary (below) nests, the table holds:

- ``defaults``: field -> its default's source, null where it has none or it is no constant (a
  nested model's ``default_factory`` is the nested model's own defaults, ``nested``);
- ``required``: the fields without a default, which pydantic refuses to leave out;
- ``forbids_extra``: whether it refuses a key it does not declare (``extra="forbid"``);
- ``nested``: field -> the model it holds (the declared table's, else its annotation's);
- ``program``: what runs when it is built (``tools/config_programs.py``), each guard and
  warning located, with its rule-catalogue anchor (``rule_catalogue/nemo-rl*.toml``), whether a
  hand-written check mirrors it, and whether the replay can evaluate it.

    PYTHONPATH=src/python:. python3 tools/generate_nemo_rl_guards.py           # rewrites it
    PYTHONPATH=src/python:. python3 tools/generate_nemo_rl_guards.py --check   # exit 1 if stale

Some models NeMo-RL validates on its own, not through the master config: each of
``BOUNDARIES`` validates the section at a key path where one of its keys has a value (GRPO's
setup builds ``DynamoConfig`` from ``policy.generation`` with ``backend: dynamo``). The table
lists them under ``boundaries``; the generator stops if the function named no longer calls the
class's ``model_validate``. A model's program reads ``self.model_extra`` (the keys it takes
without declaring them) as a field of that name.

It also writes ``recipekit/nemo_rl/generated/runner_programs.json`` (and
``runner_programs_super_v3.json``, super-v3's ``run_grpo.py``): each pinned runner's
``main`` (every ``examples/`` file that defines one) and the functions it reaches, as programs
(``tools/function_programs.py``) that ``recipekit.upstream.runners`` replays on a config from
where the runner builds its master config: the checks of the runner and of the algorithm's
``setup`` and its helpers, and the keys they read without a default.

``recipekit/nemo_rl/config_guards_test.py`` regenerates both and fails on any difference.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from recipekit.upstream.classes import UpstreamSource
from recipekit.upstream.conditions import keyed_call
from recipekit.upstream.declared import table
from recipekit.upstream.models import MODEL_EXTRA
from tools.config_programs import Pinned, class_program, live, module_file, source_of
from tools.every_run import Modules, key_chain
from tools.function_programs import Functions
from tools.generated_modules import json_table, pins, reference_dir, write_or_check

TOOL = "tools/generate_nemo_rl_guards.py"
LABEL = "nemo-rl/super-v3.5-posttraining"
OUTPUT = "src/python/recipekit/nemo_rl/generated/config_guards.json"
RUNNERS_OUTPUT = "src/python/recipekit/nemo_rl/generated/runner_programs.json"
# super-v3's runner (its master config a TypedDict: the values are the config as loaded).
LABEL_V3 = "nemo-rl/super-v3"
RUNNERS_V3_OUTPUT = "src/python/recipekit/nemo_rl/generated/runner_programs_super_v3.json"
# The checks that evaluate the guards (and warnings) no hand-written check mirrors: the config
# classes', and each pinned runner's.
GENERIC = (
    "recipekit.nemo_rl.config_guards.config_validators_hold",
    "recipekit.nemo_rl.config_guards.runner_refusals",
    "recipekit.nemo_rl.config_guards.runner_warnings",
)
# (model, the key path of the section it validates, the key and value that select it, the
# "module:function" that calls its model_validate, the functions that write into the section
# before: the runner's configure_generation_config, and the caller itself)
BOUNDARIES = (
    (
        "nemo_rl.models.generation.dynamo.config:DynamoConfig",
        "policy.generation",
        "backend",
        "dynamo",
        "nemo_rl.algorithms.grpo:setup",
        ("nemo_rl.models.generation:configure_generation_config",),
    ),
)


def _nested(source: UpstreamSource, qualified: str) -> dict[str, str]:
    """Field -> the pydantic model it holds: where the declared table names exactly one, else
    (a model outside the master config's tree) the model its annotation names."""
    declared = table(LABEL).classes.get(qualified)
    config = source.config_class(qualified)
    assert config is not None, qualified
    candidates = {}
    for key, field in config.fields.items():
        spec = declared.keys.get(key) if declared is not None else None
        if spec is not None:
            candidates[key] = spec.nested[0] if len(spec.nested) == 1 else None
        elif declared is None:
            candidates[key] = _annotated_class(source, field.module, field.annotation)
    out = {}
    for key, held in candidates.items():
        found = source.config_class(held) if held else None
        if held and found is not None and found.kind == "model":
            out[key] = held
    return out


def _annotated_class(source: UpstreamSource, module: str, annotation: str) -> str | None:
    """The class an annotation names: ``X``, ``Annotated[X, ...]``."""
    node = ast.parse(annotation, mode="eval").body
    if isinstance(node, ast.Subscript) and ast.unparse(node.value) == "Annotated":
        first = node.slice.elts[0] if isinstance(node.slice, ast.Tuple) else node.slice
        node = first
    return source.resolve(module, ast.unparse(node)) if isinstance(node, ast.Name) else None


def describe(source: UpstreamSource, pinned: Pinned, qualified: str) -> dict[str, Any]:
    config = source.config_class(qualified)
    assert config is not None, qualified
    fields = {name: f for name, f in config.fields.items() if f.init}
    nested = _nested(source, qualified)
    read = set(fields) | ({MODEL_EXTRA} if config.allows_extra else set())
    steps = class_program(source, pinned, qualified, frozenset(read), frozenset(nested))
    node = source.nodes[qualified]
    forbids = any(k.arg == "extra" and ast.unparse(k.value) == "'forbid'" for k in node.keywords)
    return {
        "file": module_file(qualified.split(":")[0]),
        "defaults": {name: f.default or None for name, f in fields.items()},
        "required": [name for name, f in fields.items() if f.required],
        "forbids_extra": forbids,
        "nested": nested,
        "program": live(steps, read),
    }


def _function(source: UpstreamSource, qualified: str) -> ast.FunctionDef:
    module, _, name = qualified.partition(":")
    tree = source.trees.get(module) or source.trees[f"{module}.__init__"]  # a package's own
    [fn] = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name]
    return fn


def _written(fn: ast.FunctionDef) -> list[str]:
    """The key paths ``fn`` writes into a mapping (``x["a"]["b"] = ...``,
    ``x.setdefault("a", {})["b"] = ...``: ``a.b``), whichever name holds it: what it may have
    changed is unknown to a check that runs after it."""
    found = set()
    for node in ast.walk(fn):
        for target in node.targets if isinstance(node, ast.Assign) else []:
            root, path = key_chain(target)
            # x.setdefault("a", {}) is x["a"] made first: the chain goes on through it.
            while (made := keyed_call(root, "setdefault")) and isinstance(made[1], str):
                root, above = key_chain(made[0])
                path = (*above, made[1], *path)
            if path:
                found.add(".".join(path))
    return sorted(found)


def _boundaries(source: UpstreamSource) -> list[dict[str, Any]]:
    out = []
    for model, path, key, value, caller, preparers in BOUNDARIES:
        fn = _function(source, caller)
        name = model.split(":")[1]
        if f"{name}.model_validate(" not in ast.unparse(fn):
            raise SystemExit(f"{caller} no longer validates {name}: read BOUNDARIES again")
        written = sorted({p for f in (caller, *preparers) for p in _written(_function(source, f))})
        out.append(
            {
                "model": model,
                "path": path,
                "key": key,
                "value": value,
                "by": caller,
                "written_before": written,
            }
        )
    return out


def runners(pinned: Pinned) -> dict[str, Any]:
    """What each pinned runner runs as a script (every ``examples/`` file that is one) and the
    functions it reaches, as programs (``tools/function_programs.py``)."""
    texts = {str(p.relative_to(pinned.root)): p.read_text() for p in pinned.root.rglob("*.py")}
    functions = Functions(Modules(texts), pinned)
    found = {path: functions.runner(path) for path in sorted(texts) if path.startswith("examples/")}
    mains = {path: script for path, script in found.items() if script is not None}
    return {
        "pin": pins()[pinned.label],
        "note": "runners: each runner's main; functions: by qualified name, its file, "
        "parameters and program (tools/function_programs.py)",
        "runners": mains,
        "functions": functions.kept(),
    }


def generate(reference: Path | None = None) -> dict[str, str]:
    pinned = Pinned((reference or reference_dir()) / LABEL, "nemo-rl", GENERIC, LABEL)
    pinned_v3 = Pinned((reference or reference_dir()) / LABEL_V3, "nemo-rl", GENERIC, LABEL_V3)
    source = source_of(pinned.root)
    boundaries = _boundaries(source)
    models = [
        q
        for q in table(LABEL).classes
        if (found := source.config_class(q)) is not None and found.kind == "model"
    ]
    described = {q: describe(source, pinned, q) for q in models}
    # Every model of the declared table, and each boundary's whole tree.
    kept: set[str] = set()
    todo = [*described, *(b["model"] for b in boundaries)]
    while todo:
        q = todo.pop()
        if q not in kept:
            kept.add(q)
            described.setdefault(q, describe(source, pinned, q))
            todo += list(described[q]["nested"].values())
    table_of_models = {
        LABEL: {
            "pin": pins()[LABEL],
            "note": "by qualified class: defaults (field -> its default's source, null "
            "where there is none or it is no constant), required, forbids_extra, nested "
            "(field -> the model it holds) and program (tools/config_programs.py); "
            "boundaries: the models NeMo-RL validates a section with on its own",
            "boundaries": boundaries,
            "classes": {q: described[q] for q in sorted(kept)},
        }
    }
    # Each function's entry on one line: the tables are large, and every plan reads one.
    return (
        json_table(RUNNERS_OUTPUT, TOOL, {LABEL: runners(pinned)}, 4)
        | json_table(RUNNERS_V3_OUTPUT, TOOL, {LABEL_V3: runners(pinned_v3)}, 4)
        | json_table(OUTPUT, TOOL, table_of_models)
    )


def main() -> int:
    return write_or_check(generate(), TOOL, __doc__)


if __name__ == "__main__":
    raise SystemExit(main())
