"""An artifact store with W&B offline in tmp_path, run from the checkout: `data import rl` finds
the stages that read the data from the recipe folder (recipes/super35), relative to it."""

from __future__ import annotations

from pathlib import Path

import pytest

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
