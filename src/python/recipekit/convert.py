"""Typed sections <-> the plain dicts a framework reads.

``to_dict`` writes what the framework consumes: framework key names, absent keys left out,
tuples as lists. ``from_dict`` is the strict way in (cattrs, unknown keys forbidden): every
problem is reported at its full key path, all of them at once, with a "did you mean" for a
misspelt key.

cattrs is imported by the way in only: ``plan`` writes out and never reads a dict in, and
cattrs (through typing_extensions) costs ~45 ms of a plan's start-up.
"""

from __future__ import annotations

import functools
import types
import typing
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, TypeVar, get_args, get_origin

import attrs

from recipekit.errors import Issue, RecipeError, did_you_mean, join_path
from recipekit.markers import DERIVED, UNSET, Marker
from recipekit.memo import last_call
from recipekit.sections import SectionError, key_names, key_of

if TYPE_CHECKING:
    import cattrs

T = TypeVar("T")


# --- out: sections -> plain data -----------------------------------------------------------


def to_dict(obj: Any) -> Any:
    """The framework's view of ``obj``: absent keys omitted, aliases applied, tuples as lists.

    A ``DERIVED`` value left in ``obj`` is an error: the plan derives values before output.
    """
    if attrs.has(type(obj)):
        out: dict[str, Any] = {}
        cls = type(obj)
        for field in attrs.fields(cls):
            value = getattr(obj, field.name)
            if value is UNSET:
                continue
            if value is DERIVED:
                raise ValueError(f"{cls.__name__}.{field.name} was never derived")
            out[key_of(cls, field.name)] = to_dict(value)
        return out
    if isinstance(obj, (list, tuple)):
        return [to_dict(v) for v in obj]
    if isinstance(obj, dict):
        return {k: to_dict(v) for k, v in obj.items()}
    if isinstance(obj, str):
        # Plain text, whatever made it (an Interpolation): YAML and JSON write only str.
        return str(obj)
    return obj


# --- in: plain data -> sections ------------------------------------------------------------


@last_call
def rendered(config: Any) -> dict[str, Any] | None:
    """A typed config as the mapping it renders to (what the framework reads), kept for the
    last config; None where a value is left underived, which the plan refuses by its key."""
    try:
        found = to_dict(config)
    except ValueError:
        return None
    return found if isinstance(found, dict) else None


def from_dict(data: Any, cls: type[T], *, path: str = "") -> T:
    """Build ``cls`` from ``data``, or raise a RecipeError listing every problem by path."""
    try:
        return _converter().structure(data, cls)
    except Exception as exc:  # noqa: BLE001 - every failure becomes path-qualified issues
        raise RecipeError(list(_issues(exc, path))) from None


def structure_value(value: Any, tp: Any, *, path: str = "") -> Any:
    """``value`` as the annotated type ``tp`` wants it (sections built, lists as tuples)."""
    try:
        return _structure_any(value, tp)
    except Exception as exc:  # noqa: BLE001
        raise RecipeError(list(_issues(exc, path))) from None


@functools.cache
def _converter() -> cattrs.Converter:
    import cattrs

    conv = cattrs.Converter(forbid_extra_keys=True, detailed_validation=True)
    conv.register_structure_hook_func(lambda t: not attrs.has(t), _structure_any)
    # cattrs would coerce (10 -> 10.0, 1 -> "1"); the section's own check judges the value as
    # written, and an integer a YAML gave stays an integer in the compiled config.
    for primitive in (int, float, str, bool):
        conv.register_structure_hook(primitive, _keep_as_written)
    conv.register_structure_hook_factory(attrs.has, lambda cls: _section_hook(conv, cls))
    return conv


def _keep_as_written(value: Any, _: Any) -> Any:
    return value


def _section_hook(conv: cattrs.Converter, cls: type) -> Any:
    from cattrs.gen import make_dict_structure_fn, override

    renames = {
        f.name: override(rename=key_of(cls, f.name))
        for f in attrs.fields(cls)
        if key_of(cls, f.name) != f.name
    }
    return make_dict_structure_fn(cls, conv, _cattrs_forbid_extra_keys=True, **renames)  # type: ignore[arg-type]


def union_members(tp: Any) -> tuple[Any, ...]:
    """The members of a union type (``int | None`` -> ``(int, None)``); any other type alone."""
    if get_origin(tp) in (typing.Union, types.UnionType):
        return get_args(tp)
    return (tp,)


def _structure_any(value: Any, tp: Any) -> Any:
    """Containers and unions that hold sections; everything else passes to the section's check."""
    members = union_members(tp)
    if isinstance(value, dict):
        sections = [m for m in members if isinstance(m, type) and attrs.has(m)]
        if sections:
            return _converter().structure(value, _pick_section(value, sections))
        for m in members:
            if get_origin(m) is dict and get_args(m) and attrs.has(get_args(m)[1]):
                return _structure_items(value.items(), get_args(m)[1], dict)
        return value
    if isinstance(value, list):
        for m in members:
            if get_origin(m) is tuple:
                item_tp = get_args(m)[0] if get_args(m) else Any
                return _structure_items(
                    enumerate(value), item_tp, lambda kv: tuple(v for _, v in kv)
                )
        return value
    if value is None and not any(m is type(None) for m in members):
        for m in members:
            if isinstance(m, type) and attrs.has(m):
                # A null where a section belongs: say so rather than a bare type error.
                raise RecipeError([Issue("", f"expected a {m.__name__} section, got null")])
    return value


def _structure_items(items: Any, item_tp: Any, build: Any) -> Any:
    done: list[tuple[Any, Any]] = []
    problems: list[Issue] = []
    for key, item in items:
        try:
            done.append((key, _structure_any(item, item_tp)))
        except Exception as exc:  # noqa: BLE001
            problems += _issues(exc, join_path(key) if isinstance(key, int) else str(key))
    if problems:
        raise RecipeError(problems)
    return build(done)


def _pick_section(value: dict[str, Any], sections: list[type]) -> type:
    """For a union of sections, the one whose keys fit the dict (scheduler entries, say)."""
    if len(sections) == 1:
        return sections[0]
    for cls in sections:
        if set(value) <= set(key_names(cls)):
            return cls
    return max(sections, key=lambda c: len(set(value) & set(key_names(c))))


def _issues(exc: BaseException, path: str) -> Iterator[Issue]:
    """Flatten cattrs' exception groups (and ours) into issues at full key paths."""
    import cattrs
    from cattrs.errors import ForbiddenExtraKeysError, IterableValidationError

    if isinstance(exc, SectionError):
        for issue in exc.relative:
            yield attrs.evolve(issue, path=join_path(path, issue.path))
    elif isinstance(exc, RecipeError):
        for issue in exc.issues:
            yield attrs.evolve(issue, path=join_path(path, issue.path))
    elif isinstance(exc, ForbiddenExtraKeysError):
        for key in sorted(exc.extra_fields):
            yield Issue(
                join_path(path, key), "unknown key", hint=did_you_mean(key, key_names(exc.cl))
            )
    elif isinstance(exc, (cattrs.ClassValidationError, IterableValidationError)):
        for sub in exc.exceptions:
            yield from _issues(sub, join_path(path, _note_name(sub)))
    elif isinstance(exc, KeyError):
        yield Issue(path, "required key is missing")
    else:
        yield Issue(path, str(exc) or type(exc).__name__)


def _note_name(exc: BaseException) -> str | int:
    for note in getattr(exc, "__notes__", []):
        name = getattr(note, "name", None)
        if isinstance(name, str):
            return name
        index = getattr(note, "index", None)
        if index is not None:
            return int(index)
    return ""


__all__ = ["from_dict", "to_dict", "structure_value", "Marker"]
