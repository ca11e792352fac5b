"""Whether a config value is of a type written as ``recipekit.upstream.annotations.type_text``
writes it (``int``, ``float | None``, ``Literal['a', 'b']``, ``tuple[str, ...]``,
``dict[str, Any]``, a config class's name, ``Any``).

A value is what a YAML file or ``--set`` gives: an int where a float is declared passes (Python
takes it), a bool where an int is does not; a list or tuple is a ``tuple[X, ...]``. What the text
does not let one tell (``Any``, a class's name, text that does not parse) passes: no check
refuses what the framework may accept.
"""

from __future__ import annotations

import ast
from functools import cache
from typing import Any


def matches(value: Any, type_text: str) -> bool:
    """Whether ``value`` may be of the type ``type_text`` names."""
    node = _parse(type_text)
    return node is None or _matches(value, node)


@cache
def _parse(type_text: str) -> ast.expr | None:
    try:
        return ast.parse(type_text, mode="eval").body
    except SyntaxError:
        return None


def _matches(value: Any, node: ast.expr) -> bool:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _matches(value, node.left) or _matches(value, node.right)
    if isinstance(node, ast.Constant) and node.value is None:
        return value is None
    if isinstance(node, ast.Name):
        return _scalar(value, node.id)
    if isinstance(node, ast.Subscript):
        head = ast.unparse(node.value)
        items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if head == "Literal":
            try:
                allowed = [ast.literal_eval(i) for i in items]
            except ValueError:
                return True
            # True == 1: a literal is matched by its kind and value.
            return any(_same_kind(value, a) and value == a for a in allowed)
        if head == "tuple":
            if not isinstance(value, list | tuple):
                return False
            return len(items) != 2 or all(_matches(v, items[0]) for v in value)
        if head == "dict":
            if not isinstance(value, dict):
                return False
            return len(items) != 2 or all(_matches(v, items[1]) for v in value.values())
    return True


def _same_kind(value: Any, allowed: Any) -> bool:
    if isinstance(allowed, bool) or isinstance(value, bool):
        return isinstance(allowed, bool) and isinstance(value, bool)
    return isinstance(value, type(allowed))


def _scalar(value: Any, name: str) -> bool:
    if name == "bool":
        return isinstance(value, bool)
    if name == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if name == "float":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if name == "str":
        return isinstance(value, str)
    return True  # Any, or a config class's name


# A value that is not plain data yet (an interpolation, a marker): no type check looks at it.
OPAQUE = object()


def plain(value: Any) -> Any:
    """The value as a section holds it (lists as tuples, at any depth), or OPAQUE."""
    if isinstance(value, list | tuple):
        items = tuple(plain(v) for v in value)
        return OPAQUE if any(i is OPAQUE for i in items) else items
    if isinstance(value, dict):
        mapping = {k: plain(v) for k, v in value.items()}
        return OPAQUE if any(v is OPAQUE for v in mapping.values()) else mapping
    if isinstance(value, str) and "${" in value:
        return OPAQUE
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return OPAQUE


def expected_type(value: Any, type_text: str) -> str:
    """What ``type_text`` takes, as a section's type check words it, where the plain ``value``
    is not of it; "" where it is, where the text is ``Any`` or the value is OPAQUE."""
    from recipekit.sections import _checker  # the check every section key gets
    from recipekit.upstream.declared import evaluated

    if type_text == "Any" or value is OPAQUE:
        return ""
    coerce, ok, expected = _checker(evaluated(type_text))
    return "" if ok(coerce(value)) else expected
