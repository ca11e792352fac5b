"""Finding a recipe object by name: ``recipes.super3.dapo:dapo_gb200`` or ``path/to/file.py:attr``.

A recipe module that fails while it is being built (a bad value in a section) is reported at
the line of the recipe file that built it, not as a traceback.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
import traceback
from pathlib import Path
from types import ModuleType
from typing import Any

from recipekit.errors import FieldError, Issue, RecipeError, did_you_mean


def load_object(target: str, default_attr: str = "recipe") -> Any:
    module_name, _, attr = target.partition(":")
    attr = attr or default_attr
    if "/" in module_name and not module_name.endswith(".py"):
        raise RecipeError([Issue(target, "not a recipe name", hint=_named_by_address(target))])
    module = _import(module_name)
    if not hasattr(module, attr):
        public = [n for n in vars(module) if not n.startswith("_")]
        raise RecipeError(
            [Issue(target, f"{module_name} has no {attr!r}", hint=did_you_mean(attr, public))]
        )
    return getattr(module, attr)


# A stage target of a recipe folder's BUILD file (pants-plugins/macros/stages.py).
_STAGE_TARGET = re.compile(r'recipe_stage\(\s*name="([^"]+)",\s*stage="([^"]+)"')


def _named_by_address(address: str) -> str:
    """The hint for a Pants address given where a recipe name goes: the recipe it names."""
    folder, _, name = address.partition(":")
    build = Path(folder) / "BUILD"
    targets = dict(_STAGE_TARGET.findall(build.read_text())) if build.is_file() else {}
    if name in targets:
        return f"{address} is a Pants target: give {targets[name]}, or run pants run {address}"
    close = did_you_mean(name, targets) if targets else ""
    return f"give MODULE:ATTR (recipes.super35.rl:rlvr){'; ' + close if close else ''}"


def load_module(name: str) -> ModuleType:
    """A recipe module by dotted name or by path (``FILE.py``), its build errors as
    RecipeErrors at the recipe line."""
    return _import(name)


def _import(name: str) -> ModuleType:
    try:
        if name.endswith(".py"):
            path = Path(name)
            if not path.is_file():
                raise RecipeError([Issue(name, "no such file")])
            spec = importlib.util.spec_from_file_location(path.stem, path)
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            sys.modules[path.stem] = module
            spec.loader.exec_module(module)
            return module
        return importlib.import_module(name)
    except RecipeError as exc:
        where = _recipe_frame(exc)
        raise RecipeError(exc.issues, context=where or name) from None
    except FieldError as exc:
        # A field validator of a value the module builds (a cluster profile's runs_dir=42).
        field = getattr(exc, "field_name", "")
        where = _recipe_frame(exc) or name
        issue = Issue(field, exc.message, value=exc.value, hint=exc.hint)
        raise RecipeError([issue], context=where) from None
    except ModuleNotFoundError as exc:
        if exc.name and name.startswith(exc.name):
            raise RecipeError([Issue(name, "no such recipe module")]) from None
        where = _recipe_frame(exc) or name
        raise RecipeError([Issue(where, f"cannot import {exc.name}")]) from None
    except SyntaxError as exc:
        where = f"{exc.filename}:{exc.lineno}" if exc.filename else name
        raise RecipeError([Issue(where, f"syntax error: {exc.msg}")]) from None
    except (NameError, ImportError, TypeError, ValueError, AttributeError) as exc:
        # A mistake in the recipe or profile file itself, reported at its line.
        where = _recipe_frame(exc) or name
        raise RecipeError([Issue(where, f"{type(exc).__name__}: {exc}")]) from None


def _recipe_frame(exc: BaseException) -> str:
    """file:line of the innermost frame outside recipekit itself: the line that built it."""
    here = str(Path(__file__).parent)
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not f.filename.startswith(here)]
    # Not importlib's frames, nor the methods attrs generates ("<attrs generated ...>").
    frames = [f for f in frames if "importlib" not in f.filename and not f.filename.startswith("<")]
    if not frames:
        return ""
    last = frames[-1]
    return f"{last.filename}:{last.lineno}"
