"""Fixtures every test may use: where the shared upstream reference configs are."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def _reference_dir() -> Path:
    # Set by pants.toml ([test] extra_env_vars) to <buildroot>/../shared/reference.
    configured = os.environ.get("RECIPEKIT_REFERENCE_DIR", "")
    candidates = [Path(configured)] if configured else []
    candidates.append(Path(__file__).resolve().parent.parent / "shared" / "reference")
    for path in candidates:
        if (path / "README.md").is_file():
            return path
    raise RuntimeError(
        "the shared reference configs are missing: set RECIPEKIT_REFERENCE_DIR to "
        "<checkout>/../shared/reference"
    )


@pytest.fixture(scope="session")
def reference_dir() -> Path:
    return _reference_dir()
