"""Value checks that sit beside a field: ``field(validator=at_least(1))``.

They skip ``None`` and the markers (``UNSET``, ``DERIVED``): the type check has already said
whether those are allowed, and a derived value is checked again once it is computed. Each reads
its value alone, never the instance (its first argument): ``keypaths.checked_alone`` counts on
it, so that the layout search checks each (key, value) once. A check of one key against another
belongs elsewhere (a rule of the plan).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable, Collection
from typing import Any

import attrs

from recipekit.errors import FieldError, did_you_mean
from recipekit.markers import Marker

Validator = Callable[[Any, "attrs.Attribute[Any]", Any], None]


def _skip(value: Any) -> bool:
    return value is None or isinstance(value, Marker)


def _fail(attribute: attrs.Attribute[Any], message: str, value: Any, hint: str = "") -> None:
    exc = FieldError(message, value, hint)
    exc.field_name = attribute.name  # type: ignore[attr-defined]
    raise exc


def at_least(bound: float) -> Validator:
    def check(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if not _skip(value) and value < bound:
            _fail(attribute, f"must be >= {bound}", value)

    return check


def between(low: float, high: float) -> Validator:
    def check(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if not _skip(value) and not low <= value <= high:
            _fail(attribute, f"must be between {low} and {high}", value)

    return check


def one_of(allowed: Collection[str]) -> Validator:
    """An enumeration the framework accepts, listed in the error."""
    choices = tuple(allowed)

    def check(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if not _skip(value) and value not in choices:
            _fail(
                attribute,
                "not an accepted value",
                value,
                hint="allowed: " + ", ".join(repr(c) for c in choices),
            )

    return check


def checks_of(validator: Validator | None) -> tuple[Validator, ...]:
    """A field's validator as the checks it runs (attrs' ``and_`` holds several; none, none)."""
    if validator is None:
        return ()
    checks: tuple[Validator, ...] = getattr(validator, "_validators", (validator,))
    return checks


def upstream_values(name: str) -> Validator:
    """One of the values the pinned framework accepts for a setting it dispatches on, read
    from its source (``recipekit.upstream.allowed``). The section binds ``name`` to the pinned
    source its upstream class names when the class is built; unbound, it refuses to run."""

    def check(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        raise TypeError(f"{attribute.name}: upstream_values({name!r}) outside a section")

    check.allowed_set = name  # type: ignore[attr-defined]
    return check


@functools.cache
def allowed_at(name: str, source: str) -> Validator:
    """``upstream_values(name)`` bound to the pinned ``source``: the error lists the values
    and cites where the pin defines them, with the closest as a did-you-mean."""
    from recipekit.upstream.allowed import allowed

    found = allowed(name, source)

    def check(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        # A tuple is one value per item (a per-layer list), where the field's type takes one.
        for item in value if isinstance(value, tuple) else (value,):
            if not _skip(item) and not (isinstance(item, str) and found.accepts(item)):
                close = did_you_mean(str(item), found.values, what="values")
                _fail(
                    attribute,
                    ("" if item is value else f"{item!r} is ")
                    + f"not an accepted value ({found.cited()} accepts "
                    + ", ".join(repr(v) for v in found.values)
                    + ")",
                    value,
                    hint=close if close.startswith("did you mean") else "",
                )

    check.allowed_set = name  # type: ignore[attr-defined]
    check.allowed = found  # type: ignore[attr-defined]
    return check


def power_of_two(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not _skip(value) and (value < 1 or value & (value - 1)):
        _fail(attribute, "must be a power of two", value)


def instance_of(*types: type, what: str) -> Validator:
    """A value of one of ``types`` (``what`` names them for the message); ``bool`` is not an
    ``int`` here, as nobody means ``True`` for a port or a count."""

    def check(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        wrong_bool = isinstance(value, bool) and bool not in types
        if wrong_bool or not isinstance(value, types):
            _fail(attribute, f"must be {what}, not {type(value).__name__}", value)

    return check


def str_mapping(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    """A dict of strings to strings (environment, named paths)."""
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        _fail(attribute, "must be a dict of strings to strings", value)


# What no value that reaches a job script, a file name or a store name may hold, anywhere:
# Cc (C0, DEL and C1, whose NEL U+0085 ends a line for some readers), Zl and Zp (U+2028 and
# U+2029, line ends to str.splitlines, YAML and editors), Cf (invisible: a bidi override shows a
# name as other than it is) and Cs (a lone surrogate cannot be written as UTF-8). A newline in
# an #SBATCH line ends sbatch's directive block, and the rest of the line becomes a command.
_NOT_IN_A_LINE = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
_CALLED = {
    "\n": "a newline",
    "\r": "a carriage return",
    "\t": "a tab",
    "\x00": "a NUL",
    "\x7f": "a DEL",
    "\x85": "a next-line character",
    "\u2028": "a line separator",
    "\u2029": "a paragraph separator",
}
_CATEGORY = {"Cc": "a control character", "Cf": "an invisible format character"}


def single_line_problem(text: str) -> str:
    """What keeps ``text`` from being a single line of safe text, and where ("" when nothing
    does): ``holds a newline (\\n) at position 3``."""
    # isprintable() is False for every category refused here (and for a few it allows: Co,
    # Cn, Zs but the space), so most text passes without a look at each character.
    if text.isprintable():
        return ""
    for position, char in enumerate(text):
        category = unicodedata.category(char)
        if category in _NOT_IN_A_LINE:
            what = _CALLED.get(char) or _CATEGORY.get(category, "a lone surrogate")
            return f"holds {what} ({ascii(char)[1:-1]}) at position {position}"
    return ""


def single_line(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    """A single line of safe text (see ``single_line_problem``); None and markers pass."""
    if _skip(value):
        return
    if not isinstance(value, str):
        _fail(attribute, f"must be text, not {type(value).__name__}", value)
    problem = single_line_problem(value)
    if problem:
        _fail(attribute, problem, value)


def absolute_path(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if isinstance(value, str):  # first: "\n/x" is named for its newline, not as relative
        single_line(_, attribute, value)
    if not _skip(value) and (not isinstance(value, str) or not value.startswith("/")):
        _fail(attribute, "must be an absolute path (every node resolves it alike)", value)


def matching(pattern: str, message: str, *, optional: bool = False) -> Validator:
    """A single line of safe text that ``pattern`` matches whole: ``re.fullmatch``, as a
    pattern's ``$`` also matches before a final newline (``re.match("^x$", "x\\n")``).
    ``optional``: null and the markers pass."""
    compiled = re.compile(pattern)

    def check(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if optional and _skip(value):
            return
        if not isinstance(value, str):
            _fail(attribute, message, value)
        problem = single_line_problem(value)
        if problem:
            _fail(attribute, f"{problem}; {message}", value)
        if not compiled.fullmatch(value):
            _fail(attribute, message, value)

    return check
