"""The Stage that runs a pipeline's stage, found from the pipeline alone.

A stage planned on its own (``pants run recipes/super35:teacher-reasoning -- plan``) checks the
steps it selects against the stage that saves them, so it needs that stage's recipe. The
recipes of a pipeline's stages live in the package of the module that built the pipeline
(``recipes/super35/lineage.py`` -> ``recipes.super35``), and a recipe module usually imports
the recipes it builds on (``teachers.py`` imports ``rlvr``): the modules already loaded are
searched first, and only when the producer is not among them are the package's other modules
imported. Planning stays cheap (``tools/bench_plan.py``).
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from types import ModuleType

from recipekit.errors import RecipeError
from recipekit.lineage.graph import Pipeline
from recipekit.loading import load_module
from recipekit.stage import Stage


def producer_stage(pipeline: Pipeline, name: str) -> Stage | None:
    """The Stage of the pipeline's stage ``name`` (None: no recipe defines it, or more than
    one does, which ``pipeline plan`` reports)."""
    package = pipeline.module.rpartition(".")[0]
    found = _defined(package, pipeline.module, name)
    if found is not None or not package:
        return found
    for module in _unloaded(package, name):
        try:
            load_module(module)
        except RecipeError:
            continue  # a recipe that does not build is reported where it is planned
        found = _defined(package, pipeline.module, name)
        if found is not None:
            return found
    return None


def _loaded(package: str, module: str) -> list[ModuleType]:
    prefix = f"{package}." if package else module
    return [
        sys.modules[loaded]
        for loaded in sorted(sys.modules)
        if (loaded.startswith(prefix) if package else loaded == module)
        and not loaded.endswith("_test")
    ]


def _defined(package: str, module: str, name: str) -> Stage | None:
    found: list[Stage] = []
    for loaded in _loaded(package, module):
        for value in list(vars(loaded).values()):
            if (
                isinstance(value, Stage)
                and value.name == name
                and value.lineage is not None
                and value.lineage.stage == name
                and all(value is not other for other in found)
            ):
                found.append(value)
    # Equal values are one recipe imported under two names (``rlvr`` in rl.py and teachers.py).
    distinct = [s for i, s in enumerate(found) if all(s != other for other in found[:i])]
    return distinct[0] if len(distinct) == 1 else None


def _unloaded(package: str, stage: str) -> list[str]:
    """The package's modules not imported yet, those named like the stage's first
    (``mopd`` for ``mopd-phase2``), so that the search usually imports one module."""
    root = sys.modules.get(package) or importlib.import_module(package)
    names = [
        info.name
        for info in pkgutil.iter_modules(getattr(root, "__path__", []))
        if not info.name.endswith("_test")
        and info.name != "conftest"
        and f"{package}.{info.name}" not in sys.modules
    ]
    word = stage.replace("-", "_")
    names.sort(key=lambda module: not word.startswith(module))
    return [f"{package}.{module}" for module in names]
