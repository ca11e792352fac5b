"""An artifact store with W&B offline in tmp_path, run from the checkout: `data import rl` finds
the stages that read the data from the recipe folder (recipes/super35), relative to it. And the
helpers the data tests share: the CLI in-process, JSONL written, a tokenizer built here, a
refused import's checks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from recipekit.lineage.store import init_store


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path))
    for var in ("WANDB_CONFIG_DIR", "WANDB_CACHE_DIR", "WANDB_DATA_DIR", "WANDB_ARTIFACT_DIR"):
        monkeypatch.setenv(var, str(tmp_path / "wandb-files" / var.lower()))
    monkeypatch.chdir(Path(__file__).resolve().parents[4])
    root = tmp_path / "artifacts"
    init_store(root)
    return root


def run_cli(*args: str) -> Result:
    """``recipekit ARGS`` in-process."""
    from recipekit.cli import recipekit_cli

    return CliRunner().invoke(recipekit_cli.cli, list(args))


def tree(root: Path) -> list[str]:
    """Every path under ``root``: what a refused import must leave as it was."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    """``rows`` one a line: JSON values, or strings written as they are (a broken line)."""
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def word_tokenizer(path: Path, words: list[str]) -> Path:
    """A tokenizer.json of one token per whitespace-separated word, built with the tokenizers
    library (``[UNK]`` for any other word)."""
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace

    vocab = {"[UNK]": 0, **{word: number for number, word in enumerate(words, start=1)}}
    built = tokenizers.Tokenizer(WordLevel(vocab, unk_token="[UNK]"))
    built.pre_tokenizer = Whitespace()
    built.save(str(path))
    return path


def assert_refused(
    result: Result, file: Path, line: int, said: str, before: list[str], store: Path
) -> None:
    """An import refused with exit 2, its last line ``error: FILE:LINE: ...`` saying ``said``,
    no traceback, and the store as it was."""
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    last = result.stderr.strip().splitlines()[-1]
    where = f"{file}:{line}: " if line else f"{file}: "
    assert last.startswith(f"error: {where}"), last
    assert said in last, last
    assert tree(store) == before
