"""``@section``: the one decorator every typed config section uses.

A section is a frozen, slotted, keyword-only attrs class. The decorator adds what attrs leaves
to the user: a type check of every value against its annotation (``bool`` is not an ``int``,
``Literal`` values are the allowed set), a "did you mean" for an unknown keyword, and error
messages that name the framework key path (``policy.megatron_cfg.tensor_model_parallel_size``)
rather than the Python class.
"""

from __future__ import annotations

import functools
import keyword
import os
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar, get_args, get_origin

import attrs

from recipekit.errors import FieldError, Issue, RecipeError, did_you_mean, join_path
from recipekit.interpolation import HINT, REFUSED, smuggled
from recipekit.markers import DERIVED, UNSET, Marker, Unset
from recipekit.upstream.bounds import Bounds
from recipekit.validators import allowed_at, checks_of

T = TypeVar("T")

SECTION_PATH = "__section_path__"
ALIASES = "__key_aliases__"
_CHECKS = "__type_checks__"
_BUILD = "__section_build__"


def section(
    path: str = "", *, aliases: Mapping[str, str] | None = None
) -> Callable[[type[T]], type[T]]:
    """Make the attrs class ``cls`` a config section found at ``path`` in the framework config.

    Apply it over ``@frozen_section(kw_only=True, repr=False, eq=False)``, which is
    ``attrs.frozen`` with attrs' ``__init__`` kept as ``__attrs_init__``: the section's
    ``__init__`` checks every keyword (unknown keys, types, required keys) and then calls
    attrs' own, so defaults, factories, validators and ``__attrs_post_init__`` run exactly as
    attrs runs them; ``__repr__``, ``__eq__`` and ``__hash__`` are written once here and honour
    each field's ``repr``, ``eq`` and ``hash``. What a section cannot honour (a converter, an
    attrs alias) is refused when the class is made.

    ``aliases`` maps a Python field name to the framework's key where the key is not a valid
    or not a public Python name (``v2`` -> ``_v2``).
    """

    def wrap(cls: type[T]) -> type[T]:
        if not attrs.has(cls) or "__init__" in cls.__dict__ or "__attrs_init__" not in cls.__dict__:
            raise TypeError(
                f"@section goes above @frozen_section(kw_only=True, repr=False, eq=False) on "
                f"{cls.__name__}"
            )
        made: Any = cls
        attrs.resolve_types(made)
        _refuse_unsupported(made)
        setattr(made, SECTION_PATH, path)
        setattr(made, ALIASES, {**upstream_aliases(made), **(aliases or {})})
        fields = attrs.fields(made)
        checks = {f.name: _checker(f.type) for f in fields if f.init}
        setattr(made, _CHECKS, checks)
        setattr(made, _COMPARED, _compared_fields(fields))
        computed = frozenset(f.name for f in fields if not f.init)
        names = frozenset(checks)
        by_name = attrs.fields_dict(made)
        required = frozenset(n for n in names if by_name[n].default is attrs.NOTHING)

        def __init__(self: Any, **kwargs: Any) -> None:
            build(self, kwargs, frozenset())

        def build(self: Any, kwargs: dict[str, Any], checked: frozenset[str]) -> None:
            # ``checked``: keys whose values a section of this class already holds (evolve),
            # whose types need no second look; attrs' validators still run on every key.
            if type(self) is not made and SECTION_PATH not in type(self).__dict__:
                # A subclass attrs made without @section would be built by this class's
                # __init__ and with this class's fields: refused, not silently wrong.
                raise TypeError(
                    f"{type(self).__name__} subclasses the section {made.__name__}: declare it "
                    "with @section as well"
                )
            unknown = [k for k in kwargs if k not in names]
            issues = [
                Issue(
                    key_of(made, k),
                    "is computed by the section, not set" if k in computed else "unknown key",
                    hint="" if k in computed else did_you_mean(k, key_names(made)),
                )
                for k in unknown
            ]
            issues += [
                Issue(key_of(made, k), "required key is missing")
                for k in sorted(required - kwargs.keys())
            ]
            for name, value in list(kwargs.items()):
                if name in unknown or name in checked:
                    continue
                coerce, ok, expected = checks[name]
                value = kwargs[name] = coerce(value)
                if not ok(value):
                    issues.append(Issue(key_of(made, name), f"expected {expected}", value=value))
                    continue
                found = smuggled(value)
                if found is not None:
                    where = join_path(key_of(made, name), found.path)
                    issues.append(Issue(where, REFUSED, value=found.text, hint=HINT))
            if issues:
                raise SectionError(made, issues)
            try:
                self.__attrs_init__(**kwargs)
            except FieldError as exc:
                name = _failing_field(exc, made)
                issue = Issue(key_of(made, name), exc.message, value=exc.value, hint=exc.hint)
                raise SectionError(made, [issue]) from None
            except (TypeError, ValueError) as exc:
                # attrs' own validators pass the Attribute as their second argument.
                field = exc.args[1] if len(exc.args) > 1 else None
                if not isinstance(field, attrs.Attribute):
                    raise
                value = getattr(self, field.name, None)
                issue = Issue(key_of(made, field.name), str(exc.args[0]), value=value)
                raise SectionError(made, [issue]) from None

        setattr(made, "__init__", __init__)  # noqa: B010 - attrs made none (init=False)
        setattr(made, _BUILD, build)
        if "__repr__" not in made.__dict__:
            setattr(made, "__repr__", _section_repr)  # noqa: B010
        if "__eq__" not in made.__dict__:
            setattr(made, "__eq__", _section_eq)  # noqa: B010
            setattr(made, "__hash__", _section_hash)  # noqa: B010
        return made  # type: ignore[no-any-return]

    return wrap


# attrs compiles an __init__, __repr__, __eq__ and __hash__ for every class it makes: for the
# ~150 sections, much of `plan`'s start-up. A section is therefore declared
# @frozen_section(kw_only=True, repr=False, eq=False): attrs compiles only its __init__ (as
# __attrs_init__, which the section's checking __init__ calls); __repr__, __eq__ and __hash__
# are written once below and behave as attrs' would (sections_test.py compares them with plain
# attrs classes for every section in the tree).

if typing.TYPE_CHECKING:
    # Type checkers see attrs' own decorator, so mypy's attrs plugin knows each section's
    # fields and keyword-only __init__.
    from attrs import frozen as frozen_section
else:

    def frozen_section(**options: Any) -> Callable[[type[T]], type[T]]:
        """``attrs.frozen(**options)`` with attrs' __init__ made as ``__attrs_init__``, for
        @section's __init__ to call, and the fields of a section derived from another in the
        order ``_in_base_order`` gives them."""
        return attrs.frozen(**options, init=False, field_transformer=_in_base_order)


# A schema version derived from another states only what it changes: the keys it re-types or
# re-checks (declared again), the keys it adds and the keys it drops (``removed_keys``). attrs
# would move a re-declared key after every inherited one, and put added keys last; a
# framework's config lists its keys in its own order, which the rendered file keeps. So a
# re-declared key keeps its base's place unless its ``after=`` moves it, and an added key goes
# after the key its ``after=`` names, or after the key declared before it (last, if it is the
# first and names none).
_AFTER = "recipekit.after"
# A version that drops keys of the one it derives from names them in a class attribute,
# ``removed_keys: ClassVar[tuple[str, ...]] = (...)``: they are not fields of it.
REMOVED_KEYS = "removed_keys"
# A section's upstream class with extra="allow" that passes its undeclared keys on to another
# config class names that class here, ``extra_keys: ClassVar[Declared]``.
EXTRA_KEYS = "extra_keys"


def _in_base_order(cls: type, fields: list[attrs.Attribute[Any]]) -> list[attrs.Attribute[Any]]:
    return [_with_allowed_values(cls, f) for f in _completed(cls, _ordered(cls, fields))]


def _with_allowed_values(cls: type, field: attrs.Attribute[Any]) -> attrs.Attribute[Any]:
    """A field checked with ``validators.upstream_values(NAME)`` gets the set of the pinned
    source the section's upstream class names; an inherited field is bound again, so a section
    of a later pin accepts what that pin accepts. A section shared by pins that accept different
    values would refuse valid ones at one of them: that stops the import."""
    checks = checks_of(field.validator)
    if not any(hasattr(c, "allowed_set") for c in checks):
        return field
    from recipekit.upstream.declared import members

    upstream = getattr(cls, UPSTREAM, None)
    labels = sorted({d.source for d in members(upstream)}) if upstream is not None else [""]
    bound = []
    for check in checks:
        name = getattr(check, "allowed_set", None)
        if name is None:
            bound.append(check)
            continue
        each = [allowed_at(name, label) for label in labels]
        if len({c.allowed.values for c in each}) > 1:  # type: ignore[attr-defined]
            raise TypeError(
                f"{cls.__name__}.{field.name}: the pins {', '.join(labels)} accept different "
                f"values for {name}: give each pin its own section"
            )
        bound.append(each[0])
    return field.evolve(validator=attrs.validators.and_(*bound) if len(bound) > 1 else bound[0])


def _ordered(cls: type, fields: list[attrs.Attribute[Any]]) -> list[attrs.Attribute[Any]]:
    base = next((b for b in cls.__mro__[1:] if attrs.has(b)), None)
    removed = tuple(cls.__dict__.get(REMOVED_KEYS, ()))
    if base is None:
        stray = [f.name for f in fields if f.metadata.get(_AFTER)]
        if stray or removed:
            raise TypeError(
                f"{cls.__name__}: after= and removed_keys change a derived "
                f"section; {', '.join(stray or removed)} derive from none"
            )
        return fields
    inherited = [f.name for f in attrs.fields(base)]
    unknown = [name for name in removed if name not in inherited]
    if unknown:
        raise TypeError(
            f"{cls.__name__}: removed_keys names no key of {base.__name__}: "
            f"{', '.join(unknown)} (keys: {', '.join(inherited)})"
        )
    # The keys this class itself declares (attrs' Attribute.inherited, which its stubs lack).
    own = set(cls.__dict__.get("__annotations__", {}))
    redeclared = [f.name for f in fields if f.name in removed and f.name in own]
    if redeclared:
        raise TypeError(f"{cls.__name__}: {', '.join(redeclared)} both removed and declared")
    # attrs collects fields from every class of the MRO: one an ancestor removed is not its
    # nearest base's, and stays removed.
    fields = [f for f in fields if f.name not in removed and (f.name in own or f.name in inherited)]
    by_name = {f.name: f for f in fields}
    # A re-declared key stays where its base has it, unless its after= moves it.
    moved = {f.name for f in fields if f.metadata.get(_AFTER) and f.name in own}
    ordered = [
        by_name.pop(f.name) for f in attrs.fields(base) if f.name in by_name and f.name not in moved
    ]
    previous = ""
    for field in fields:
        if field.name not in by_name:
            continue
        anchor = field.metadata.get(_AFTER) or previous
        names = [f.name for f in ordered]
        if anchor and anchor not in names:
            raise TypeError(
                f"{cls.__name__}.{field.name}: after={anchor!r} names no key of the section"
                f" (keys: {', '.join(names)})"
            )
        ordered.insert(names.index(anchor) + 1 if anchor else len(ordered), by_name.pop(field.name))
        previous = field.name
    return ordered


# A section that models an upstream config class names it, ``upstream: ClassVar[Declared] =
# recipekit.upstream.declared.declared(label, "module:Name")``: every key the pinned class
# declares that the section does not state itself is then a field of it, typed as upstream
# types it, required where upstream requires it and otherwise absent unless set (UNSET), and a
# mapping under it checked against the config classes upstream names. What recipekit states by
# hand (ranges, allowed values, derivations, a key it takes as optional that upstream requires)
# is the section's own fields; a field that restates upstream's key exactly is refused
# (sections_test). A key the section inherits only from another version's upstream
# is dropped where its own upstream no longer declares it.
UPSTREAM = "upstream"
# Keys upstream requires that a section takes as optional (the framework fills them, or reads
# them only where another key turns them on): ``optional_keys: ClassVar[tuple[str, ...]]``. One
# upstream stops requiring stops the import.
OPTIONAL_KEYS = "optional_keys"
_FROM_UPSTREAM = "recipekit.upstream_key"


# Keys a section states that its upstream class does not declare (a key NeMo-RL reads without
# declaring it, one its example configs set): ``undeclared_keys: ClassVar[Mapping[str, str]]``,
# each with why. One that upstream comes to declare, or that is no key of the section, stops
# the import: the overlay must not outlive what it explains.
UNDECLARED_KEYS = "undeclared_keys"
# Set by `recipekit upgrade` in the interpreter that imports the sections after a pin moved: a
# key upstream now declares is recorded here (class, keys) instead of stopping the import, so
# that the upgrade can drop it from the overlay in the source.
RECORD_STALE_ENV = "RECIPEKIT_RECORD_STALE_OVERLAYS"
STALE_OVERLAYS: list[tuple[type, tuple[str, ...]]] = []


def _completed(cls: type, fields: list[attrs.Attribute[Any]]) -> list[attrs.Attribute[Any]]:
    from recipekit.upstream.declared import members

    upstream = cls.__dict__.get(UPSTREAM)
    if upstream is None:
        # A subclass of the same version inherits its base's upstream and the keys it added;
        # its own overlay is still checked against them.
        inherited = getattr(cls, UPSTREAM, None)
        if inherited is not None and UNDECLARED_KEYS in cls.__dict__:
            keys = {k for d in members(inherited) for k in d.keys}
            _check_undeclared(cls, {f.name for f in fields}, dict.fromkeys(keys))
        return fields
    versions = members(upstream)
    declared, owner = declared_keys(cls)
    # What the receiver of extra keys declares is taken, never required.
    required = {k for k, spec in declared.items() if spec.required and owner[k] in versions}
    loosened = tuple(cls.__dict__.get(OPTIONAL_KEYS, ()))
    stale = [k for k in loosened if k not in required]
    if stale:
        raise TypeError(
            f"{cls.__name__}.{OPTIONAL_KEYS}: upstream requires none of {', '.join(stale)}"
        )
    required -= set(loosened)
    # A key a base section took from its own pin's upstream is taken again from this one (its
    # type and required-ness may have moved), in its place; one this pin dropped goes.
    kept = []
    for f in fields:
        key = upstream_key(f)
        if key is None:
            kept.append(f)
        elif key in declared:
            kept.append(_upstream_field(f.name, key, declared, owner, required))
    fields = kept
    names = {f.name for f in fields}
    _check_undeclared(cls, names, declared)
    stated = names | {upstream_key(f) for f in fields}
    fields = [_with_upstream_bounds(f, declared, owner) for f in fields]
    # A key the section does not state goes after the key upstream declares before it (first,
    # where none is here): the rendered config lists keys as the pinned class does.
    place = {upstream_key(f) or f.name: i for i, f in enumerate(fields)}
    after: dict[int, list[attrs.Attribute[Any]]] = {}
    at = -1
    for key in declared:
        # A key written _x is the field x (the sections' alias convention).
        if key in stated or key.lstrip("_") in names:
            at = place.get(key, place.get(key.lstrip("_"), at))
            continue
        name = key.lstrip("_") if key.startswith("_") else key
        if keyword.iskeyword(name) or not name.isidentifier() or name in names:
            name = f"{name}_"
        after.setdefault(at, []).append(_upstream_field(name, key, declared, owner, required))
        names.add(name)
    return [
        *after.get(-1, []),
        *(g for i, f in enumerate(fields) for g in (f, *after.get(i, []))),
    ]


def declared_keys(cls: type) -> tuple[dict[str, Any], dict[str, Any]]:
    """Every key the section's upstream classes declare (key -> ``declared.Key``), with the
    class that declares each (key -> ``declared.Declared``); a class that takes keys it does
    not declare (pydantic extra="allow") and hands them on to another config names that one
    (``extra_keys``), whose keys are then taken too."""
    from recipekit.upstream.declared import members

    versions = members(getattr(cls, UPSTREAM, None) or ())
    declared = {k: s for d in reversed(versions) for k, s in d.keys.items()}
    owner = {k: d for d in reversed(versions) for k in d.keys}
    for receiver in members(cls.__dict__.get(EXTRA_KEYS) or ()):
        for key, spec in receiver.keys.items():
            declared.setdefault(key, spec)
            owner.setdefault(key, receiver)
    return declared, owner


@functools.cache
def keys_base(name: str) -> type:
    """The run-time base ``name`` of a generated ``section_keys`` module: empty, since the keys
    it gives type checkers are the ones ``_completed`` adds from the pinned tables."""
    return type(name, (), {"__slots__": ()})


def _upstream_field(
    name: str,
    key: str,
    declared: Mapping[str, Any],
    owner: Mapping[str, Any],
    required: set[str],
) -> attrs.Attribute[Any]:
    """The field ``name`` for the upstream key ``key``: typed as the pinned class types it,
    required where it requires it (a TypedDict's Required, a pydantic field without a
    default), and a mapping under it checked against the classes upstream names for it."""
    spec = declared[key]
    checks = [_declared_mapping(owner[key], key, spec.nested)] if spec.nested else []
    return attrs.Attribute(  # type: ignore[call-arg]
        name=name,
        default=attrs.NOTHING if key in required else UNSET,
        validator=attrs.validators.and_(*checks) if checks else None,
        repr=True,
        cmp=None,
        hash=None,
        init=True,
        inherited=False,
        metadata={_FROM_UPSTREAM: key},
        type=spec.type if key in required else spec.type | Unset,
        kw_only=True,
        eq=True,
        order=False,
        alias=name,
    )


def _with_upstream_bounds(
    field: attrs.Attribute[Any], declared: Mapping[str, Any], owner: Mapping[str, Any]
) -> attrs.Attribute[Any]:
    """A key recipekit states keeps what pydantic enforces on it upstream (``Field(gt=0)``,
    ``PositiveInt``): the section's own checks refine upstream's, never replace them."""
    key = next((k for k in (field.name, f"_{field.name}") if k in declared), None)
    if (
        key is None
        or field.metadata.get(_FROM_UPSTREAM)
        or "Bounds(" not in declared[key].type_text
    ):
        return field
    spec = declared[key]
    _, expected = type_check(spec.type)
    cited = owner[key].cited()

    def check(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if not isinstance(value, Marker) and spec.breaks_bound(value):
            raise FieldError(f"expected {expected}, as {cited} declares it", value)

    checks = [c for c in (field.validator, check) if c is not None]
    return field.evolve(validator=attrs.validators.and_(*checks))


def _check_undeclared(cls: type, names: set[str], declared: Mapping[str, Any]) -> None:
    explained = dict(cls.__dict__.get(UNDECLARED_KEYS, {}))
    declared_now = sorted(k for k in explained if k in declared)
    unknown = sorted(k for k in explained if k not in names and k.lstrip("_") not in names)
    if declared_now and os.environ.get(RECORD_STALE_ENV):
        STALE_OVERLAYS.append((cls, tuple(declared_now)))
        declared_now = []
    if declared_now or unknown:
        raise TypeError(
            f"{cls.__name__}.{UNDECLARED_KEYS}: "
            + "; ".join(
                [
                    *([f"upstream now declares {', '.join(declared_now)}"] if declared_now else []),
                    *([f"no key of the section: {', '.join(unknown)}"] if unknown else []),
                ]
            )
        )


def _declared_mapping(declared: Any, key: str, nested: tuple[str, ...]) -> Any:
    """A mapping under ``key`` checked against the config classes upstream names for it."""

    def check(instance: Any, _: attrs.Attribute[Any], value: Any) -> None:
        if not isinstance(value, dict) or declared.table is None:
            return
        issues = declared.table.mapping_issues(value, nested, key)
        if issues:
            raise SectionError(type(instance), issues)

    return check


def upstream_key(field: attrs.Attribute[Any]) -> str | None:
    """The upstream key a field was added for from its section's upstream class; None for a
    field the section states itself."""
    return field.metadata.get(_FROM_UPSTREAM)


def upstream_aliases(cls: type) -> dict[str, str]:
    """Field name -> upstream key of the keys ``upstream`` added under another name."""
    return {
        f.name: f.metadata[_FROM_UPSTREAM]
        for f in attrs.fields(cls)
        if f.metadata.get(_FROM_UPSTREAM) not in (None, f.name)
    }


def _refuse_unsupported(cls: type) -> None:
    # A section's keys are checked against their annotations before attrs sees them, by the
    # field's own name: a converter would change the value after the check, an alias the name.
    unsupported = [
        f.name for f in attrs.fields(cls) if f.converter is not None or f.alias != f.name
    ]
    if unsupported:
        raise TypeError(
            f"{cls.__name__}: a section checks each value against its annotation and takes each "
            f"field by its own name; {', '.join(unsupported)} would need a converter or an "
            "attrs alias (convert in a validator or the recipe, and map a framework key with "
            "@section(aliases=...))"
        )


_COMPARED = "__section_compared__"


def _compared_fields(
    fields: Sequence[attrs.Attribute[Any]],
) -> tuple[tuple[str, ...], tuple[str, ...], tuple[tuple[str, Any], ...]]:
    """The fields equality, hashing and repr read, as each field's eq, hash and repr say."""
    eq = tuple(f.name for f in fields if f.eq)
    hashed = tuple(f.name for f in fields if (f.eq if f.hash is None else f.hash))
    shown = tuple((f.name, f.repr) for f in fields if f.repr is not False)
    return eq, hashed, shown


def _section_repr(self: Any) -> str:
    _, _, shown = getattr(type(self), _COMPARED)
    parts = []
    for name, how in shown:
        value = getattr(self, name)
        parts.append(f"{name}={how(value) if callable(how) else repr(value)}")
    return f"{type(self).__qualname__.rsplit('>.', 1)[-1]}({', '.join(parts)})"


def _section_eq(self: Any, other: Any) -> Any:
    if other.__class__ is not self.__class__:
        return NotImplemented
    eq, _, _ = getattr(type(self), _COMPARED)
    return tuple(getattr(self, n) for n in eq) == tuple(getattr(other, n) for n in eq)


def _section_hash(self: Any) -> int:
    _, hashed, _ = getattr(type(self), _COMPARED)
    return hash((type(self), tuple(getattr(self, name) for name in hashed)))


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


def evolve(obj: T, **changes: Any) -> T:
    """``attrs.evolve`` for a section: a copy with ``changes``, in which only the changed keys'
    types are checked (the rest are the values ``obj`` was checked with when it was made;
    sections are frozen), so a change deep in a config does not re-check every key of every
    section above it. attrs' validators, defaults and ``__attrs_post_init__`` run as in
    ``attrs.evolve``. Any other attrs instance is ``attrs.evolve``'s."""
    cls = type(obj)
    build = cls.__dict__.get(_BUILD)
    if build is None:
        copy: T = attrs.evolve(obj, **changes)  # type: ignore[misc]  # T: an attrs instance
        return copy
    kwargs = {name: getattr(obj, name) for name in getattr(cls, _CHECKS)}
    kwargs.update(changes)
    made = object.__new__(cls)
    build(made, kwargs, frozenset(kwargs.keys() - changes.keys()))
    return made


def is_section(obj: Any) -> bool:
    return attrs.has(type(obj) if not isinstance(obj, type) else obj) and hasattr(obj, _CHECKS)


def key_of(cls: type, field_name: str) -> str:
    """The framework key of a Python field name (``v2`` -> ``_v2``)."""
    aliases: dict[str, str] = getattr(cls, ALIASES, {})
    return aliases.get(field_name, field_name)


def field_of(cls: type, key: str) -> str | None:
    """The Python field name of a framework key, or None when the section has no such key."""
    return _fields_by_key(cls).get(key)


@functools.cache
def _fields_by_key(cls: type) -> dict[str, str]:
    # Read on every step of every key path (a layout search walks hundreds of thousands).
    by_key = {f.name: f.name for f in attrs.fields(cls)}
    for name, alias in getattr(cls, ALIASES, {}).items():
        by_key[alias] = name
    return by_key


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
    # ~1000 keys share a few dozen annotations; their checks are made once per annotation.
    # (typing finds Literal["a", "b"] equal to Literal["b", "a"]: both then list the allowed
    # values in the order of the one met first, which the import order fixes.)
    try:
        return _checker_of_annotation(tp)
    except TypeError:  # an unhashable annotation: made for this key alone
        return _make_checker(tp)


@functools.cache
def _checker_of_annotation(tp: Any) -> Check:
    return _make_checker(tp)


def type_check(tp: Any) -> tuple[Callable[[Any], bool], str]:
    """Whether a plain value (lists as lists, as a framework's YAML gives them) is of type
    ``tp`` as a section key of that type checks it, and the type in words."""
    _, ok, text = _checker(tp)
    return (lambda value: ok(_as_held(value))), text


def _as_held(value: Any) -> Any:
    """``value`` as a section holds it: lists as tuples, at every depth."""
    if isinstance(value, list | tuple):
        return tuple(_as_held(v) for v in value)
    if isinstance(value, dict):
        return {k: _as_held(v) for k, v in value.items()}
    return value


def _make_checker(tp: Any) -> Check:
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
    if origin is typing.Annotated:
        # What pydantic also enforces upstream (recipekit.upstream.bounds).
        base_ok, base_text = _predicate(get_args(tp)[0])
        bounds = [b for b in tp.__metadata__ if isinstance(b, Bounds)]
        words = " and ".join(b.words() for b in bounds)
        return (
            lambda v: base_ok(v) and all(b.holds(v) for b in bounds)
        ), f"{base_text} {words}".strip()
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


# ``after`` places a key a derived section adds (``_in_base_order``).


def required(*checks: Callable[..., None], after: str = "") -> Any:
    return attrs.field(validator=list(checks) or None, metadata=_placed(after))


def optional(*checks: Callable[..., None], after: str = "") -> Any:
    return attrs.field(default=UNSET, validator=list(checks) or None, metadata=_placed(after))


def derived(*checks: Callable[..., None], after: str = "") -> Any:
    return attrs.field(default=DERIVED, validator=list(checks) or None, metadata=_placed(after))


def fixed(value: Any, *checks: Callable[..., None], after: str = "") -> Any:
    """A key the framework requires but whose value is almost never changed."""
    return attrs.field(default=value, validator=list(checks) or None, metadata=_placed(after))


def _placed(after: str) -> dict[str, str]:
    return {_AFTER: after} if after else {}
