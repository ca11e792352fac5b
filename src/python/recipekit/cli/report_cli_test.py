"""``recipekit report``: one HTML file for a stage or a chain, with the sections review needs."""

from __future__ import annotations

import re
from pathlib import Path

from click.testing import CliRunner

from recipekit.cli import recipekit_cli


def _sections(page: Path) -> list[str]:
    return re.findall(r'<section id="([^"]+)">', page.read_text())


def test_a_stage_report_has_its_plan_memory_layout_and_lineage(tmp_path: Path) -> None:
    page = tmp_path / "rlvr.html"
    result = CliRunner().invoke(
        recipekit_cli.cli, ["report", "recipes.super35.rl:rlvr", "--html", str(page)]
    )
    assert result.exit_code == 0, result.output
    assert _sections(page) == ["lineage", "plan", "memory", "layout"]
    text = page.read_text()
    assert "rlvr: RLVR" in text and 'id="stage:rlvr"' in text
    assert "<script" not in text and "http://" not in text.replace(
        "http://www.w3.org/", ""
    ), "self-contained: nothing to fetch"


def test_a_chain_report_has_every_planned_stage(tmp_path: Path) -> None:
    page = tmp_path / "super35.html"
    result = CliRunner().invoke(
        recipekit_cli.cli, ["report", "recipes/super35", "--html", str(page)]
    )
    assert result.exit_code == 0, result.output
    sections = _sections(page)
    assert sections[0] == "lineage"
    assert {"plan-rlvr", "memory-rlvr", "layout-rlvr", "plan-sft", "plan-eval"} <= set(sections)


def test_an_unknown_stage_is_one_line_with_a_suggestion(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        recipekit_cli.cli, ["report", "rlvx", "--html", str(tmp_path / "x.html")]
    )
    assert result.exit_code != 0
    assert "did you mean 'rlvr'" in result.output
