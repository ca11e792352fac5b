"""Task names are checked as the launcher resolves them, against its 0.2.6 registry."""

from __future__ import annotations

import pytest

from recipekit.errors import RecipeError
from recipekit.nemo_evaluator.schema import Task
from recipekit.nemo_evaluator.task_registry import TASKS_BY_HARNESS
from recipekit.nemo_evaluator.tasks import HARNESSES_BY_TASK, task_problem


def test_the_registry_is_the_launchers_421_tasks_in_23_harnesses() -> None:
    assert len(TASKS_BY_HARNESS) == 23
    assert sum(len(names) for names in TASKS_BY_HARNESS.values()) == 421
    assert HARNESSES_BY_TASK["ns_gpqa"] == ("nemo_skills",)


@pytest.mark.parametrize("name", ["ns_gpqa", "nemo_skills.ns_gpqa", "lm-evaluation-harness.mmlu"])
def test_a_task_the_launcher_finds_is_accepted(name: str) -> None:
    assert task_problem(name) == ("", "")
    assert Task(name=name).name == name


def test_every_harness_task_pair_is_accepted_qualified() -> None:
    rejected = [
        f"{harness}.{name}"
        for harness, names in TASKS_BY_HARNESS.items()
        for name in names
        if task_problem(f"{harness}.{name}")[0]
    ]
    assert rejected == []


def test_a_name_in_two_harnesses_must_say_which() -> None:
    message, hint = task_problem("gpqa_diamond")
    assert message == "2 harnesses have a task of this name"
    assert "'simple_evals.gpqa_diamond'" in hint


def test_a_misspelt_task_fails_at_its_key_with_the_closest_names() -> None:
    with pytest.raises(RecipeError) as caught:
        Task(name="ns_gpqq")
    (issue,) = caught.value.issues
    assert issue.path == "evaluation.tasks[].name"
    assert issue.message == "not a task of the launcher's registry"
    assert issue.hint == "did you mean 'ns_gpqa'?"


def test_a_misspelt_qualified_task_is_matched_against_qualified_names() -> None:
    _, hint = task_problem("nemo_skill.ns_ifbench")
    assert hint.startswith("did you mean 'nemo_skills.ns_ifbench'")


def test_nothing_close_points_at_the_launchers_list() -> None:
    message, hint = task_problem("zzzzzzzz")
    assert message == "not a task of the launcher's registry"
    assert "nemo-evaluator-launcher ls tasks" in hint


def test_more_than_one_dot_is_not_a_task_name() -> None:
    assert task_problem("a.b.c")[0] == "a task is named 'task' or 'harness.task'"
