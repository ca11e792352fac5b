"""A recipe named the way Pants names its target (``recipes/super35:rlvr``) is refused with the
recipe that target runs, read from the folder's BUILD file."""

from __future__ import annotations

from pathlib import Path

import pytest

from recipekit.errors import RecipeError
from recipekit.loading import load_object

BUILD = """
recipe_stage(name="rlvr", stage="recipes.super35.rl:rlvr", base=RL)
recipe_stage(
    name="teacher-vision",
    stage="recipes.super35.teachers:teacher_vision",
    base=RL,
)
"""


def _refusal(target: str) -> str:
    with pytest.raises(RecipeError) as raised:
        load_object(target)
    (issue,) = raised.value.issues
    return issue.render()


def test_a_pants_address_names_the_recipe_it_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "recipes/super35").mkdir(parents=True)
    (tmp_path / "recipes/super35/BUILD").write_text(BUILD)
    monkeypatch.chdir(tmp_path)
    found = _refusal("recipes/super35:teacher-vision")
    assert "give recipes.super35.teachers:teacher_vision" in found
    assert "pants run recipes/super35:teacher-vision" in found
    assert "did you mean 'rlvr'" in _refusal("recipes/super35:rlvx")
    assert "give MODULE:ATTR" in _refusal("recipes/elsewhere:x")
