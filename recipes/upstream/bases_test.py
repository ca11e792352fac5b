"""Every typed base in recipes/upstream/ is what `import-yaml --base` writes from its pinned
file today: same values, same types, same provenance (compared as Python syntax trees, so that
formatting and import order do not matter and everything else does)."""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path
from types import ModuleType

import pytest

import recipes.upstream
from recipekit.importers.nemo_rl_yaml import import_yaml
from recipekit.importers.upstream import upstream_of

CHECKOUT = Path(__file__).resolve().parents[2]


def _tree(source: str) -> str:
    """The module's syntax tree, names in an import sorted (ruff's isort orders them its way)."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            node.names.sort(key=lambda alias: alias.name)
    return ast.dump(tree)


def _bases() -> list[ModuleType]:
    found = []
    for info in pkgutil.walk_packages(recipes.upstream.__path__, "recipes.upstream."):
        module = importlib.import_module(info.name)
        if hasattr(module, "UPSTREAM"):
            found.append(module)
    return found


BASES = {module.__name__: module for module in _bases()}


def test_every_base_is_found() -> None:
    # The two NeMo-RL configs the Super recipes start from.
    assert sorted(BASES) == [
        "recipes.upstream.nemo_rl_main.vlm_grpo_super_omni_16n8g_async_gym",
        "recipes.upstream.nemo_rl_super_v3.grpo_math_1b",
    ]


@pytest.mark.parametrize("name", sorted(BASES))
def test_base_reads_as_import_yaml_writes_it(name: str, reference_dir: Path) -> None:
    module = BASES[name]
    pinned = reference_dir / module.UPSTREAM
    upstream = upstream_of(pinned, CHECKOUT)
    written = import_yaml(pinned, schema=module.SCHEMA, upstream=upstream).source
    assert module.__file__
    committed = Path(module.__file__).read_text()
    assert _tree(committed) == _tree(written), (
        f"{name} is not what `recipekit import-yaml --base {pinned}` writes: rewrite it with "
        "--out, then review the change"
    )

