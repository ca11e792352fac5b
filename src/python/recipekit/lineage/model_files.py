"""Whether a file a stage reads (a tokenizer, a chat template) is its model's own.

A tokenizer or chat template taken from another model than the weights tokenizes silently
wrong: no framework compares them. A stage that takes them from its model input keeps them the
same from SFT through RL to evaluation, since each stage's model is its producer's output and
carries those files along.
"""

from __future__ import annotations

from recipekit.lineage.store import stored_input


def belongs_to_model(path: str, model: str) -> bool:
    """``path`` is ``model`` itself, a file inside it, or inside the same store version."""
    if path == model or path.startswith(model.rstrip("/") + "/"):
        return True
    here, there = stored_input(path), stored_input(model)
    return here is not None and here == there


__all__ = ["belongs_to_model"]
