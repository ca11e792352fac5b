"""``@section``: the one decorator every typed config section uses.

A section is a frozen, slotted, keyword-only attrs class. The decorator adds what attrs leaves
to the user: a type check of every value against its annotation (``bool`` is not an ``int``,
``Literal`` values are the allowed set), a "did you mean" for an unknown keyword, and error
messages that name the framework key path (``policy.megatron_cfg.tensor_model_parallel_size``)
rather than the Python class.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, get_args, get_origin

import attr._make
import attrs

from recipekit.errors import FieldError, Issue, RecipeError, did_you_mean, join_path
from recipekit.markers import DERIVED, UNSET, Marker

T = TypeVar("T")

SECTION_PATH = "__section_path__"
ALIASES = "__key_aliases__"
_CHECKS = "__type_checks__"


def section(
    path: str = "", *, aliases: Mapping[str, str] | None = None
) -> Callable[[type[T]], type[T]]:
    """Make the attrs class ``cls`` a config section found at ``path`` in the framework config.

    Apply it over ``@frozen_section(kw_only=True, repr=False, eq=False)``, which type checkers
    read as ``attrs.frozen``; the section gets an ``__init__``, ``__repr__``, ``__eq__`` and
    ``__hash__`` written once here rather than compiled by attrs for each class.

    ``aliases`` maps a Python field name to the framework's key where the key is not a valid
    or not a public Python name (``v2`` -> ``_v2``).
    """

    def wrap(cls: type[T]) -> type[T]:
        decorated = cls
        if not attrs.has(cls) or "__init__" in cls.__dict__:
            raise TypeError(
                f"@section goes above @frozen_section(kw_only=True, repr=False, eq=False) on "
                f"{cls.__name__}"
            )
        made = cls
        attrs.resolve_types(made)
        setattr(made, SECTION_PATH, path)
        setattr(made, ALIASES, dict(aliases or {}))
        checks = {f.name: _checker(f.type) for f in attrs.fields(made)}
        setattr(made, _CHECKS, checks)
        set_fields = _fields_setter(made)
        names = frozenset(checks)
        required = frozenset(f.name for f in attrs.fields(made) if f.default is attrs.NOTHING)

        def __init__(self: Any, **kwargs: Any) -> None:
            unknown = [k for k in kwargs if k not in names]
            issues = [
                Issue(key_of(made, k), "unknown key", hint=did_you_mean(k, key_names(made)))
                for k in unknown
            ]
            issues += [
                Issue(key_of(made, k), "required key is missing")
                for k in sorted(required - kwargs.keys())
            ]
            for name, value in list(kwargs.items()):
                if name in unknown:
                    continue
                coerce, ok, expected = checks[name]
                value = kwargs[name] = coerce(value)
                if not ok(value):
                    issues.append(Issue(key_of(made, name), f"expected {expected}", value=value))
            if issues:
                raise SectionError(made, issues)
            try:
                set_fields(self, kwargs)
            except FieldError as exc:
                name = _failing_field(exc, made)
                issue = Issue(key_of(made, name), exc.message, value=exc.value, hint=exc.hint)
                raise SectionError(made, [issue]) from None

        setattr(made, "__init__", __init__)  # noqa: B010 - attrs made none (init=False)
        if "__repr__" not in made.__dict__:
            setattr(made, "__repr__", _section_repr)  # noqa: B010
        if "__eq__" not in made.__dict__:
            setattr(made, "__eq__", _section_eq)  # noqa: B010
            setattr(made, "__hash__", _section_hash)  # noqa: B010
        return decorated

    return wrap


# attrs compiles an __init__, __repr__, __eq__ and __hash__ for every class it makes: for the
# ~150 sections, about half of `plan`'s start-up. A section is therefore declared
# @frozen_section(kw_only=True, repr=False, eq=False), and these four, written once, behave as
# attrs' would: every field set from its keyword or default (a Factory called), then each
# validator run in field order; the class name and its fields in order; equal when of one
# class with equal fields; hashed by them.

if typing.TYPE_CHECKING:
    # Type checkers see attrs' own decorator, so mypy's attrs plugin knows each section's
    # fields and keyword-only __init__.
    from attrs import frozen as frozen_section
else:

    def frozen_section(**options: Any) -> Callable[[type[T]], type[T]]:
        """``attrs.frozen(**options)`` without attrs' __init__: @section writes it."""
        make = attrs.frozen(**options, init=False)

        def frozen(cls: type[T]) -> type[T]:
            # Given init=False, attrs still compiles an __attrs_init__ (for a hand-written
            # __init__ to call); ours does not, so the class builder is told to skip it. attrs
            # is pinned by the lockfile; sections_test.py fails if this stops holding.
            builder = attr._make._ClassBuilder
            add_attrs_init = builder.add_attrs_init
            builder.add_attrs_init = _skip  # type: ignore[method-assign]
            try:
                return make(cls)
            finally:
                builder.add_attrs_init = add_attrs_init  # type: ignore[method-assign]

        return frozen

    def _skip(builder: Any) -> Any:
        return builder


def _fields_setter(cls: type) -> Callable[[Any, dict[str, Any]], None]:
    fields = attrs.fields(cls)
    # What attrs' __init__ would do and this one does not: refused here, not silently skipped.
    unsupported = [f.name for f in fields if f.converter is not None or f.alias != f.name]
    if unsupported:
        raise TypeError(
            f"{cls.__name__}: a section's __init__ runs no converter and takes each field by "
            f"its own name; {', '.join(unsupported)} would need attrs' (convert in a validator "
            "or the recipe, and map a framework key with @section(aliases=...))"
        )
    validated = [f for f in fields if f.validator is not None]

    def set_fields(self: Any, values: dict[str, Any]) -> None:
        for f in fields:
            if f.name in values:
                value = values[f.name]
            elif isinstance(f.default, attrs.Factory):  # type: ignore[arg-type]
                factory = f.default.factory
                value = factory(self) if f.default.takes_self else factory()
            else:
                value = f.default
            object.__setattr__(self, f.name, value)
        if attrs.validators.get_disabled():
            return
        for f in validated:
            f.validator(self, f, getattr(self, f.name))

    return set_fields


def _values(obj: Any) -> tuple[Any, ...]:
    return tuple(getattr(obj, f.name) for f in attrs.fields(type(obj)))


def _section_repr(self: Any) -> str:
    fields = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in attrs.fields(type(self)))
    return f"{type(self).__qualname__.rsplit('>.', 1)[-1]}({fields})"


def _section_eq(self: Any, other: Any) -> Any:
    if other.__class__ is not self.__class__:
        return NotImplemented
    return _values(self) == _values(other)


def _section_hash(self: Any) -> int:
    return hash((type(self), _values(self)))


class SectionError(RecipeError):
    """Problems found while building one section; ``relative`` holds paths inside it.

    ``issues`` place them at the section's own framework path, which is what a recipe author
    needs; a structurer that knows the real path (a list index, an env name) re-roots
    ``relative`` instead.
    """

    def __init__(self, cls: type, relative: list[Issue]) -> None:
        self.section = cls
        self.relative = tuple(relative)
        base = getattr(cls, SECTION_PATH, "") or cls.__name__
        super().__init__([attrs.evolve(i, path=join_path(base, i.path)) for i in relative])


def is_section(obj: Any) -> bool:
    return attrs.has(type(obj) if not isinstance(obj, type) else obj) and hasattr(obj, _CHECKS)


def key_of(cls: type, field_name: str) -> str:
    """The framework key of a Python field name (``v2`` -> ``_v2``)."""
    aliases: dict[str, str] = getattr(cls, ALIASES, {})
    return aliases.get(field_name, field_name)


def field_of(cls: type, key: str) -> str | None:
    """The Python field name of a framework key, or None when the section has no such key."""
    aliases: dict[str, str] = getattr(cls, ALIASES, {})
    for name, alias in aliases.items():
        if alias == key:
            return name
    names = {f.name for f in attrs.fields(cls)}
    return key if key in names else None


def key_names(cls: type) -> list[str]:
    return [key_of(cls, f.name) for f in attrs.fields(cls)]


def _failing_field(exc: FieldError, cls: type) -> str:
    # attrs validators receive the Attribute; ours record it on the exception.
    return getattr(exc, "field_name", "") or "?"


# --- type checks derived from annotations -------------------------------------------------

Check = tuple[Callable[[Any], Any], Callable[[Any], bool], str]


def _identity(value: Any) -> Any:
    return value


def _checker(tp: Any) -> Check:
    ok, text = _predicate(tp)
    return _coercer(tp), ok, text


def _coercer(tp: Any) -> Callable[[Any], Any]:
    """Lists written in a recipe become tuples where the section stores a tuple (frozen)."""
    wants_tuple = any(get_origin(t) is tuple for t in _union_members(tp))
    if not wants_tuple:
        return _identity
    return lambda v: tuple(v) if isinstance(v, list) else v


def _union_members(tp: Any) -> tuple[Any, ...]:
    if get_origin(tp) in (typing.Union, types.UnionType):
        return get_args(tp)
    return (tp,)


def _predicate(tp: Any) -> tuple[Callable[[Any], bool], str]:
    if tp is Any or tp is object:
        return (lambda v: True), "any value"
    origin = get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        parts = [_predicate(t) for t in get_args(tp)]
        texts = [t for _, t in parts if t]
        return (lambda v: any(p(v) for p, _ in parts)), " or ".join(texts)
    if origin is typing.Literal:
        allowed = get_args(tp)
        plain = [a for a in allowed if not isinstance(a, Marker)]
        text = "one of " + ", ".join(repr(a) for a in plain) if plain else ""
        return (lambda v: any(type(v) is type(a) and v == a for a in allowed)), text
    if tp is type(None):
        return (lambda v: v is None), "null"
    if tp is bool:
        return (lambda v: isinstance(v, bool)), "true or false"
    if tp is int:
        return (lambda v: isinstance(v, int) and not isinstance(v, bool)), "an integer"
    if tp is float:
        return (lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)), "a number"
    if tp is str:
        return (lambda v: isinstance(v, str)), "a string"
    if origin is tuple:
        args = get_args(tp)
        item_ok, item_text = _predicate(args[0]) if args else ((lambda v: True), "")
        return (
            lambda v: isinstance(v, tuple) and all(item_ok(x) for x in v)
        ), f"a list of {item_text}"
    if origin is dict or tp is dict:
        args = get_args(tp)
        value_ok = _predicate(args[1])[0] if args else (lambda v: True)
        return (
            lambda v: isinstance(v, dict)
            and all(isinstance(k, str) for k in v)
            and all(value_ok(x) for x in v.values())
        ), "a mapping"
    if isinstance(tp, type) and attrs.has(tp):
        return (lambda v: isinstance(v, tp)), f"a {tp.__name__} section"
    if isinstance(tp, type):
        return (lambda v: isinstance(v, tp)), tp.__name__
    raise TypeError(f"@section cannot check values of type {tp!r}")


# --- field declarations -------------------------------------------------------------------
# Three kinds of key, as NeMo-RL's TypedDicts have them: required (no default), NotRequired
# (absent unless set: UNSET), and interpolated in the upstream YAML (DERIVED unless set).


def required(*checks: Callable[..., None]) -> Any:
    return attrs.field(validator=list(checks) if checks else None)


def optional(*checks: Callable[..., None]) -> Any:
    return attrs.field(default=UNSET, validator=list(checks) if checks else None)


def derived(*checks: Callable[..., None]) -> Any:
    return attrs.field(default=DERIVED, validator=list(checks) if checks else None)


def fixed(value: Any, *checks: Callable[..., None]) -> Any:
    """A key the framework requires but whose value is almost never changed."""
    return attrs.field(default=value, validator=list(checks) if checks else None)
