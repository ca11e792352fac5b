"""The stages that read a data artifact, found from the pipeline's recipe folder: their Gym
configs say which agents a row may name, and their model's tokenizer counts prompt tokens."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from recipekit.errors import RecipeError


def reading_stages(pipeline: Any, artifact: str) -> list[Any]:
    """The recipe Stages of ``pipeline`` that read ``artifact`` (empty where the recipe folder
    cannot be loaded here: the agents are then checked at plan, from the recorded counts)."""
    from recipekit.pipeline.chain import load_chain

    module = sys.modules.get(pipeline.module)
    file = getattr(module, "__file__", None)
    if file is None:
        return []
    folder = Path(file).resolve().parent
    root = Path.cwd().resolve()
    if root not in folder.parents:
        return []
    try:
        chain = load_chain(folder.relative_to(root), root)
    except RecipeError:
        return []
    return [
        entry.stage
        for entry in chain.stages.values()
        if entry.stage is not None
        and any(ref.name == artifact for ref in entry.lineage.artifact_inputs().values())
    ]


def stage_tokenizer(root: Path, stages: Sequence[Any]) -> Path | None:
    """The tokenizer.json of the model the first reading stage starts from, where the store
    holds that model's latest version with one (``run.model``)."""
    for stage in stages:
        lineage = getattr(stage, "lineage", None)
        model = lineage.artifact_inputs().get("model") if lineage is not None else None
        if model is None:
            continue
        found: Path = root / model.name / model.selector / "tokenizer.json"
        if found.is_file():
            return found
    return None
