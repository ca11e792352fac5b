"""Write src/python/recipekit/megatron_bridge/generated/presets.json: the names a Megatron-Bridge
stage's ``mixed_precision`` string may take, read with ``ast`` from the pinned
``megatron/bridge/training/mixed_precision.py``.

``ConfigContainer.mixed_precision`` is a ``MixedPrecisionConfig`` or a string that
``get_mixed_precision_config`` looks up in ``MIXED_PRECISION_RECIPES`` after turning ``-`` into
``_``, raising ValueError for a name it lacks. The registry holds each function decorated with
``@register``, by its name (and the same name with hyphens). recipekit reads the JSON, never
``.reference/``; ``megatron_bridge/presets_test.py`` regenerates it and compares.
"""

from __future__ import annotations

import ast

from tools.generated_modules import json_table, pins, reference_dir, write_or_check

TOOL = "tools/generate_presets.py"
OUTPUT = "src/python/recipekit/megatron_bridge/generated/presets.json"
SOURCE = "megatron-bridge/0.6.2-wheel"
FILE = "megatron/bridge/training/mixed_precision.py"


def registered(text: str) -> dict[str, int]:
    """Each function decorated ``@register``, with its line."""
    return {
        node.name: node.lineno
        for node in ast.parse(text).body
        if isinstance(node, ast.FunctionDef)
        and any(isinstance(d, ast.Name) and d.id == "register" for d in node.decorator_list)
    }


def refused_at(text: str) -> int:
    """The line where ``get_mixed_precision_config`` raises for a name it lacks."""
    for node in ast.parse(text).body:
        if isinstance(node, ast.FunctionDef) and node.name == "get_mixed_precision_config":
            raises = [n.lineno for n in ast.walk(node) if isinstance(n, ast.Raise)]
            if raises:
                return raises[0]
    raise SystemExit(f"{SOURCE}/{FILE}: no raise in get_mixed_precision_config")


def generate() -> dict[str, str]:
    text = (reference_dir() / SOURCE / FILE).read_text(encoding="utf-8")
    table = {"file": FILE, "refused_at": refused_at(text), "mixed_precision": registered(text)}
    return json_table(OUTPUT, TOOL, {SOURCE: {"commit": pins()[SOURCE], **table}})


def main() -> int:
    return write_or_check(generate(), TOOL, __doc__)


if __name__ == "__main__":
    raise SystemExit(main())
