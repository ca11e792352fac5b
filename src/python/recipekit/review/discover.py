"""Every stage the recipe modules define, found by reading the modules, not by a list.

A stage belongs to the module that *assigns* it at top level (``dapo_b200 = dapo_gb200...``);
a stage imported from another module is that module's, so it is found once.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import attrs

from recipekit.stage import Stage

RECIPES_PACKAGE = "recipes"


@attrs.frozen
class StageRef:
    module: str
    attr: str
    stage: Stage
    source: Path

    @property
    def target(self) -> str:
        """What ``plan``, ``diff`` and ``explain`` accept: ``recipes.super3.dapo:dapo_gb200``."""
        return f"{self.module}:{self.attr}"

    @property
    def folder(self) -> Path:
        return self.source.parent

    @property
    def snapshot_dir(self) -> Path:
        return self.folder / "snapshots" / self.stage.name


def recipe_modules(root: Path) -> list[tuple[str, Path]]:
    """``(module name, file)`` of every recipe module under ``root/recipes`` (tests excluded)."""
    found = []
    for path in sorted((root / RECIPES_PACKAGE).rglob("*.py")):
        rel = path.relative_to(root)
        if path.name.endswith("_test.py") or path.name == "conftest.py":
            continue
        if "snapshots" in rel.parts or "__pycache__" in rel.parts:
            continue
        if not _assigns_names(path):
            continue
        parts = list(rel.with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found.append((".".join(parts), path))
    return found


def discover_stages(root: Path) -> list[StageRef]:
    """Every Stage assigned at the top level of a recipe module, in file and definition order."""
    refs = []
    for module_name, path in recipe_modules(root):
        names = _assigns_names(path)
        module = importlib.import_module(module_name)
        for name in names:
            value = getattr(module, name, None)
            if isinstance(value, Stage):
                refs.append(StageRef(module_name, name, value, path))
    return refs


def _assigns_names(path: Path) -> list[str]:
    """Names assigned at the top level of ``path``, in order (imports are not assignments)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    names: list[str] = []
    for node in tree.body:
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets = [node.target]
        for target in targets:
            if isinstance(target, ast.Name) and target.id not in names:
                names.append(target.id)
    return names
