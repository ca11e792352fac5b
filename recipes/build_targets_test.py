"""Every stage target's ``base=`` in a BUILD file is the base image its stage's framework runs
in: the image a stage ships on is never chosen apart from the framework that needs it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from recipekit.loading import load_object

RECIPES = Path(__file__).resolve().parent


def _recipe_stages(build: Path) -> list[dict[str, Any]]:
    """The ``recipe_stage(...)`` calls of a BUILD file, read by running it with stand-ins for
    the Pants symbols it uses (BUILD files are Python syntax)."""
    calls: list[dict[str, Any]] = []

    def ignore(*_: Any, **__: Any) -> None:
        return None

    def recipe_stage(**fields: Any) -> None:
        calls.append(fields)

    symbols: dict[str, Any] = {"recipe_stage": recipe_stage}
    for name in ("python_sources", "python_tests", "files", "target", "resource"):
        symbols[name] = ignore
    exec(compile(build.read_text(), str(build), "exec"), symbols)
    return calls


CALLS = [call for build in sorted(RECIPES.glob("*/BUILD")) for call in _recipe_stages(build)]


def test_every_recipe_folder_declares_its_stages() -> None:
    assert {call["stage"].split(".")[1] for call in CALLS} == {"super3", "super35"}


@pytest.mark.parametrize("call", CALLS, ids=[call["name"] for call in CALLS])
def test_the_base_of_a_stage_target_is_its_frameworks_image(call: dict[str, Any]) -> None:
    stage = load_object(call["stage"])
    assert call["base"] == stage.framework.image, (
        f"{call['name']}: BUILD says base={call['base']!r}, but {stage.framework.name} "
        f"runs in {stage.framework.image!r}"
    )
