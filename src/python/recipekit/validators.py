"""Value checks that sit beside a field: ``field(validator=at_least(1))``.

They skip ``None`` and the markers (``UNSET``, ``DERIVED``): the type check has already said
whether those are allowed, and a derived value is checked again once it is computed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from typing import Any

import attrs

from recipekit.errors import FieldError
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


def absolute_path(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not _skip(value) and (not isinstance(value, str) or not value.startswith("/")):
        _fail(attribute, "must be an absolute path (every node resolves it alike)", value)


def matching(pattern: str, message: str) -> Validator:
    """A string that matches ``pattern`` (a regular expression, anchored by the caller)."""
    compiled = re.compile(pattern)

    def check(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if not isinstance(value, str) or not compiled.match(value):
            _fail(attribute, message, value)

    return check
