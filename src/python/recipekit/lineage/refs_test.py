"""Artifact names and versions are matched whole: "$" also matches before a final newline, and
a name becomes a folder in the store (issue 39)."""

from __future__ import annotations

import pytest

from recipekit.errors import FieldError, RecipeError
from recipekit.lineage.refs import ArtifactRef, artifact_name_problem, parse_ref


@pytest.mark.parametrize("end", ["\n", "\r", "\x85", "\u2028", "\u2029"])
def test_a_name_with_a_line_end_anywhere_is_refused(end: str) -> None:
    for name in (f"model{end}", f"{end}model", f"mo{end}del"):
        problem = artifact_name_problem(name)
        assert problem.startswith("an artifact name holds "), problem
        assert f"at position {name.index(end)}" in problem


def test_valid_names_pass() -> None:
    for name in ("super35-sft-model", "a", "v1.2_final"):
        assert artifact_name_problem(name) == ""


@pytest.mark.parametrize("selector", ["v1\n", "step-3\n", "latest\n", "v\u20281"])
def test_a_selector_with_a_line_end_is_refused(selector: str) -> None:
    with pytest.raises(FieldError, match="a version holds"):
        ArtifactRef("model", selector)


def test_a_reference_reads_whole() -> None:
    # parse_ref strips the text a user typed; what is inside it is not stripped.
    assert parse_ref(" model:v3\n").version == 3
    with pytest.raises(RecipeError, match=r"inputs\.model = 'mo\\ndel:v1': an artifact name holds"):
        parse_ref("mo\ndel:v1", path="inputs.model")
