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
from collections.abc import Callable, Iterator

import attrs

from recipekit.upstream import conditions
from recipekit.upstream.classes import UpstreamSource
from recipekit.upstream.replay import EVERYTHING

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
        if isinstance(call, ast.Call) and is_super_call(call, method):
            return index, call
    return None


def is_super_call(call: ast.Call, method: str) -> bool:
    """Whether ``call`` is ``super().<method>(...)``."""
    return (
        isinstance(call.func, ast.Attribute)
        and call.func.attr == method
        and isinstance(call.func.value, ast.Call)
        and ast.unparse(call.func.value.func) == "super"
    )


# --- a function as a program to replay ---------------------------------------------------------
#
# A guard that reads a name the function assigns first (``self.ffn_hidden_size = 4 *
# self.hidden_size`` before a check of it) is not readable on the values given; it is on the
# values the function has made by then. ``program`` writes the function's statements as steps
# that ``recipekit.upstream.replay`` runs on a config's values:
#
#   ["set", name, expression | None]              an assignment (None: one it cannot evaluate)
#   ["if", test | None, then, else, stores, exits] a branch; stores: every name either side
#                                                  assigns, exits: whether either may return
#   ["guard", failing, raised, line, shown]        a raise (failing "True") or an assert
#                                                  (failing "not (test)"); shown: the whole
#                                                  condition on the way, as a message quotes it
#   ["forget", names]                              a statement it does not follow (a loop, a
#                                                  ``try``, a call that may change a value)
#   ["call", steps]                                a function it runs (``super().__post_init__()``)
#   ["warn", line, shown]                          a ``warnings.warn`` call
#   ["return"]
#
# A field read as ``self.x`` is the name ``x``; a local variable of the same name is renamed.

# The calls an expression may make: builtins a config's values answer without side effects.
SAFE_CALLS = frozenset(conditions.CALLS)
# The names of builtins an evaluable expression may read: the calls and isinstance's types.
BUILTIN_NAMES = SAFE_CALLS | frozenset(conditions.TYPES)
# The calls that warn.
WARNINGS = frozenset({"warnings.warn"})
_EVALUABLE = (*_PLAIN, ast.Call, ast.keyword, ast.Set, ast.Attribute)

Step = list[object]


def evaluable(node: ast.AST | None, nested: frozenset[str] | None = None) -> str | None:
    """``node``'s source text where ``recipekit.upstream.replay`` can evaluate it: the forms of
    ``plain`` and the ``SAFE_CALLS``; None otherwise. ``nested`` (a pydantic model's program):
    also an attribute of one of these fields (one that holds a model, ``conditions.Model``),
    the pure methods of a builtin value (``conditions.METHODS``: ``extra.get("x")``), a dict
    display (``{**a, "k": v}`` too) and a conditional expression."""
    if node is None:
        return None
    methods = {
        id(part.func)
        for part in ast.walk(node)
        if nested is not None
        and isinstance(part, ast.Call)
        and isinstance(part.func, ast.Attribute)
        and part.func.attr in conditions.METHOD_NAMES
        and not part.keywords
    }
    for part in ast.walk(node):
        if not isinstance(part, _EVALUABLE) and not (
            nested is not None and (isinstance(part, ast.IfExp) or isinstance(part, ast.Dict))
        ):
            return None
        if (
            isinstance(part, ast.Call)
            and id(part.func) not in methods
            and not (
                isinstance(part.func, ast.Name)
                and part.func.id in SAFE_CALLS
                and (not part.keywords or part.func.id == "dict")
            )
        ):
            return None
        if isinstance(part, ast.Subscript) and not isinstance(part.slice, ast.Constant):
            return None
        if (
            isinstance(part, ast.Attribute)
            and id(part) not in methods
            and _root(part) not in (nested or ())
        ):
            return None
    return ast.unparse(node)


def _root(node: ast.Attribute) -> str | None:
    """The name an attribute chain starts from (``a`` of ``a.b.c``), None for another form."""
    value = node.value
    while isinstance(value, ast.Attribute):
        value = value.value
    return value.id if isinstance(value, ast.Name) else None


class _LocalNames(ast.NodeTransformer):
    """A local variable named as a field is renamed, so that ``self.x`` alone is ``x``."""

    def __init__(self, fields: frozenset[str]) -> None:
        self.fields = fields

    def visit_Name(self, node: ast.Name) -> ast.Name:
        if node.id in self.fields:
            return ast.copy_location(ast.Name(id=f"_local_{node.id}", ctx=node.ctx), node)
        return node


def program(
    fn: ast.FunctionDef,
    fields: frozenset[str],
    inline: Callable[[ast.Call], list[Step] | None] = lambda call: None,
    nested: frozenset[str] | None = None,
) -> list[Step]:
    """``fn``'s body as steps (see above). ``inline(call)``: the steps of a call statement the
    program runs in place (a base's ``__post_init__``), or None to treat it as any call;
    ``nested``: a pydantic model's program, whose fields named there hold models
    (``evaluable``)."""
    body = copy.deepcopy(fn.body)
    body = [_SelfFields(fields).visit(_LocalNames(fields).visit(s)) for s in body]
    # Only a field or a local the function assigns has a value to forget.
    names = set(fields) | stored(ast.Module(body=body, type_ignores=[])) | {EVERYTHING}
    return _kept(_steps(body, fields, [], inline, nested), names)


def _kept(steps: list[Step], names: set[str]) -> list[Step]:
    out: list[Step] = []
    for step in steps:
        if step[0] == "forget":
            kept = [n for n in step[1] if n in names]  # type: ignore[attr-defined]
            if kept:
                out.append(["forget", kept])
        elif step[0] == "if":
            then, orelse = (_kept(s, names) for s in step[2:4])  # type: ignore[arg-type]
            changed = [n for n in step[4] if n in names]  # type: ignore[attr-defined]
            out.append(["if", step[1], then, orelse, changed, step[5]])
        else:
            out.append(step)
    return out


# Builtins that read an object handed to them and change nothing.
_READ_ONLY = frozenset({"getattr", "hasattr", "isinstance", "type", "id", "repr", "str"})
# Builtins that change none of their arguments.
PURE_BUILTINS = _READ_ONLY | SAFE_CALLS | {"frozenset", "next", "iter"}


def _self_calls(node: ast.AST) -> list[ast.Call]:
    """The calls in ``node`` that hand ``self`` to code that may change it."""
    return [
        part
        for part in ast.walk(node)
        if isinstance(part, ast.Call)
        and not (isinstance(part.func, ast.Name) and part.func.id in _READ_ONLY)
        and any(isinstance(a, ast.Name) and a.id == "self" for a in part.args)
    ]


def _hands_self(node: ast.AST) -> bool:
    """Whether a call in ``node`` hands ``self`` to code that may change any field. A
    ``setattr(self, name, value)`` changes one: the field named, where ``name`` is a constant;
    else one of the fields the statement reads (``_set_by_name``), as Megatron-Core's migration
    of a deprecated setting into the field the loop consults."""
    return any(
        not (isinstance(c.func, ast.Name) and c.func.id == "setattr") for c in _self_calls(node)
    )


def _set_by_name(node: ast.AST, fields: frozenset[str]) -> set[str]:
    """The fields a ``setattr(self, ...)`` in ``node`` may change (see ``_hands_self``)."""
    out: set[str] = set()
    for call in _self_calls(node):
        if not (isinstance(call.func, ast.Name) and call.func.id == "setattr"):
            continue
        name = call.args[1] if len(call.args) > 1 else None
        if isinstance(name, ast.Constant) and isinstance(name.value, str):
            out.add(name.value)
        else:
            out |= {p.id for p in ast.walk(node) if isinstance(p, ast.Name) and p.id in fields}
    return out


def _changed(
    node: ast.AST, fields: frozenset[str], pure: frozenset[str] = frozenset()
) -> list[str]:
    """The names a statement may change: what it assigns, and what a call in it may change in
    place (``x.append(...)``: x; a call handed a name: that name); ``pure``: methods that
    change nothing (of a pydantic model's builtin values, ``_pure``)."""
    names = stored(node, fields) | _set_by_name(node, fields)
    for part in ast.walk(node):
        if not isinstance(part, ast.Call):
            continue
        if isinstance(part.func, ast.Name) and part.func.id in PURE_BUILTINS:
            continue
        if isinstance(part.func, ast.Attribute) and part.func.attr in pure:
            continue
        if isinstance(part.func, ast.Attribute) and isinstance(part.func.value, ast.Name):
            names.add(part.func.value.id)
        names |= {a.id for a in part.args if isinstance(a, ast.Name)}
    return sorted(names - {"self"})


def _may_change(
    node: ast.AST, fields: frozenset[str], pure: frozenset[str] = frozenset()
) -> list[str]:
    """What a forget step after ``node`` names: everything where it hands ``self`` on."""
    return [EVERYTHING] if _hands_self(node) else _changed(node, fields, pure)


def _forget(node: ast.AST, fields: frozenset[str], pure: frozenset[str] = frozenset()) -> Step:
    return ["forget", _may_change(node, fields, pure)]


def _pure(nested: frozenset[str] | None) -> frozenset[str]:
    """The methods a program's calls may make without changing anything: a pydantic model's
    values are builtin ones, whose ``conditions.METHODS`` change nothing."""
    return conditions.METHOD_NAMES if nested is not None else frozenset()


def _exits(body: list[ast.stmt]) -> bool:
    return any(isinstance(p, ast.Return) for s in body for p in ast.walk(s))


def _steps(
    body: list[ast.stmt],
    fields: frozenset[str],
    conditions: list[ast.expr],
    inline: Callable[[ast.Call], list[Step] | None],
    nested: frozenset[str] | None = None,
) -> list[Step]:
    out: list[Step] = []
    for statement in body:
        if isinstance(statement, ast.If):
            negated = ast.UnaryOp(op=ast.Not(), operand=statement.test)
            then = _steps(statement.body, fields, [*conditions, statement.test], inline, nested)
            orelse = _steps(statement.orelse, fields, [*conditions, negated], inline, nested)
            changed = _may_change(statement, fields, _pure(nested))
            exits = _exits(statement.body) or _exits(statement.orelse)
            out.append(["if", evaluable(statement.test, nested), then, orelse, changed, exits])
        elif isinstance(statement, ast.Raise) and statement.exc is not None:
            exc = statement.exc
            raised = ast.unparse(exc.func if isinstance(exc, ast.Call) else exc)
            out.append(["guard", "True", raised, statement.lineno, _on_the_way(conditions)])
        elif isinstance(statement, ast.Assert):
            failing = ast.UnaryOp(op=ast.Not(), operand=statement.test)
            shown = _on_the_way([*conditions, failing])
            out.append(
                ["guard", evaluable(failing, nested), "AssertionError", statement.lineno, shown]
            )
        elif isinstance(statement, ast.Return):
            out.append(["return"])
        elif isinstance(statement, ast.Assign | ast.AnnAssign | ast.AugAssign):
            out.extend(_assignment(statement, fields, nested))
        elif isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
            if ast.unparse(statement.value.func) in WARNINGS:
                out.append(["warn", statement.lineno, _on_the_way(conditions)])
            elif (inlined := inline(statement.value)) is not None:
                out.append(["call", inlined])
            else:
                out.extend(_forgotten(statement, fields, _pure(nested)))
        elif not isinstance(statement, ast.Expr | ast.Pass):
            out.extend(_forgotten(statement, fields, _pure(nested)))
    return out


def _on_the_way(conditions: list[ast.expr]) -> str:
    """The conditions a step is reached under, as one expression (``True`` for none)."""
    return ast.unparse(_conjunction(conditions)) if conditions else "True"


def _forgotten(
    statement: ast.stmt, fields: frozenset[str], pure: frozenset[str] = frozenset()
) -> list[Step]:
    """A statement the program does not follow: a step forgetting what it may change, if any."""
    step = _forget(statement, fields, pure)
    return [step] if step[1] else []


def _assignment(
    statement: ast.stmt, fields: frozenset[str], nested: frozenset[str] | None = None
) -> list[Step]:
    """``x = e`` as ``["set", "x", e]``; ``x += e`` as ``x = x + e``; anything else (unpacking,
    an item or attribute set) forgets what it changes."""
    if isinstance(statement, ast.AugAssign) and isinstance(statement.target, ast.Name):
        value: ast.expr | None = ast.BinOp(
            left=ast.Name(id=statement.target.id, ctx=ast.Load()),
            op=statement.op,
            right=statement.value,
        )
        targets: list[ast.expr] = [statement.target]
    elif isinstance(statement, ast.AnnAssign):
        if statement.value is None:
            return []  # a declaration
        value, targets = statement.value, [statement.target]
    elif isinstance(statement, ast.Assign):
        value, targets = statement.value, list(statement.targets)
    else:
        return [_forget(statement, fields, _pure(nested))]
    if value is not None and all(isinstance(t, ast.Name) for t in targets):
        text = evaluable(value, nested)
        steps: list[Step] = [["set", t.id, text] for t in targets if isinstance(t, ast.Name)]
        if text is None and _hands_self(value):
            steps.append(["forget", [EVERYTHING]])
        return steps
    return [_forget(statement, fields, _pure(nested))]
