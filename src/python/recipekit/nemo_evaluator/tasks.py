"""Which task names the launcher accepts.

A task is named as the launcher's ``get_task_from_mapping`` takes it: ``task`` when exactly one
harness has it, ``harness.task`` always. A misspelt name would otherwise fail only once the
launcher runs, after the queue wait; here it fails at plan time with the closest names.
"""

from __future__ import annotations

from typing import Any

from recipekit.errors import did_you_mean
from recipekit.nemo_evaluator.task_registry import TASKS_BY_HARNESS


def _harnesses_by_task() -> dict[str, tuple[str, ...]]:
    found: dict[str, tuple[str, ...]] = {}
    for harness, names in TASKS_BY_HARNESS.items():
        for name in names:
            found[name] = (*found.get(name, ()), harness)
    return found


HARNESSES_BY_TASK = _harnesses_by_task()
QUALIFIED = frozenset(f"{h}.{t}" for t, hs in HARNESSES_BY_TASK.items() for h in hs)


def task_problem(name: str) -> tuple[str, str]:
    """Why the launcher would not find ``name`` (message, hint), or ("", "") when it would."""
    if name.count(".") > 1:
        return "a task is named 'task' or 'harness.task'", ""
    if "." in name:
        if name in QUALIFIED:
            return "", ""
        return "not a task of the launcher's registry", _close(name, QUALIFIED)
    harnesses = HARNESSES_BY_TASK.get(name)
    if harnesses is None:
        return "not a task of the launcher's registry", _close(name, HARNESSES_BY_TASK)
    if len(harnesses) > 1:
        # The launcher refuses the bare name ("there are multiple tasks named ...").
        named = " or ".join(repr(f"{h}.{name}") for h in harnesses)
        return f"{len(harnesses)} harnesses have a task of this name", f"write {named}"
    return "", ""


def _close(name: str, choices: Any) -> str:
    hint = did_you_mean(name, choices)
    if hint.startswith("did you mean"):
        return hint
    return (
        f"none of its {len(HARNESSES_BY_TASK)} tasks is close; `nemo-evaluator-launcher ls tasks`"
    )
