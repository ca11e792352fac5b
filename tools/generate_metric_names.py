"""Write src/python/recipekit/nemo_rl/generated/metric_names.json: the metric names each pinned
NeMo-RL training loop reports itself, by the prefix ``checkpointing.metric_name`` ranks with
(``train:`` and ``val:``), read with ``ast`` from the loop's module.

A loop ranks checkpoints by ``checkpointing.metric_name`` and, at the first save, raises when the
name is not among the metrics it collected (grpo.py's ``Metric ... not found in ... metrics``;
sft.py, dpo.py, distillation.py and ppo.py alike). What it collects is partly the loop's own
names and partly what its environment, loss function and rollouts report at run time, so the
whole set is known only to the running job. The loop's own names are in the source:

- ``val``: the string keys of a dict literal assigned to ``val_metrics``, of a subscript
  assignment to it, and of a literal passed to its ``update``, in the module's functions whose
  name starts with ``validate``;
- ``train``: the same for ``metrics`` in its functions whose name ends with ``_train``.

``nemo_rl.rules.checkpoint_ranking`` warns about a ranking metric that is close to one of these
names and is none of them (a typo the first save would raise on, hours into the run).
recipekit reads the JSON, never ``.reference/``; ``rules/checkpoint_ranking_test.py``
regenerates it and compares.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tools.generated_modules import json_table, pins, reference_dir, write_or_check

TOOL = "tools/generate_metric_names.py"
OUTPUT = "src/python/recipekit/nemo_rl/generated/metric_names.json"
# The loops each pinned label runs that rank checkpoints by a metric.
LOOPS = {
    "nemo-rl/super-v3": ("grpo",),
    "nemo-rl/super-v3.5-posttraining": ("grpo", "sft", "dpo", "rm", "distillation", "ppo"),
}
# prefix -> (the dict's name, whether a function of the loop fills it)
_FILLED = {
    "val": ("val_metrics", lambda name: name.startswith("validate")),
    "train": ("metrics", lambda name: name.endswith("_train")),
}


def _string_keys(node: ast.AST | None) -> Iterator[str]:
    if isinstance(node, ast.Dict):
        for key in node.keys:
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                yield key.value


def _names(function: ast.AST, dict_name: str) -> Iterator[str]:
    """The keys ``function`` gives the dict named ``dict_name`` itself."""
    for node in ast.walk(function):
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name) and target.id == dict_name:
                    yield from _string_keys(node.value)
                elif (
                    isinstance(target, ast.Subscript)
                    and isinstance(target.value, ast.Name)
                    and target.value.id == dict_name
                    and isinstance(target.slice, ast.Constant)
                    and isinstance(target.slice.value, str)
                ):
                    yield target.slice.value
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "update"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == dict_name
            and node.args
        ):
            yield from _string_keys(node.args[0])


def loop_names(text: str) -> dict[str, list[str]]:
    """The metric names a loop module reports itself, by prefix."""
    tree = ast.parse(text)
    functions = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    return {
        prefix: sorted({key for f in functions if fills(f.name) for key in _names(f, name)})
        for prefix, (name, fills) in _FILLED.items()
    }


def _loop(root: Path, label: str, loop: str) -> dict[str, Any]:
    file = f"nemo_rl/algorithms/{loop}.py"
    path = root / label / file
    if not path.is_file():
        raise SystemExit(
            f"{label}/{file} is not under {root}: run tools/fetch-reference, or "
            f"drop {loop!r} from LOOPS[{label!r}] if the pin no longer has it"
        )
    return {"file": file, **loop_names(path.read_text())}


def generate() -> dict[str, str]:
    commits, root = pins(), reference_dir()
    data = {
        label: {
            "commit": commits[label],
            "loops": {loop: _loop(root, label, loop) for loop in loops},
        }
        for label, loops in sorted(LOOPS.items())
    }
    return json_table(OUTPUT, TOOL, data)


def main() -> int:
    return write_or_check(generate(), TOOL, __doc__)


if __name__ == "__main__":
    raise SystemExit(main())
