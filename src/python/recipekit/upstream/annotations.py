"""An upstream annotation as a Python type that recipekit's checks understand.

Written out as source text for generated modules: ``int``, ``float``, ``str``, ``bool``,
``None``, ``Literal[...]`` (aliases of literals resolved and flattened), unions, lists and
tuples as ``tuple[X, ...]`` (a section holds a list as a tuple), mappings as ``dict[str, X]``,
a config class as the name ``config_name`` gives it. What cannot be told from the source (a
class of the framework's own, a callable, an alias outside the files read) is ``Any``: the
checks never refuse what the framework may accept.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable
from typing import Annotated, Any, get_args, get_origin

from recipekit.upstream.bounds import NAMES, Bounds, from_keywords
from recipekit.upstream.classes import UpstreamSource

ANY = "Any"
_SCALARS = {"int": "int", "float": "float", "str": "str", "bool": "bool", "None": "None"}
_LISTS = {"list", "List", "Sequence", "tuple", "Tuple", "set", "Set", "frozenset"}
_MAPPINGS = {"dict", "Dict", "Mapping", "MutableMapping", "OrderedDict"}
_UNIONS = {"Optional", "Union"}


def type_text(
    annotation: str,
    module: str,
    source: UpstreamSource,
    config_name: Callable[[str], str | None] = lambda _: None,
    *,
    constraints: bool = False,
    bounds: Bounds | None = None,
) -> str:
    """``annotation`` (as written in ``module``) as a Python type's source text. With
    ``constraints``, what pydantic also enforces (``Annotated[...]`` metadata, its named types,
    and ``bounds`` from the field's own ``Field(...)``) is kept as ``Annotated[X, Bounds(...)]``."""
    try:
        node = ast.parse(annotation, mode="eval").body
    except SyntaxError:
        return ANY
    return _Converter(source, config_name, constraints).text(node, module, frozenset(), bounds)


class _Converter:
    def __init__(
        self,
        source: UpstreamSource,
        config_name: Callable[[str], str | None],
        constraints: bool = False,
    ) -> None:
        self.source = source
        self.config_name = config_name
        self.constraints = constraints

    def text(
        self, node: ast.expr, module: str, seen: frozenset[str], bounds: Bounds | None = None
    ) -> str:
        members = self.members(node, module, seen)
        if bounds is not None:
            members = [_bounded(m, bounds) for m in members]
        if ANY in members:
            return ANY
        literals = [m for m in members if m.startswith("Literal[")]
        others = [m for m in members if not m.startswith("Literal[")]
        if literals:
            values = [v for lit in literals for v in _literal_values(lit)]
            merged = "Literal[" + ", ".join(dict.fromkeys(values)) + "]"
            others = [merged, *others]
        unique = list(dict.fromkeys(others))
        return " | ".join(unique) if unique else ANY

    def members(self, node: ast.expr, module: str, seen: frozenset[str]) -> list[str]:
        """The union members of ``node``, each a type's text."""
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            return self.members(node.left, module, seen) + self.members(node.right, module, seen)
        if isinstance(node, ast.Constant):
            if node.value is None:
                return ["None"]
            if isinstance(node.value, str):  # a forward reference
                try:
                    inner = ast.parse(node.value, mode="eval").body
                except SyntaxError:
                    return [ANY]
                return self.members(inner, module, seen)
            return [ANY]
        text = ast.unparse(node)
        bare = text.removeprefix("typing.").removeprefix("typing_extensions.")
        if bare in _SCALARS:
            return [_SCALARS[bare]]
        if bare in ("Any", "object"):
            return [ANY]
        if bare in _LISTS:
            return ["tuple[Any, ...]"]
        if bare in _MAPPINGS:
            return ["dict[str, Any]"]
        if isinstance(node, ast.Subscript):
            return self.subscript(node, module, seen)
        if isinstance(node, ast.Name | ast.Attribute):
            return self.named(text, module, seen)
        return [ANY]

    def subscript(self, node: ast.Subscript, module: str, seen: frozenset[str]) -> list[str]:
        head = ast.unparse(node.value).split(".")[-1]
        items = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
        if head in _UNIONS:
            found = [m for item in items for m in self.members(item, module, seen)]
            return [*found, "None"] if head == "Optional" else found
        if head == "Literal":
            values = []
            for item in items:
                if isinstance(item, ast.Constant) and not isinstance(item.value, bytes):
                    values.append(repr(item.value))
                    continue
                # A literal of literals (Literal["auto", RunnerType]).
                nested = self.members(item, module, seen)
                if not all(n.startswith("Literal[") for n in nested):
                    return [ANY]
                values += [v for n in nested for v in _literal_values(n)]
            return ["Literal[" + ", ".join(values) + "]"]
        if head in ("Annotated",):
            base = self.members(items[0], module, seen)
            limits = _metadata_bounds(items[1:]) if self.constraints else None
            return [_bounded(m, limits) for m in base] if limits else base
        if head in ("NotRequired", "Required", "ReadOnly", "Final"):
            return self.members(items[0], module, seen)
        if head in _LISTS:
            inner = self.text(items[0], module, seen) if items else ANY
            return [f"tuple[{inner}, ...]"]
        if head in _MAPPINGS:
            inner = self.text(items[1], module, seen) if len(items) == 2 else ANY
            return [f"dict[str, {inner}]"]
        return [ANY]

    def named(self, name: str, module: str, seen: frozenset[str]) -> list[str]:
        resolved = self.source.resolve(module, name)
        if resolved is None and self.constraints:
            imported = self.source.imported(module, name)
            if imported is not None and imported.split(".")[0].split(":")[0] == "pydantic":
                return [pydantic_type(imported.rsplit(":", 1)[-1].rsplit(".", 1)[-1])]
        if resolved is None or resolved in seen:
            return [ANY]
        named = self.config_name(resolved)
        if named is not None:
            return [named]
        alias = self.source.alias(resolved)
        if alias is not None:
            return self.members(alias, resolved.split(":")[0], seen | {resolved})
        return [ANY]


def _bounded(member: str, bounds: Bounds) -> str:
    """``member`` with ``bounds`` kept beside it, where a value of it can break them."""
    if member in ("None", ANY) or member.startswith(("Literal[", "Annotated[")):
        return member
    return f"Annotated[{member}, {bounds!r}]"


def _metadata_bounds(items: list[ast.expr]) -> Bounds | None:
    """The bounds ``Annotated``'s metadata declares: ``Field(gt=0, lt=1)``, or annotated_types'
    ``Gt(0)``, ``Interval(ge=1)``, ``MinLen(1)`` (each read from its literal arguments)."""
    given: dict[str, Any] = {}
    for item in items:
        if not isinstance(item, ast.Call):
            continue
        name = ast.unparse(item.func).split(".")[-1]
        literal = {
            k.arg: k.value.value
            for k in item.keywords
            if k.arg is not None and isinstance(k.value, ast.Constant)
        }
        if name in ("Field", "Interval"):
            given.update(literal)
        elif name in _ANNOTATED_TYPES and item.args and isinstance(item.args[0], ast.Constant):
            given[_ANNOTATED_TYPES[name]] = item.args[0].value
    return from_keywords(given)


# annotated_types' one-argument constraints and the Field keyword each stands for.
_ANNOTATED_TYPES = {
    "Gt": "gt",
    "Ge": "ge",
    "Lt": "lt",
    "Le": "le",
    "MultipleOf": "multiple_of",
    "MinLen": "min_length",
    "MaxLen": "max_length",
}


@functools.cache
def pydantic_type(name: str) -> str:
    """Pydantic's own named type ``name`` (``PositiveInt``, ``NonNegativeFloat``, ...) as a
    type's text, read from the pydantic installed beside recipekit: its ``Annotated`` base
    and the annotated_types constraints it carries. ``Any`` for one that is no such alias."""
    import pydantic  # generation time only: the tables hold the result

    found = getattr(pydantic, name, None)
    if get_origin(found) is not Annotated:
        return ANY
    base, *metadata = get_args(found)
    text = _SCALARS.get(getattr(base, "__name__", ""), ANY)
    given = {n: getattr(m, n) for m in metadata for n in NAMES if getattr(m, n, None) is not None}
    bounds = from_keywords(given)
    return _bounded(text, bounds) if bounds else text


def _literal_values(text: str) -> list[str]:
    """The values' source texts of a ``Literal[...]`` text."""
    node = ast.parse(text, mode="eval").body
    assert isinstance(node, ast.Subscript)
    items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    return [ast.unparse(i) for i in items]
