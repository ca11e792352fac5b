"""Whether an upstream condition holds for a config's values.

A generator reads a guard from a pinned source as Python source text over the parameters of
the call it guards (``not 0.0 <= betas[1] < 1.0``, ``fused and foreach``; see
``tools/generate_torch_optim.py``); here it is evaluated with the values a config gives, or the
parameters' defaults. Only constants, names, subscripts, operators and a few builtins without
side effects (``len``, ``isinstance``, ``min``: ``CALLS``) are evaluated. Where the answer
cannot be told (a name with no value, a value the operator refuses, as a string compared with a
float) it is None: the check that asks says nothing, and the value's type is another check's.
"""

from __future__ import annotations

import ast
import copy
import operator
from collections.abc import Callable, Iterable, Mapping
from functools import cache
from typing import Any, NamedTuple

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.BitAnd: operator.and_,
    ast.BitOr: operator.or_,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], bool]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Is: operator.is_,
    ast.IsNot: operator.is_not,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}


# The builtins an expression may call (none changes its arguments), and the types isinstance
# may name.
CALLS: dict[str, Callable[..., Any]] = {
    "len": len,
    "isinstance": lambda value, types: isinstance(
        value, tuple(types) if isinstance(types, list) else types
    ),
    "min": min,
    "max": max,
    "abs": abs,
    "bool": bool,
    "int": int,
    "float": float,
    "str": str,
    "any": any,
    "all": all,
    "sum": sum,
    "list": list,
    "tuple": tuple,
    "dict": dict,
    "set": set,
    "sorted": sorted,
    # ``from copy import deepcopy``: a copy, the original unchanged
    "deepcopy": copy.deepcopy,
}
TYPES: dict[str, type] = {
    "int": int,
    "float": float,
    "str": str,
    "bool": bool,
    "list": list,
    "tuple": tuple,
    "dict": dict,
}


# The methods of a builtin value an expression may call (none changes its value), by type.
METHODS: dict[type, frozenset[str]] = {
    dict: frozenset({"get", "keys", "values", "items"}),
    str: frozenset({"lower", "upper", "strip", "startswith", "endswith"}),
}
METHOD_NAMES = frozenset().union(*METHODS.values())


class Model(dict[str, Any]):
    """A nested config model's values (a pydantic field of a pydantic model): its keys read as
    attributes too (``self.rollout_failure.nemo_gym.rollout_timeout_s``), as the model's own
    fields are; a plain mapping's are not."""


class Partial(dict[str, Any]):
    """A mapping some of whose keys hold a value only the job knows (``unknown``): reading one
    of those, or all its values, cannot be evaluated (a KeyError, which ``evaluated`` counts as
    unknown); which keys it has, and the others' values, read as a dict's."""

    def __init__(self, known: Mapping[str, Any], unknown: Iterable[str]) -> None:
        super().__init__(known)
        self.unknown = frozenset(unknown)

    def __getitem__(self, key: str) -> Any:
        if key in self.unknown:
            raise KeyError(key)
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        return self[key] if key in self else default

    def __contains__(self, key: object) -> bool:
        return key in self.unknown or super().__contains__(key)

    def __len__(self) -> int:
        return super().__len__() + len(self.unknown)

    def keys(self) -> Any:
        return [*super().keys(), *self.unknown]

    def values(self) -> Any:
        raise KeyError(sorted(self.unknown))

    def items(self) -> Any:
        raise KeyError(sorted(self.unknown))


class Failure(NamedTuple):
    """How evaluating an expression fails as it would in the function: a ``KeyError`` (a key
    the config lacks: ``detail`` is its key path) or a ``TypeError`` (an operand that is None
    where it is ordered or computed with: ``detail`` is the operand's source)."""

    kind: str
    detail: str


class Absent(KeyError):
    """A key a ``Tracked`` mapping does not have, nor may have been given since: reading it
    with a subscript fails as it would in the function (``path``: its key path)."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.path = path


class NoneOperand(TypeError):
    """None ordered or computed with (``None > 0``): Python's TypeError (``operand``: the
    source of the operand that is None)."""

    def __init__(self, operand: str) -> None:
        super().__init__(operand)
        self.operand = operand


class DuplicateKeyword(TypeError):
    """A call handed one keyword twice (``dict(model=m, **cfg)`` where ``cfg`` has ``model``):
    Python's TypeError, before the callee runs (``key``: the config key path of the second,
    where a config mapping gave it, else the keyword)."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


# Values no code changes in place.
IMMUTABLE = (type(None), bool, int, float, str, bytes)


class Tracked(Partial):
    """A config mapping as a replayed function holds it (``recipekit.upstream.replay``): the
    key path it stands at in the config (``path``, which names the key a refusal is about),
    and what the function did to it since. A key it stores a value in reads that value; a key
    it stores what the replay cannot tell in is unknown; handed to code the replay does not
    follow, it is unknown as a whole, and so is every mapping inside it (``poison``). The
    function's other names for it (``grpo_config = master_config.grpo``) read it changed too,
    as the one object they are."""

    def __init__(
        self, known: Mapping[str, Any], unknown: Iterable[str] = (), path: str = ""
    ) -> None:
        super().__init__(known, unknown)
        self.path = path
        self.opaque = False

    def _readable(self, key: object) -> None:
        if self.opaque:
            raise KeyError(key)

    # Whether a key it lacks is not there at all (a mapping's; a model's field may have a
    # default the table does not tell: TrackedModel).
    absent_fails = True

    def __getitem__(self, key: str) -> Any:
        self._readable(key)
        if not dict.__contains__(self, key) and key not in self.unknown and self.absent_fails:
            raise Absent(f"{self.path}.{key}" if self.path else key)
        return super().__getitem__(key)

    def __contains__(self, key: object) -> bool:
        self._readable(key)
        return super().__contains__(key)

    def __len__(self) -> int:
        self._readable(None)
        return super().__len__()

    def keys(self) -> Any:
        self._readable(None)
        return super().keys()

    def values(self) -> Any:
        self._readable(None)
        return super().values() if self.unknown else list(dict.values(self))

    def items(self) -> Any:
        self._readable(None)
        return super().items() if self.unknown else list(dict.items(self))

    def __deepcopy__(self, memo: dict[int, Any]) -> Tracked:
        # One copy per mapping, however many names hold it.
        new = type(self)({}, self.unknown, self.path)
        new.opaque = self.opaque
        memo[id(self)] = new
        for key, value in dict.items(self):
            dict.__setitem__(new, key, copy.deepcopy(value, memo))
        return new

    def put(self, key: str, value: Any) -> None:
        """The function stores ``value`` at ``key``."""
        dict.__setitem__(self, key, value)
        self.unknown = self.unknown - {key}

    def forget(self, key: str) -> None:
        """The function stores at ``key`` what the replay cannot tell."""
        self.unknown = self.unknown | {key}

    def poison_values(self) -> None:
        """Code the replay does not follow was handed one of its values, which one unknown:
        each value code can change in place is unknown; its keys, and the values no code
        changes (a number, a string), are as they were."""
        for key, value in dict.items(self):
            if isinstance(value, Tracked):
                value.poison()
            elif not isinstance(value, IMMUTABLE):
                self.forget(key)

    def poison(self) -> None:
        """Code the replay does not follow may have changed anything in it."""
        if not self.opaque:
            self.opaque = True
            for value in dict.values(self):
                if isinstance(value, Tracked):
                    value.poison()


class Built(Model):
    """The object a replayed ``__init__`` builds (its ``self``): each attribute it stored, read
    back as stored (``self.cfg = config``: ``self.cfg["k"]`` reads the config's ``k``); an
    attribute it did not store is unknown. It holds what it stores only while the replay
    holds it (``recipekit.upstream.replay``). ``origins``: the config key each attribute it
    stored from one holds (``self.ratio = cfg["ratio"]``), which a refusal that reads it is
    about."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.origins: dict[str, str] = {}
        # The class it is an object of (``module:Class``), where the replay knows it: which
        # of the pinned methods a call on it runs (``CLASS_OF``).
        self.cls: str | None = None


# What a replayed function's program calls a record it builds (``Built``: a NamedTuple's or a
# dataclass's fields), a name no upstream source uses.
BUILT = "__built__"
CALLS[BUILT] = Built
# The parameter an ``__init__``'s invoke binds to the class it builds (an object of that class,
# not of the class that defines the ``__init__``), a name no source can use.
CLASS = " class"
# What a program calls to ask which class an object is of (``__class_of__(self) in (...)``):
# the method a call on it runs depends on it.
CLASS_OF = "__class_of__"


def _class_of(value: Any) -> str:
    if isinstance(value, Built) and value.cls is not None:
        return value.cls
    raise _Unknown(CLASS_OF)


CALLS[CLASS_OF] = _class_of


class TrackedModel(Tracked, Model):
    """A pydantic model's values as a replayed function holds them (its fields read as
    attributes)."""

    absent_fails = False


def tracked(value: Any, path: str = "") -> Any:
    """A copy of a config's values (``value``, at the key path ``path``) whose mappings are
    ``Tracked``: what a replayed function reads and changes (``recipekit.upstream.replay``)."""
    if not isinstance(value, dict):
        return value
    unknown = value.unknown if isinstance(value, Partial) else frozenset()
    known = {
        k: tracked(dict.__getitem__(value, k), f"{path}.{k}" if path else str(k))
        for k in dict.keys(value)
    }
    kind = TrackedModel if isinstance(value, Model) else Tracked
    return kind(known, unknown, path)


# Where a replayed function keeps, for each name it set from a config key's value that is
# no mapping (``batch_multiplier = grpo_config.batch_multiplier``), that key (``keyed``).
ORIGINS = " origins"


def keyed_call(node: ast.AST, method: str = "get") -> tuple[ast.expr, Any] | None:
    """(the receiver, the constant key) of ``x.<method>(key, ...)`` (``x.get("k")``, a read of
    the key ``k``; ``x.setdefault("k", v)``); None for another node."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == method
        and node.args
        and isinstance(node.args[0], ast.Constant)
    ):
        return node.func.value, node.args[0].value
    return None


def key_link(node: ast.AST) -> tuple[ast.expr, str] | None:
    """(the owner, the key) of one link of a chain that reads a key: an attribute, a constant
    subscript or a ``.get("k")`` call; None for another node."""
    if isinstance(node, ast.Attribute):
        return node.value, node.attr
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        return node.value, str(node.slice.value)
    call = keyed_call(node)
    return None if call is None else (call[0], str(call[1]))


@cache
def reads_a_key(text: str) -> bool:
    """Whether ``text`` reads one value of the config: a name, or a chain of attributes,
    constant subscripts and ``.get("k")`` calls (which ``keyed`` names)."""
    node: ast.AST = _parse(text)
    while (link := key_link(node)) is not None:
        node = link[0]
    return isinstance(node, ast.Name)


@cache
def split_chain(chain: str) -> tuple[str | None, str]:
    """(the owner's text, the key) of a chain's last link (``a.b["c"]``: ``a.b``, ``c``);
    (None, "") where it ends in no attribute or constant subscript."""
    node = _parse(chain)
    if isinstance(node, ast.Attribute):
        return _text_of(chain, node.value), node.attr
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        return _text_of(chain, node.value), str(node.slice.value)
    return None, ""


def keyed(chain: str, values: Mapping[str, Any]) -> str | None:
    """The config key a chain of attributes and constant subscripts reads
    (``grpo_config.val_period``: ``grpo.val_period``, where ``grpo_config`` holds the config's
    ``grpo``): the key path of the longest part of it that is a ``Tracked`` mapping, then the
    rest of the chain; a name the function set from a key's value, that key (``ORIGINS``);
    None where no part of it is one."""
    origins = values.get(ORIGINS, {})
    if chain in origins:
        return str(origins[chain])
    for text, rest in _owners(chain):
        known, value = evaluated(text, values)
        if known and isinstance(value, Tracked):
            return ".".join([p for p in (value.path, *rest) if p])
        if known and isinstance(value, Built) and rest and rest[0] in value.origins:
            return ".".join([value.origins[rest[0]], *rest[1:]])
    return None


@cache
def _owners(chain: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The parts of a chain ``keyed`` evaluates, longest first, each with the keys the chain
    reads after it: the chain itself, and each owner of a link that is a name, an attribute
    or a subscript, or the owner of a ``.get("k")`` (``(section or {}).get("k")``)."""
    node: ast.expr = _parse(chain)
    found = []
    rest: list[str] = []
    read = isinstance(node, ast.Name | ast.Attribute | ast.Subscript)
    while True:
        if read:
            found.append((_text_of(chain, node), tuple(reversed(rest))))
        link = key_link(node)
        if link is None:
            return tuple(found)
        read = keyed_call(node) is not None or isinstance(
            link[0], ast.Name | ast.Attribute | ast.Subscript
        )
        node, key = link
        rest.append(key)


class _Unknown(Exception):
    """The expression reads something it has no value for, or a form it does not evaluate."""


# What evaluating an expression raises where its value cannot be told (a name with no value, a
# form not evaluated, a value the operator refuses).
_CANNOT_TELL = (_Unknown, TypeError, ValueError, IndexError, KeyError, ZeroDivisionError)


def holds(condition: str, values: Mapping[str, Any]) -> bool | None:
    """Whether ``condition`` is true with ``values`` for its names; None when it cannot tell."""
    known, value = evaluated(condition, values)
    return bool(value) if known else None


def evaluated(source: str, values: Mapping[str, Any]) -> tuple[bool, Any]:
    """(whether it could be evaluated, its value) of an expression over ``values``."""
    known, value, _ = attempt(source, values)
    return known, value


def attempt(source: str, values: Mapping[str, Any]) -> tuple[bool, Any, Failure | None]:
    """``evaluated``, and how evaluating it fails where it would fail in the function too: a
    config key it reads that is not there (a ``Tracked`` mapping's, ``Absent``), or None
    ordered or computed with (``NoneOperand``)."""
    try:
        return True, _value(_parse(source), values), None
    except Absent as absent:
        return False, None, Failure("KeyError", absent.path)
    except DuplicateKeyword as twice:
        return False, None, Failure("DuplicateKeyword", twice.key)
    except NoneOperand as none:
        return False, None, Failure("TypeError", none.operand)
    except _CANNOT_TELL:
        return False, None, None


def constant(source: str) -> tuple[bool, Any]:
    """(whether it could be evaluated, its value) of an expression of constants: a parameter's
    default as a generated table writes it (``1.0 / 3``, ``(0.9, 0.999)``, ``None``)."""
    return evaluated(source, {})


def bound(defaults: Mapping[str, str | None], given: Mapping[str, Any]) -> dict[str, Any]:
    """The values a guard reads: each default that is an expression of constants (a generated
    table's source text; None: no default), then what is given over them."""
    values: dict[str, Any] = {}
    for name, default in defaults.items():
        known, value = (False, None) if default is None else constant(default)
        if known:
            values[name] = value
    return values | dict(given)


def names(condition: str) -> list[str]:
    """The names ``condition`` reads, in the order it reads them."""
    return list(_names(condition))


@cache
def _names(condition: str) -> tuple[str, ...]:
    found = [n.id for n in ast.walk(_parse(condition)) if isinstance(n, ast.Name)]
    return tuple(dict.fromkeys(found))


def read(condition: str, subscripts: bool = False) -> list[str]:
    """What ``condition`` reads, in the order it is written: its names, and a nested model's
    field as the whole chain (``router.backend_timeout_s``); ``subscripts``: a constant
    subscript is part of a chain too (``policy["generation"]["backend"]``)."""
    tree = _parse(condition)

    def link(node: ast.AST) -> bool:
        return isinstance(node, ast.Attribute) or (subscripts and key_link(node) is not None)

    inner = {id(key_link(n)[0]) for n in ast.walk(tree) if link(n)}  # type: ignore[index]
    found = sorted(
        (n for n in ast.walk(tree) if isinstance(n, ast.Name) or link(n)),
        key=lambda n: n.col_offset,  # type: ignore[attr-defined]
    )
    found = [n for n in found if id(n) not in inner]
    return list(dict.fromkeys(ast.unparse(n) for n in found))


@cache
def converted(text: str) -> str:
    """The value a builtin conversion of one argument converts (``bool(cfg.get("k"))``:
    ``cfg.get("k")``): what the result is about."""
    node = _parse(text)
    while (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in TYPES
        and len(node.args) == 1
        and not node.keywords
    ):
        node = node.args[0]
    return _text_of(text, node)


def tuple_items(text: str) -> list[str] | None:
    """The items of a tuple expression's text; None for another expression."""
    node = _parse(text)
    if not isinstance(node, ast.Tuple) or any(isinstance(e, ast.Starred) for e in node.elts):
        return None
    return [ast.unparse(e) for e in node.elts]


@cache
def memberships(condition: str) -> dict[str, str]:
    """Each mapping ``condition`` tests a constant key of (``"k" in cfg``, ``"k" not in (cfg
    or {})``): the mapping's text -> the key, the key a refusal of the test is about."""
    found = {}
    for node in ast.walk(_parse(condition)):
        if (
            isinstance(node, ast.Compare)
            and len(node.ops) == 1
            and isinstance(node.ops[0], ast.In | ast.NotIn)
            and isinstance(node.left, ast.Constant)
            and isinstance(node.left.value, str)
        ):
            mapping = node.comparators[0]
            if isinstance(mapping, ast.BoolOp) and isinstance(mapping.op, ast.Or):
                mapping = mapping.values[0]
            found[ast.unparse(mapping)] = node.left.value
    return found


def keys_read(condition: str, values: Mapping[str, Any]) -> list[str]:
    """The config keys ``condition`` reads, in its order (``keyed``); a mapping it tests a key's
    presence in, at that key (``"k" in cfg``: ``cfg``'s key path and ``k``)."""
    tested = memberships(condition)
    found = []
    for chain in read(condition, True):
        key = keyed(chain, values)
        if key and chain in tested:
            key = f"{key}.{tested[chain]}"
        found.append(key)
    return list(dict.fromkeys(k for k in found if k))


def member_key(text: str, values: Mapping[str, Any]) -> str | None:
    """The config key a test of one key's presence is about (``"k" in cfg``: ``cfg.k``); None
    for another expression."""
    if len(memberships(text)) != 1 or not isinstance(_parse(text), ast.Compare):
        return None
    return next(iter(keys_read(text, values)), None)


def last_conjunct(condition: str) -> str:
    """The last operand of ``condition``'s outermost ``and`` (the whole condition if it is no
    ``and``): where a guard's conditions are joined, its own failing test."""
    tree = _parse(condition)
    if isinstance(tree, ast.BoolOp) and isinstance(tree.op, ast.And):
        return ast.unparse(tree.values[-1])
    return condition


def given(condition: str, values: Mapping[str, Any]) -> str:
    """The values ``condition`` read, as a hint shows them: ``betas=(0.9, 1.0), fused=True``."""
    shown = []
    for text in read(condition):
        known, value = evaluated(text, values)
        if known and not isinstance(value, type):
            shown.append(f"{text}={value!r}")
    return ", ".join(shown)


_ORDERING = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)
# What Python orders and computes with: a None beside one of these is its TypeError.
_SCALARS = (int, float, str)


def _not_none(left_node: ast.expr, left: Any, right_node: ast.expr, right: Any) -> None:
    """Python's TypeError where None meets a number or string in an ordering or arithmetic."""
    for node, value, other in ((left_node, left, right), (right_node, right, left)):
        if value is None and (other is None or isinstance(other, _SCALARS)):
            raise NoneOperand(ast.unparse(node))


@cache
def _parse(source: str) -> ast.expr:
    return ast.parse(source, mode="eval").body


def _text_of(source: str, node: ast.expr) -> str:
    """The text of ``node``, a part of the expression ``source`` parsed (a slice of it, which
    is cheaper than writing the node out again)."""
    if node is _parse(source):
        return source
    return ast.get_source_segment(source, node) or ast.unparse(node)


class _Untold:
    """A part of a value the replay holds that it cannot tell: one item of a tuple a function
    returns (``return policy, master_config``: the policy)."""

    def __repr__(self) -> str:
        return "UNTOLD"


UNTOLD = _Untold()


def _value(node: ast.expr, values: Mapping[str, Any]) -> Any:
    found = _value_of(node, values)
    if found is UNTOLD:
        raise _Unknown(node)
    return found


def _handed_once(call: ast.Call, values: Mapping[str, Any]) -> None:
    """Python's TypeError where a call is handed a keyword twice, by name and in a mapping it
    unpacks (``**cfg``) or in two of them: raised whatever the callee, before it runs. A
    mapping the replay cannot tell (or whose keys it cannot) hands no keyword it knows of."""
    if not any(k.arg is None for k in call.keywords):
        return
    seen: set[str] = set()
    for keyword in call.keywords:
        if keyword.arg is not None:
            handed = {keyword.arg: keyword.arg}
        else:
            try:
                mapping = _value(keyword.value, values)
                keys = list(mapping.keys()) if isinstance(mapping, dict) else []
            except Absent:
                raise
            except _CANNOT_TELL:
                continue
            path = mapping.path if isinstance(mapping, Tracked) else ""
            handed = {str(k): f"{path}.{k}" if path else str(k) for k in keys}
        for name, key in handed.items():
            if name in seen:
                raise DuplicateKeyword(key)
            seen.add(name)


def _value_of(node: ast.expr, values: Mapping[str, Any]) -> Any:
    if isinstance(node, ast.Call):
        _handed_once(node, values)
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id in values:
            return values[node.id]
        if node.id in TYPES:
            return TYPES[node.id]
        raise _Unknown(node.id)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and not node.keywords:
        owner = _value(node.func.value, values)
        kind = next((t for t in METHODS if isinstance(owner, t)), None)
        if kind is None or node.func.attr not in METHODS[kind]:
            raise _Unknown(node)
        return getattr(owner, node.func.attr)(*(_value(a, values) for a in node.args))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        call = CALLS.get(node.func.id)
        if call is None or node.func.id in values or (node.keywords and call is not dict):
            raise _Unknown(node.func.id)
        # dict(a, k=v, **b): Python's own (a keyword handed twice is refused above).
        keywords: dict[str, Any] = {}
        for keyword in node.keywords:
            value = _value(keyword.value, values)
            keywords.update(value if keyword.arg is None else {keyword.arg: value})
        return call(*(_value(a, values) for a in node.args), **keywords)
    if isinstance(node, ast.Tuple | ast.List):
        return [_value(e, values) for e in node.elts]
    if isinstance(node, ast.Set):
        return {_value(e, values) for e in node.elts}
    if isinstance(node, ast.Dict):
        # {**a, "k": v}: Python's own, the later key winning.
        made: dict[Any, Any] = {}
        for key, item in zip(node.keys, node.values, strict=True):
            if key is None:
                made.update(_value(item, values))
            else:
                made[_value(key, values)] = _value(item, values)
        return made
    if isinstance(node, ast.IfExp):  # Python's own: only the branch the test takes
        return _value(node.body if _value(node.test, values) else node.orelse, values)
    if isinstance(node, ast.UnaryOp):
        operand = _value(node.operand, values)
        if isinstance(node.op, ast.Not):
            return not operand
        if isinstance(node.op, ast.USub):
            return -operand
        if isinstance(node.op, ast.UAdd):
            return +operand
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _value(node.left, values), _value(node.right, values)
        _not_none(node.left, left, node.right, right)
        return _BINARY[type(node.op)](left, right)
    if isinstance(node, ast.BoolOp):
        # Python's own: the first operand that decides, evaluated no further.
        result: Any = None
        for each in node.values:
            result = _value(each, values)
            if isinstance(node.op, ast.And) != bool(result):
                return result
        return result
    if isinstance(node, ast.Compare):
        left = _value(node.left, values)
        left_node = node.left
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            right = _value(right_node, values)
            if isinstance(op, _ORDERING):
                _not_none(left_node, left, right_node, right)
            left_node = right_node
            if not _COMPARE[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        return _value(node.value, values)[node.slice.value]
    if isinstance(node, ast.Attribute):
        owner = _value(node.value, values)
        if isinstance(owner, Model):
            return owner[node.attr]
    raise _Unknown(node)
