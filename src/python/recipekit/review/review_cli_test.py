"""The review commands of ``recipekit``: snapshots, diff (and explain, below)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import recipes
from recipekit.cli.recipekit_cli import cli

ROOT = Path(recipes.__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _in_checkout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


def test_snapshots_match() -> None:
    result = CliRunner().invoke(cli, ["snapshots", "--root", str(ROOT)])
    assert result.exit_code == 0, result.output
    assert "snapshots match" in result.output


def test_diff_two_targets_as_text_and_json() -> None:
    a, b = "recipes.super3.dapo:dapo_gb200", "recipes.super3.dapo:dapo_b200"
    text = CliRunner().invoke(cli, ["diff", a, b])
    assert text.exit_code == 0, text.output
    assert "~ config.policy.generation.vllm_cfg.tensor_parallel_size: 4 -> 8" in text.output
    as_json = CliRunner().invoke(cli, ["diff", a, b, "--format", "json"])
    body = json.loads(as_json.output)
    changes = {c["key"]: c for c in body["targets"][f"{a} -> {b}"]}
    assert changes["config.cluster.num_nodes"] == {
        "key": "config.cluster.num_nodes",
        "kind": "changed",
        "old": 5,
        "new": 3,
    }


def test_diff_unknown_revision_is_a_user_error() -> None:
    result = CliRunner().invoke(cli, ["diff", "no-such-rev-xyz"])
    assert result.exit_code == 2
    assert "not a git revision" in result.output


def test_explain_text_and_json() -> None:
    target = "recipes.super3.dapo:dapo_h100"
    text = CliRunner().invoke(cli, ["explain", target, "policy.generation.vllm_cfg.max_model_len"])
    assert text.exit_code == 0, text.output
    assert "derived" in text.output
    assert "policy.max_total_sequence_length = 1024: variant" in text.output
    as_json = CliRunner().invoke(
        cli, ["explain", target, "grpo.val_batch_size", "--format", "json"]
    )
    body = json.loads(as_json.output)
    assert (body["kind"], body["value"]) == ("variant", 256)


def test_import_yaml_then_compile(reference_dir: Path, tmp_path: Path) -> None:
    yaml_file = (
        reference_dir / "nemo-rl/super-v3/examples/configs/recipes/llm/"
        "dapo17k_nemotron_super_120b_b200_3x8_noncolocated.yaml"
    )
    module = tmp_path / "b200.py"
    imported = CliRunner().invoke(cli, ["import-yaml", str(yaml_file), "--out", str(module)])
    assert imported.exit_code == 0, imported.output
    compiled = CliRunner().invoke(cli, ["compile", str(module)])
    assert compiled.exit_code == 0, compiled.output
    assert json.loads(compiled.output)["cluster"] == {"gpus_per_node": 8, "num_nodes": 3}
