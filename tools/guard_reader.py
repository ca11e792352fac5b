"""Reading a pinned function's guards: each ``raise`` or ``assert`` it reaches through ``if``
statements alone, with the conjunction of the conditions on the way, kept where that condition
reads only the names a config gives (a constructor's parameters, a dataclass's fields) and
constants. ``recipekit.upstream.conditions`` evaluates them at plan time.

A method of a config class reads its fields as ``self.x``: with ``fields`` given, ``self.x`` is
read as the name ``x``. A name the function assigns before the guard is not read (the guard
would test a value other than the one given); nor is a guard inside a loop, a ``with`` or a
``try``, whose conditions the walk does not follow.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Iterator

import attrs

from recipekit.upstream.classes import UpstreamSource

# What a guard may contain: constants, the readable names, and operators on them.
_PLAIN = (
    ast.Expression,
    ast.Constant,
    ast.Name,
    ast.Load,
    ast.Compare,
    ast.BoolOp,
    ast.UnaryOp,
    ast.BinOp,
    ast.Subscript,
    ast.Tuple,
    ast.List,
    ast.cmpop,
    ast.boolop,
    ast.unaryop,
    ast.operator,
)


@attrs.frozen
class Guard:
    """One guard: its condition (an expression over the readable names), what it raises
    (``AssertionError`` for an assert), its line, and the names assigned before it."""

    condition: ast.expr
    raised: str
    line: int
    assigned: frozenset[str]

    @property
    def text(self) -> str:
        return ast.unparse(self.condition)


def plain(node: ast.AST, names: set[str] | frozenset[str]) -> bool:
    """Whether ``node`` reads only ``names`` and constants, with operators a config's values
    answer."""
    for part in ast.walk(node):
        if not isinstance(part, _PLAIN):
            return False
        if isinstance(part, ast.Name) and part.id not in names:
            return False
        if isinstance(part, ast.Subscript) and not isinstance(part.slice, ast.Constant):
            return False
    return True


class _SelfFields(ast.NodeTransformer):
    """``self.x`` -> ``x`` for the class's fields."""

    def __init__(self, fields: frozenset[str]) -> None:
        self.fields = fields

    def visit_Attribute(self, node: ast.Attribute) -> ast.expr:
        if (
            isinstance(node.value, ast.Name)
            and node.value.id == "self"
            and node.attr in self.fields
        ):
            return ast.copy_location(ast.Name(id=node.attr, ctx=node.ctx), node)
        visited = self.generic_visit(node)
        assert isinstance(visited, ast.expr)
        return visited


def stored(node: ast.AST, fields: frozenset[str] = frozenset()) -> set[str]:
    """The names ``node`` assigns (``x = ...``; ``self.x = ...`` for a field ``x``)."""
    out = set()
    for part in ast.walk(node):
        if isinstance(part, ast.Name) and isinstance(part.ctx, ast.Store):
            out.add(part.id)
        elif (
            isinstance(part, ast.Attribute)
            and isinstance(part.ctx, ast.Store)
            and isinstance(part.value, ast.Name)
            and part.value.id == "self"
            and part.attr in fields
        ):
            out.add(part.attr)
    return out


def guards(
    fn: ast.FunctionDef,
    fields: frozenset[str] = frozenset(),
    assigned: frozenset[str] = frozenset(),
) -> list[Guard]:
    """Every guard of ``fn`` (see the module's docstring); ``fields``: read ``self.x`` as ``x``;
    ``assigned``: names already assigned when ``fn`` starts."""
    # A copy keeps the pinned lines; the rewrite of self.x leaves the function itself alone.
    body = [_SelfFields(fields).visit(s) for s in copy.deepcopy(fn.body)]
    return list(_walk(body, [], set(assigned), fields))


def _conjunction(conditions: list[ast.expr]) -> ast.expr:
    if len(conditions) == 1:
        return conditions[0]
    return ast.BoolOp(op=ast.And(), values=list(conditions))


def _walk(
    body: list[ast.stmt], conditions: list[ast.expr], assigned: set[str], fields: frozenset[str]
) -> Iterator[Guard]:
    for statement in body:
        if isinstance(statement, ast.If):
            yield from _walk(statement.body, [*conditions, statement.test], set(assigned), fields)
            negated = ast.UnaryOp(op=ast.Not(), operand=statement.test)
            yield from _walk(statement.orelse, [*conditions, negated], set(assigned), fields)
        elif isinstance(statement, ast.Raise) and conditions and statement.exc is not None:
            exc = statement.exc
            raised = exc.func if isinstance(exc, ast.Call) else exc
            yield Guard(
                _conjunction(conditions), ast.unparse(raised), statement.lineno, frozenset(assigned)
            )
        elif isinstance(statement, ast.Assert):
            failing = ast.UnaryOp(op=ast.Not(), operand=statement.test)
            yield Guard(
                _conjunction([*conditions, failing]),
                "AssertionError",
                statement.lineno,
                frozenset(assigned),
            )
        assigned |= stored(statement, fields)


def readable(found: list[Guard], names: set[str] | frozenset[str]) -> list[Guard]:
    """The guards whose condition reads only ``names`` not assigned before them."""
    return [g for g in found if plain(g.condition, set(names) - g.assigned)]


def pinned_base(source: UpstreamSource, qualified: str) -> str | None:
    """The first base of the class ``qualified`` that the pinned files define."""
    return next((b for b in source.bases(qualified) if b in source.nodes), None)


def super_call(fn: ast.FunctionDef, method: str) -> tuple[int, ast.Call] | None:
    """Where ``fn``'s body calls ``super().<method>(...)`` as a statement of its own: the
    statement's index, and the call."""
    for index, statement in enumerate(fn.body):
        call = statement.value if isinstance(statement, ast.Expr) else None
        if (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute)
            and call.func.attr == method
            and isinstance(call.func.value, ast.Call)
            and ast.unparse(call.func.value.func) == "super"
        ):
            return index, call
    return None
