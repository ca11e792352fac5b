"""Load a NeMo-RL YAML config the way NeMo-RL's ``load_config`` does, with OmegaConf.

``defaults:`` names parent files relative to the child (a string or a list), loaded depth
first and merged in order, the child last; a mapping holding ``_override_: true`` replaces the
parent's mapping instead of merging into it. ``${...}`` and the ``mul``/``max``/``add``/``div``
resolvers are resolved after merging; ``${oc.env:VAR}`` reads the environment.
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import Any

from recipekit.errors import Issue, RecipeError
from recipekit.yaml_limits import file_source, parent_chain, read_checked, yaml_error

OVERRIDE_MARK = "_override_"
# OmegaConf resolves an interpolation that names another recursively: a long enough chain
# (within the size limit) runs out of Python's stack.
DEEP_INTERPOLATION = "its ${...} refer to one another too deeply to resolve"


def register_resolvers() -> None:
    """NeMo-RL's OmegaConf resolvers (``mul``, ``max``, ``add``, ``div``), once per process."""
    from omegaconf import OmegaConf

    resolvers = {
        "mul": lambda a, b: a * b,
        "max": lambda a, b: max(a, b),
        "add": lambda a, b: a + b,
        "div": lambda a, b: a / b,
    }
    for name, fn in resolvers.items():
        if not OmegaConf.has_resolver(name):
            OmegaConf.register_new_resolver(name, fn)


def read_merged(path: Path) -> Any:
    """The merged, still unresolved OmegaConf config of ``path`` and its ``defaults:``; shared,
    so only read it, never modify it."""
    return _load_cached(path)[0]


# Reading and merging dominate a load, and most recipes share a base (grpo_math_1B.yaml): each
# file's merged config is kept with the size and mtime of every file it was read from, and
# used again while none of them has changed. Never modify a kept config.
_Stamps = tuple[tuple[Path, tuple[int, int]], ...]
_MERGED: dict[Path, tuple[_Stamps, Any]] = {}


def _stamp(path: Path) -> tuple[int, int]:
    stat = path.stat()
    return stat.st_mtime_ns, stat.st_size


def _load_cached(path: Path, chain: tuple[Path, ...] = ()) -> tuple[Any, _Stamps]:
    """``chain``: the files whose ``defaults:`` led to ``path`` (a cycle is refused)."""
    if not path.is_file():
        raise RecipeError([Issue(str(path), "no such file")])
    key = path.resolve()
    chain = parent_chain(chain, key)
    hit = _MERGED.get(key)
    if hit is not None and all(p.is_file() and _stamp(p) == s for p, s in hit[0]):
        return hit[1], hit[0]
    merged, stamps = _load(key, chain)
    _MERGED[key] = (stamps, merged)
    return merged, stamps


def _load(path: Path, chain: tuple[Path, ...]) -> tuple[Any, _Stamps]:
    import copy
    import io

    from omegaconf import DictConfig, ListConfig, OmegaConf
    from omegaconf.errors import OmegaConfBaseException
    from yaml import YAMLError

    stamps: _Stamps = ((path, _stamp(path)),)
    # Checked against the limits every YAML loader shares before OmegaConf builds it.
    text = read_checked(path)
    try:
        config = OmegaConf.load(io.StringIO(text))
    except YAMLError as exc:
        raise yaml_error(exc, file_source(path)) from None
    except (OmegaConfBaseException, ValueError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise RecipeError([Issue(str(path), f"not readable as YAML: {reason}")]) from None
    if not isinstance(config, DictConfig):
        raise RecipeError([Issue(str(path), "the top level must be a mapping")])
    if "defaults" not in config:
        return config, stamps
    defaults = config.pop("defaults")
    parents = [defaults] if isinstance(defaults, str) else defaults
    if not isinstance(parents, ListConfig | list) or not all(isinstance(p, str) for p in parents):
        raise RecipeError(
            [Issue(f"{path}: defaults", "names the parent files: a file name or a list of them")]
        )
    merged = OmegaConf.create({})
    for parent in parents:
        loaded, read = _load_cached((path.parent / str(parent)).resolve(), chain)
        # _merge takes the _override_ sections out of the child: a kept config that may still
        # hold one is merged as a copy.
        if any(OVERRIDE_MARK in p.read_text() for p, _ in read):
            loaded = copy.deepcopy(loaded)
        merged = _merge(merged, loaded)
        stamps += read
    return _merge(merged, config), stamps


def _merge(base: Any, child: Any) -> Any:
    from omegaconf import DictConfig, OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    replaced = _take_overrides(child)
    try:
        merged = OmegaConf.merge(base, child)
        for dotted, value in replaced:
            OmegaConf.update(merged, dotted, value, merge=False, force_add=True)
    except OmegaConfBaseException as exc:
        key = str(getattr(exc, "full_key", "") or "")
        raise RecipeError([Issue(key, f"cannot merge with the parent config: {exc}")]) from None
    assert isinstance(merged, DictConfig)
    return merged


def _take_overrides(child: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """Take out of ``child`` the sections marked ``_override_: true``, to set them whole."""
    from omegaconf import DictConfig

    found: list[tuple[str, Any]] = []
    if not isinstance(child, DictConfig):
        return found
    for key in list(child.keys()):
        value = child._get_node(key)  # noqa: SLF001 - keeps interpolations unresolved
        dotted = f"{prefix}.{key!s}" if prefix else str(key)
        if isinstance(value, DictConfig):
            if value.get(OVERRIDE_MARK, False) is True:
                value.pop(OVERRIDE_MARK)
                child.pop(key)
                found.append((dotted, value))
            else:
                found += _take_overrides(value, dotted)
    return found


def expand(path: Path) -> dict[str, Any]:
    """The config NeMo-RL's ``run_grpo.py`` sees (before command-line overrides)."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    register_resolvers()
    merged = read_merged(path)
    try:
        resolved = OmegaConf.to_container(merged, resolve=True)
    except RecursionError:
        raise RecipeError([Issue(str(path), DEEP_INTERPOLATION)]) from None
    except OmegaConfBaseException as exc:
        raise resolve_error(exc, path, merged) from None
    assert isinstance(resolved, dict)
    return {str(k): v for k, v in resolved.items()}


_MISSING_KEY = re.compile(r"Interpolation key '([^']+)' not found")


def resolve_error(exc: Exception, path: Path, config: Any = None) -> RecipeError:
    """An interpolation OmegaConf could not resolve, as one line: the key and the reason
    (OmegaConf's message goes on with the key and the object's type on lines of their own).
    Where it names a key ``config`` (the merged config) lacks, the hint names the keys beside
    it that are close: the interpolation usually broke because that key was misspelt."""
    key = getattr(exc, "full_key", "") or ""
    reason = str(getattr(exc, "msg", "") or exc).splitlines()[0]
    missing = _MISSING_KEY.search(reason)
    hint = _beside(config, missing.group(1)) if missing else ""
    issue = Issue(str(key), f"cannot resolve: {reason}", hint=hint)
    return RecipeError([issue], context=str(path))


def _beside(config: Any, dotted: str) -> str:
    """'did you mean' among the keys of the section that should hold ``dotted``."""
    from omegaconf import DictConfig

    parent, _, name = dotted.rpartition(".")
    section = config
    for part in parent.split(".") if parent else ():
        if not isinstance(section, DictConfig) or part not in section:
            return ""
        section = section._get_node(part)  # noqa: SLF001 - keeps interpolations unresolved
    if not isinstance(section, DictConfig):
        return ""
    close = difflib.get_close_matches(name, [str(k) for k in section.keys()], n=1, cutoff=0.8)
    where = f"{parent}." if parent else ""
    return f"the file sets {where}{close[0]}: a misspelling of {name}?" if close else ""
