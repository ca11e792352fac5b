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
from collections.abc import Callable

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
) -> str:
    """``annotation`` (as written in ``module``) as a Python type's source text."""
    try:
        node = ast.parse(annotation, mode="eval").body
    except SyntaxError:
        return ANY
    return _Converter(source, config_name).text(node, module, frozenset())


class _Converter:
    def __init__(self, source: UpstreamSource, config_name: Callable[[str], str | None]) -> None:
        self.source = source
        self.config_name = config_name

    def text(self, node: ast.expr, module: str, seen: frozenset[str]) -> str:
        members = self.members(node, module, seen)
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
            return self.members(items[0], module, seen)
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
        if resolved is None or resolved in seen:
            return [ANY]
        named = self.config_name(resolved)
        if named is not None:
            return [named]
        alias = self.source.alias(resolved)
        if alias is not None:
            return self.members(alias, resolved.split(":")[0], seen | {resolved})
        return [ANY]


def _literal_values(text: str) -> list[str]:
    """The values' source texts of a ``Literal[...]`` text."""
    node = ast.parse(text, mode="eval").body
    assert isinstance(node, ast.Subscript)
    items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    return [ast.unparse(i) for i in items]
