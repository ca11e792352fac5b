"""Reading and replacing values by the framework's dotted key path.

One mechanism serves a recipe variant (``with_values(base, {"policy.precision": ...})``), a
command-line ``--set policy.precision=bfloat16`` and the derivations: a path is walked down
the frozen sections and the change is rebuilt upwards with ``sections.evolve``, so every section
on the way checks the value it changes and re-runs its validators.
"""

from __future__ import annotations

import functools
import math
import typing
from collections.abc import Mapping
from typing import Any

import attrs

from recipekit.convert import structure_value, union_members
from recipekit.errors import Issue, RecipeError, did_you_mean, join_path
from recipekit.markers import UNSET, Marker
from recipekit.sections import SectionError, evolve, field_of, is_section, key_names
from recipekit.validators import checks_of


def split(path: str) -> list[str]:
    parts = [p for p in path.split(".")]
    if not path or any(not p for p in parts):
        raise RecipeError([Issue(path, "not a key path (expected e.g. policy.precision)")])
    return parts


def get_at(obj: Any, path: str) -> Any:
    value = obj
    walked: list[str] = []
    for part in split(path):
        value = _child(value, part, walked)
        walked.append(part)
    return value


def field_type_at(obj: Any, path: str) -> Any:
    """The annotated type of the key at ``path`` (for parsing a command-line value)."""
    *head, last = split(path)
    parent, walked = obj, list[str]()
    for part in head:
        parent = _opened(parent, part, walked)
        walked.append(part)
    if isinstance(parent, dict):
        return Any
    if isinstance(parent, Marker) or not attrs.has(type(parent)):
        _child(parent, last, head)  # raises: a value, not a section, has no keys
    name = _field_name(parent, last, head)
    return attrs.fields_dict(type(parent))[name].type


def replace_at(obj: Any, path: str, value: Any) -> Any:
    """A copy of ``obj`` with the key at ``path`` set to ``value`` (checked on the way up)."""
    return _replace(obj, split(path), value, [])


def with_values(obj: Any, changes: Mapping[str, Any]) -> Any:
    """``obj`` with several keys replaced, given as ``{"a.b.c": value}``."""
    problems: list[Issue] = []
    for path, value in changes.items():
        try:
            obj = replace_at(obj, path, value)
        except RecipeError as exc:
            problems += exc.issues
    if problems:
        raise RecipeError(problems)
    return obj


def checked_alone(obj: Any, path: str) -> bool:
    """Whether ``with_values(obj, changes)`` accepts or refuses a value for ``path`` on that value
    alone, whatever else ``changes`` sets, with the same issues: so a search that sets thousands
    of combinations of a few values may check each (key, value) once. It does where each section
    on the path checks a key on its value alone, as every section does today:

    - every step is a section that is set (not a mapping, whose upstream check reads the whole
      mapping, nor an unset key that would open as a new section);
    - none of those sections checks one key against another: no ``__attrs_post_init__``, and
      every validator of every field is one of ``recipekit.validators`` (which read the value,
      never the instance) or a section's declared-mapping check (``sections._declared_mapping``,
      which reads the mapping alone);
    - no key on the way down holds a validator: the section a change rebuilds below it, whatever
      else changed in it, is of the class the key held, which its type check reads alone.
    """
    value = obj
    parts = split(path)
    for index, part in enumerate(parts):
        cls: type = type(value)
        if not is_section(value) or not _checks_each_key_alone(cls):
            return False
        name = field_of(cls, part)
        if name is None:
            return False
        if index < len(parts) - 1 and attrs.fields_dict(cls)[name].validator is not None:
            return False
        value = getattr(value, name)
    return True


@functools.cache
def _checks_each_key_alone(cls: type) -> bool:
    if hasattr(cls, "__attrs_post_init__"):
        return False
    for field in attrs.fields(cls):
        for check in checks_of(field.validator):
            module = getattr(check, "__module__", "")
            name = getattr(check, "__qualname__", "")
            if module != "recipekit.validators" and not (
                module == "recipekit.sections" and name.startswith("_declared_mapping.")
            ):
                return False
    return True


def parse_assignment(obj: Any, assignment: str) -> tuple[str, Any]:
    """``"policy.max_total_sequence_length=2048"`` -> the path and the value in its field's type.

    The text is read as a YAML scalar (``true``, ``null``, ``1.0e-6``, ``[1, 2]``), then shaped
    into the field's type, so a section can be given as ``{enabled: false}``.
    """
    path, sep, text = assignment.partition("=")
    path = path.strip()
    if not sep or not path:
        raise RecipeError(
            [Issue(assignment, "expected PATH=VALUE, e.g. policy.precision=bfloat16")]
        )
    raw = read_value(path, text)
    tp = field_type_at(obj, path)
    members = union_members(tp)
    if str in members and (
        (_sexagesimal(raw, text) and int not in members)
        or (_exponent(raw, text) and float not in members)
    ):
        # YAML reads 3:45:00 as the integer 13500 and 1e-6 as a float, as OmegaConf does; for
        # a text key (a duration, a name) the user means the text.
        raw = text.strip()
    return path, structure_value(raw, tp, path=path)


def _sexagesimal(raw: Any, text: str) -> bool:
    return isinstance(raw, int | float) and not isinstance(raw, bool) and ":" in text


def _exponent(raw: Any, text: str) -> bool:
    return isinstance(raw, float) and "e" in text.lower()


def _not_finite(path: str, text: str, hint: str = "") -> Issue:
    shown = text if len(text) <= 80 else text[:77] + "..."
    return Issue(
        path, "not a finite number (NaN and infinity are not JSON)", value=shown, hint=hint
    )


def read_value(path: str, text: str) -> Any:
    """An override's text as YAML, within the limits every YAML recipekit reads shares
    (``yaml_limits``: depth, size, no tag JSON cannot hold, and no anchors or aliases in an
    override), refusing too an integer too long for Python to read and NaN or infinity
    (``plan.json`` would not be JSON). ``2024-01-01`` is text, as the framework reads it."""
    from recipekit.yaml_limits import load_yaml, override_source  # imports yaml (~20 ms)

    if not text.strip():
        return text
    raw = load_yaml(text, override_source(path, text))
    if raw == "":
        return text
    if not _finite(raw):
        raise RecipeError([_not_finite(path, text)])
    return raw


def _finite(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_finite(k) and _finite(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return all(_finite(v) for v in value)
    return True


# --- walking -------------------------------------------------------------------------------


def _child(value: Any, part: str, walked: list[str]) -> Any:
    if isinstance(value, dict):
        if part not in value:
            raise RecipeError(
                [Issue(join_path(*walked, part), "unknown key", hint=did_you_mean(part, value))]
            )
        return value[part]
    if isinstance(value, Marker) or not attrs.has(type(value)):
        where = ".".join(walked)
        what = "is not set" if value is UNSET else "is not a section"
        raise RecipeError(
            [
                Issue(
                    join_path(*walked, part),
                    f"{where} {what}, so it has no key {part!r}",
                    hint=f"set the whole section with {where}={{...}}" if value is UNSET else "",
                )
            ]
        )
    return getattr(value, _field_name(value, part, walked))


def _opened(value: Any, part: str, walked: list[str]) -> Any:
    """The child ``part`` of ``value``, for setting a key below it: a section the recipe leaves
    unset (the framework's defaults) opens as an empty one, so ``--set optimizer.lr=1e-5``
    states one key of it, as the recipe would. Only a section every key of which may be left
    out opens so; any other unset value has no keys to set."""
    empty = _unset_section(value, part)
    if empty is not None:
        return empty()
    if _unset_mapping(value, part):
        return {}
    return _child(value, part, walked)


def _unset_mapping(value: Any, part: str) -> bool:
    """Whether ``part`` of ``value`` is an unset key that holds a mapping (a config class of the
    framework's that recipekit types as a mapping checked against it): it opens as an empty
    one, so ``--set ddp.overlap_grad_reduce=true`` states one key of it."""
    if isinstance(value, dict) or not attrs.has(type(value)):
        return False
    name = field_of(type(value), part)
    if name is None or getattr(value, name) is not UNSET:
        return False
    members = union_members(attrs.fields_dict(type(value))[name].type)
    return any(m is dict or typing.get_origin(m) is dict for m in members)


def _unset_section(value: Any, part: str) -> type | None:
    """The section class an unset key of ``value`` holds, when it holds one and the class can
    be made with no keys; None otherwise."""
    if isinstance(value, dict) or not attrs.has(type(value)):
        return None
    name = field_of(type(value), part)
    if name is None or getattr(value, name) is not UNSET:
        return None
    sections = [
        t
        for t in union_members(attrs.fields_dict(type(value))[name].type)
        if isinstance(t, type) and attrs.has(t)
    ]
    if len(sections) != 1:
        return None
    if any(f.default is attrs.NOTHING for f in attrs.fields(sections[0]) if f.init):
        return None
    return sections[0]


def _field_name(section: Any, key: str, walked: list[str]) -> str:
    name = field_of(type(section), key)
    if name is None:
        raise RecipeError(
            [
                Issue(
                    join_path(*walked, key),
                    "unknown key",
                    hint=did_you_mean(key, key_names(type(section))),
                )
            ]
        )
    return name


def _replace(obj: Any, parts: list[str], value: Any, walked: list[str]) -> Any:
    head, rest = parts[0], parts[1:]
    if isinstance(obj, dict):
        if head not in obj and rest:
            _child(obj, head, walked)
        new = _replace(obj[head], rest, value, [*walked, head]) if rest else value
        return {**obj, head: new}
    child = _opened(obj, head, walked) if rest else _child(obj, head, walked)
    new = _replace(child, rest, value, [*walked, head]) if rest else value
    try:
        return evolve(obj, **{_field_name(obj, head, walked): new})
    except SectionError as exc:
        raise RecipeError(
            [attrs.evolve(i, path=join_path(*walked, i.path)) for i in exc.relative]
        ) from None
