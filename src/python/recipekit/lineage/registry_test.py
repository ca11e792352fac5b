"""`recipekit data import` / `model import` with real wandb, offline: read back from its files."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from recipekit.cli import recipekit_cli
from recipekit.lineage.registry import default_artifact, importable
from recipekit.lineage.tracking import read_offline_run
from recipes.super35.lineage import IMPORTS, SUPER35


@pytest.fixture
def offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    # Everything wandb writes stays in tmp_path; no key, no network.
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    for var in ("WANDB_PROJECT", "WANDB_ENTITY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path))
    for var, sub in (("WANDB_CONFIG_DIR", "config"), ("WANDB_CACHE_DIR", "cache"),
                     ("WANDB_DATA_DIR", "data"), ("WANDB_ARTIFACT_DIR", "artifacts")):  # fmt: skip
        monkeypatch.setenv(var, str(tmp_path / sub))
    return tmp_path


def _recipekit(*args: str) -> Result:
    return CliRunner().invoke(recipekit_cli.cli, list(args))


def _run_dir(result: Result) -> Path:
    found = re.search(r"^W&B run: (\S+)$", result.stdout, re.MULTILINE)
    assert found, result.stdout
    return Path(found.group(1))


def test_defaults_are_the_pipelines_imports() -> None:
    # The seed's CLI table, as recipes/super35/lineage.py declares it (not written twice).
    assert {
        (group, kind): default_artifact(SUPER35, group, kind)
        for group, kinds in (("data", ("sft", "rl")), ("model", ("pretrain", "sft", "rl")))
        for kind in kinds
    } == {
        ("data", "sft"): "super35-sft-data",
        ("data", "rl"): "super35-rl-rlvr-data",
        ("model", "pretrain"): "super35-pretrain-model",
        ("model", "sft"): "super35-sft-model",
        ("model", "rl"): "super35-rl-rlvr-model",
    }
    assert {i.artifact for i in IMPORTS if "data import" in i.command} <= set(
        importable(SUPER35, "data")
    )
    # A variant's artifact keeps its type (lineage.py names the tiny configs' "-tiny").
    assert "super35-pretrain-model-tiny" in importable(SUPER35, "model")


def test_data_import_rl_references_train_and_val(offline: Path) -> None:
    train, val = offline / "train.jsonl", offline / "val.jsonl"
    train.write_text('{"prompt": "1+1"}\n')
    val.write_text('{"prompt": "2+2"}\n')
    result = _recipekit("data", "import", "rl", str(train), "--val", str(val))
    assert result.exit_code == 0, result.output
    assert f"wandb sync {_run_dir(result)}" in result.stdout
    recorded = read_offline_run(_run_dir(result))
    [artifact] = recorded.logged
    assert (artifact.name, artifact.type, artifact.aliases) == (
        "super35-rl-rlvr-data",
        "dataset",
        ("latest",),
    )
    # References to the files where they are: W&B uploads nothing.
    assert sorted(artifact.references) == [train.as_uri(), val.as_uri()]
    assert artifact.metadata["command"] == "super35 data import rl PATH"
    assert recorded.job_type == "import"


def test_model_import_with_a_name_registers_that_artifact(offline: Path) -> None:
    checkpoint = offline / "ckpt" / "iter_0000200"
    checkpoint.mkdir(parents=True)
    (checkpoint / "model.safetensors").write_bytes(b"weights")
    result = _recipekit(
        "model", "import", "sft", str(offline / "ckpt"), "--name", "super35-sft-stage1-model"
    )
    assert result.exit_code == 0, result.output
    [artifact] = read_offline_run(_run_dir(result)).logged
    assert (artifact.name, artifact.type) == ("super35-sft-stage1-model", "model")
    assert artifact.references == ((checkpoint / "model.safetensors").as_uri(),)
    default = _recipekit("model", "import", "rl", str(offline / "ckpt"))
    assert default.exit_code == 0, default.output
    [artifact] = read_offline_run(_run_dir(default)).logged
    assert artifact.name == "super35-rl-rlvr-model"


def test_mistakes_are_messages_and_record_nothing(offline: Path) -> None:
    data = offline / "energon"
    data.mkdir()
    cases = {
        ("data", "import", "sft", str(offline / "missing")): (
            f"data path = '{offline}/missing': does not exist"
        ),
        ("data", "import", "sft", str(data), "--name", "super35-sft-dta"): (
            "--name = 'super35-sft-dta': no stage of the super35 pipeline reads or publishes "
            "this artifact (did you mean 'super35-sft-data'"
        ),
        ("data", "import", "sft", str(data), "--name", "super35-sft-model"): (
            "is a model artifact, not a dataset (register it with `model import`)"
        ),
        ("model", "import", "sft", str(data), "--mode", "online"): (
            "tracking: WANDB_API_KEY: is not set"
        ),
    }
    for args, message in cases.items():
        result = _recipekit(*args)
        assert result.exit_code == 2, result.output
        assert "Traceback" not in result.output
        assert message in result.stderr, result.stderr
    assert not (offline / "wandb").exists()


def test_help_explains_with_the_pipelines_names() -> None:
    for args, default in (
        (("data", "import", "sft"), "super35-sft-data"),
        (("data", "import", "rl"), "super35-rl-rlvr-data"),
        (("model", "import", "pretrain"), "super35-pretrain-model"),
    ):
        result = _recipekit(*args, "--help")
        assert result.exit_code == 0, result.output
        text = " ".join(result.stdout.split())
        assert f"Registers {default} by default (super35 lineage)." in text
        assert "nothing is uploaded" in text
    assert "super35-sft-stage2-data" in _recipekit("data", "import", "sft", "--help").stdout
