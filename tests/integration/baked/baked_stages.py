"""The head-launched SFT stage of the launch-kind tests, for a baked image.

A baked image holds the plan of the stage as built, without ``--set`` overrides, so the stage's
paths are the test's own: under ``RECIPEKIT_BAKED_ROOT``, which the test sets for the launcher
on the host (``artifacts``, ``submit``). Inside the job the launcher reads the run directory's
plan and never loads this file.
"""

from __future__ import annotations

import os
from pathlib import Path

from recipekit.loading import load_object

# Loaded by path (the launcher Pex holds recipekit and recipes, not the tests).
_head = load_object(f"{Path(__file__).resolve().parent.parent / 'slurm' / 'fake_stages.py'}:head")
_ROOT = os.environ.get("RECIPEKIT_BAKED_ROOT", "/nonexistent/recipekit-baked-root")

head = _head.with_values(
    {
        "checkpoint.pretrained_checkpoint": f"{_ROOT}/shared/artifacts/model",
        "dataset.path": f"{_ROOT}/shared/artifacts/data",
        "checkpoint.save": f"{_ROOT}/shared/checkpoints/head",
    },
    name="sft-head-baked",
)
