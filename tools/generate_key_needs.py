"""Write src/python/recipekit/nemo_rl/generated/key_needs.json: the config keys the pinned NeMo-RL
reads without a default once another key turns a feature on, found with ``ast`` in every module
the stages' entry points reach (issue 40: a KeyError is a failure a config value causes, as an
``assert`` is).

The shape is a companion pair. ``if cfg["swanlab_enabled"]: ... cfg["swanlab"]`` in
``Logger.__init__`` means that a config with ``logger.swanlab_enabled: true`` and no
``logger.swanlab`` section fails with a KeyError. The schema marks ``swanlab`` NotRequired, so
nothing else says so. A pair is kept only where it can be read exactly:

- the read is a chain of constant subscripts (``cfg["a"]["b"]``) on a plain name or attribute;
- every condition it stands under, up to its function (each enclosing ``if``/``else``, the
  operands before it in an ``and``/``or``, an ``x if c else y``), reads the same object with
  constant subscripts, ``.get`` or ``"k" in``, compared with constants; any other condition
  (another object, a call, a loop, a ``try``) drops the read, because its truth cannot be
  known from the config;
- at least one condition reads the config (an unconditional read is the stage's own
  business: the typed schema's required keys);
- no step of the read is assigned in the same function (NeMo-RL fills some keys itself);
- the object resolves to config sections of the entry point's master config in which every
  key the pair names is declared, and some step of the read is NotRequired.

recipekit reads the JSON, never ``.reference/``. ``nemo_rl/checks/key_needs_test.py``
regenerates it and compares.
"""

from __future__ import annotations

import ast
import copy
import functools
from collections.abc import Iterator
from typing import Any

from recipekit.upstream.classes import UpstreamSource, tree_files
from recipekit.upstream.declared import DeclaredTable, table
from tools import every_run, sweep_reach
from tools.every_run import assignment_targets, key_chain, self_attribute
from tools.generated_modules import json_table, pins, reference_dir, write_or_check

TOOL = "tools/generate_key_needs.py"
OUTPUT = "src/python/recipekit/nemo_rl/generated/key_needs.json"
# The master config each label's swept entry points (tools/sweep_reach.ENTRY_POINTS) read.
ROOT = "nemo_rl.algorithms.grpo:MasterConfig"
# The comparisons a condition may make (with constants).
_COMPARE = (
    ast.Eq,
    ast.NotEq,
    ast.Is,
    ast.IsNot,
    ast.Gt,
    ast.GtE,
    ast.Lt,
    ast.LtE,
    ast.In,
    ast.NotIn,
)
Path_ = tuple[str, ...]


class Unreadable(Exception):
    """A condition whose truth the config alone does not give."""


def _base(node: ast.expr) -> str | None:
    """The text of a plain name or attribute chain (``cfg``, ``self.cfg``), else None."""
    probe = node
    while isinstance(probe, ast.Attribute):
        probe = probe.value
    return ast.unparse(node) if isinstance(probe, ast.Name) else None


def _constant(node: ast.expr) -> Any:
    if isinstance(node, ast.Constant) and (
        node.value is None or isinstance(node.value, bool | int | float | str)
    ):
        return node.value
    if isinstance(node, ast.Tuple | ast.List) and all(
        isinstance(e, ast.Constant) for e in node.elts
    ):
        return [_constant(e) for e in node.elts]
    raise Unreadable


# The name a pair's condition calls the section it reads (``at``).
SECTION = "section"


class _Condition:
    """Reads a test of the object ``base`` into an expression over ``section``, the config
    section the object is (``section['a']['b']``, ``section.get('k', d)``, ``'k' in section``,
    compared with constants), which ``recipekit.upstream.conditions`` evaluates; Unreadable
    where the test reads anything else."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.paths: list[Path_] = []

    def _chain(self, keys: Path_) -> ast.expr:
        node: ast.expr = ast.Name(SECTION, ast.Load())
        for key in keys:
            node = ast.Subscript(node, ast.Constant(key), ast.Load())
        return node

    def value(self, node: ast.expr) -> ast.expr:
        root, keys = key_chain(node)
        if keys and _base(root) == self.base:
            self.paths.append(keys)
            return self._chain(keys)
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and 1 <= len(node.args) <= 2
            and not node.keywords
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            root, keys = key_chain(node.func.value)
            if _base(root) == self.base:
                self.paths.append((*keys, node.args[0].value))
                default = _constant(node.args[1]) if len(node.args) == 2 else None
                get = ast.Attribute(self._chain(keys), "get", ast.Load())
                return ast.Call(get, [node.args[0], ast.Constant(default)], [])
        return ast.Constant(_constant(node))

    def test(self, node: ast.expr) -> ast.expr:
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return ast.UnaryOp(ast.Not(), self.test(node.operand))
        if isinstance(node, ast.BoolOp):
            return ast.BoolOp(node.op, [self.test(v) for v in node.values])
        if isinstance(node, ast.Compare):
            if len(node.ops) != 1 or type(node.ops[0]) not in _COMPARE:
                raise Unreadable
            op, left, right = node.ops[0], node.left, node.comparators[0]
            if isinstance(op, ast.In | ast.NotIn) and isinstance(left, ast.Constant):
                root, keys = key_chain(right)
                if not isinstance(left.value, str) or _base(root) != self.base:
                    raise Unreadable
                self.paths.append((*keys, left.value))
                return ast.Compare(ast.Constant(left.value), [op], [self._chain(keys)])
            return ast.Compare(self.value(left), [op], [self.value(right)])
        found = self.value(node)
        if isinstance(found, ast.Constant):
            raise Unreadable
        return found


def _conditions(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> Iterator[ast.expr]:
    """Each test the read stands under up to its function, negated (``ast.UnaryOp(Not)``)
    where it stands in the other branch; Unreadable under a loop, ``try`` or comprehension."""
    child = node
    while child in parents:
        parent = parents[child]
        if isinstance(parent, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            return
        if isinstance(parent, ast.For | ast.AsyncFor | ast.While | ast.Try | ast.comprehension):
            if isinstance(parent, ast.For | ast.AsyncFor) and child is parent.iter:
                pass  # the loop's iterable is read before the loop runs
            else:
                raise Unreadable
        if isinstance(parent, ast.If | ast.IfExp) and child is not parent.test:
            in_body = child in parent.body if isinstance(parent, ast.If) else child is parent.body
            yield parent.test if in_body else ast.UnaryOp(op=ast.Not(), operand=parent.test)
        if isinstance(parent, ast.BoolOp):
            before = parent.values[: parent.values.index(child)]  # type: ignore[arg-type]
            for earlier in before:
                yield (
                    earlier
                    if isinstance(parent.op, ast.And)
                    else ast.UnaryOp(op=ast.Not(), operand=earlier)
                )
        child = parent


def _assigned(function: ast.AST) -> set[tuple[str, Path_]]:
    """(object, keys) that the function assigns (``cfg["a"]["b"] = ...``, ``setdefault``)."""
    out: set[tuple[str, Path_]] = set()
    for node in ast.walk(function):
        for target in assignment_targets(node):
            root, keys = key_chain(target)
            base = _base(root)
            if keys and base is not None:
                out |= {(base, keys[: i + 1]) for i in range(len(keys))}
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("setdefault", "update", "pop")
        ):
            root, keys = key_chain(node.func.value)
            base = _base(root)
            if base is not None and node.args and isinstance(node.args[0], ast.Constant):
                key = node.args[0].value
                if isinstance(key, str):
                    out.add((base, (*keys, key)))
    return out


def _sections(declared: DeclaredTable) -> dict[Path_, bool]:
    """Every key path of the master config (through the config classes a mapping is checked
    against), with whether upstream requires the key."""
    out: dict[Path_, bool] = {}

    def walk(qualified: str, prefix: Path_, seen: frozenset[str]) -> None:
        for key, spec in declared[qualified].keys.items():
            path = (*prefix, key)
            out[path] = out.get(path, False) or spec.required
            for nested in spec.nested:
                if nested in declared.classes and nested not in seen:
                    walk(nested, path, seen | {nested})

    walk(ROOT, (), frozenset({ROOT}))
    return out


def _ending(keys: dict[Path_, bool]) -> dict[str, list[Path_]]:
    """The key paths by their last key."""
    out: dict[str, list[Path_]] = {}
    for path in keys:
        out.setdefault(path[-1], []).append(path)
    return out


def _reached(label: str) -> list[str]:
    """The pinned modules the label's entry points reach, as rule_catalogue/reach_test.py
    sweeps them."""
    found = sweep_reach.reach_pinned(label, reference_dir(), sweep_reach.pinned(label))
    return [path for path in found.modules if path not in found.unread]


def pairs(label: str) -> list[dict[str, Any]]:
    keys = _sections(table(label))
    root = reference_dir() / label
    found = [
        pair
        for path in _reached(label)
        for pair in module_pairs(path, (root / path).read_text(encoding="utf-8"), keys)
    ]
    found.sort(key=lambda p: (p["file"], p["line"], p["needs"]))
    return found


def module_pairs(path: str, text: str, keys: dict[Path_, bool]) -> list[dict[str, Any]]:
    """The pairs of one module's text, for the config whose key paths (and whether each is
    required) are ``keys``."""
    ending = _ending(keys)
    tree = ast.parse(text)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    assigned: dict[ast.AST, set[tuple[str, Path_]]] = {}
    found: list[dict[str, Any]] = []
    for node in parents:
        if not isinstance(node, ast.Subscript):
            continue
        function = _function_of(node, parents)
        if function is None:
            continue
        if function not in assigned:
            assigned[function] = _assigned(function)
        pair = _pair(node, parents, assigned[function], keys, ending)
        if pair is None:
            continue
        owner = parents.get(function)
        scope = (
            f"{owner.name}.{function.name}" if isinstance(owner, ast.ClassDef) else function.name
        )
        found.append({**pair, "file": path, "line": node.lineno, "scope": scope})
    return found


@functools.cache
def _flags(cls: ast.ClassDef) -> dict[str, ast.expr]:
    """The flags a class's ``__init__`` sets from its config: ``self.F`` -> the test it stands
    for, where ``__init__`` runs ``if C: self.F = True`` with ``else: self.F = False`` (either
    way round) and nothing else in the class assigns ``self.F``. C is written on the attribute
    the class keeps the config it read as (``self.cfg = config``, assigned once), so a read
    through ``self.cfg`` in another method is known to stand under ``self.F``
    (``Policy.__init__``'s ``use_dynamic_batches``)."""
    init = next(
        (m for m in cls.body if isinstance(m, ast.FunctionDef) and m.name == "__init__"), None
    )
    if init is None:
        return {}
    counts: dict[str, int] = {}
    for node in ast.walk(cls):
        for target in assignment_targets(node):
            if (attribute := self_attribute(target)) is not None:
                counts[attribute] = counts.get(attribute, 0) + 1
    params = {a.arg for a in (*init.args.posonlyargs, *init.args.args, *init.args.kwonlyargs)}
    kept: dict[str, str] = {}  # a parameter -> the attribute that keeps it
    for node in ast.walk(init):
        found = _self_assignment(node)
        if found is None:
            continue
        attribute, value = found
        if isinstance(value, ast.Name) and value.id in params and counts.get(attribute) == 1:
            kept[value.id] = attribute
    flags: dict[str, ast.expr] = {}
    for node in ast.walk(init):
        if not isinstance(node, ast.If):
            continue
        for when in (True, False):  # set to True where the test holds, or where it does not
            for name in _set_to(node.body, when) & _set_to(node.orelse, not when):
                if counts.get(name) == 2:
                    test = _Kept(kept).visit(copy.deepcopy(node.test))
                    flags[f"self.{name}"] = test if when else ast.UnaryOp(ast.Not(), test)
    return flags


def _self_assignment(node: ast.AST) -> tuple[str, ast.expr] | None:
    """(F, value) where ``node`` is ``self.F = value``, else None."""
    if not isinstance(node, ast.Assign) or len(node.targets) != 1:
        return None
    attribute = self_attribute(node.targets[0])
    return None if attribute is None else (attribute, node.value)


def _set_to(body: list[ast.stmt], value: bool) -> set[str]:
    """The attributes a block's own statements set to ``value`` (``self.F = True``)."""
    return {
        found[0]
        for statement in body
        if (found := _self_assignment(statement)) is not None
        and isinstance(found[1], ast.Constant)
        and found[1].value is value
    }


class _Kept(ast.NodeTransformer):
    """A test on ``__init__``'s parameters, written on the attributes that keep them (a name
    kept nowhere stays, and the condition reader then finds another object)."""

    def __init__(self, kept: dict[str, str]) -> None:
        self.kept = kept

    def visit_Name(self, node: ast.Name) -> ast.expr:
        if node.id in self.kept:
            return ast.Attribute(value=ast.Name(id="self", ctx=ast.Load()), attr=self.kept[node.id])
        return node


class _Flagged(ast.NodeTransformer):
    """A test with each of its class's flags (``self.F``) written as the test it stands for."""

    def __init__(self, flags: dict[str, ast.expr]) -> None:
        self.flags = flags

    def visit_Attribute(self, node: ast.Attribute) -> ast.expr:
        found = self.flags.get(ast.unparse(node))
        if found is not None:
            return copy.deepcopy(found)
        self.generic_visit(node)
        return node


def _function_of(
    node: ast.AST, parents: dict[ast.AST, ast.AST]
) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            return node
    return None


def _pair(
    node: ast.AST,
    parents: dict[ast.AST, ast.AST],
    assigned: set[tuple[str, Path_]],
    keys: dict[Path_, bool],
    ending: dict[str, list[Path_]],
) -> dict[str, Any] | None:
    """The pair a read is (where it needs, what, when), or None where it is none."""
    if not isinstance(node, ast.Subscript) or not isinstance(node.ctx, ast.Load):
        return None
    parent = parents.get(node)
    if isinstance(parent, ast.Subscript) and parent.value is node:
        return None  # the longer chain is the read
    root, read = key_chain(node)
    base = _base(root)
    if not read or base is None:
        return None
    if any((base, read[: i + 1]) in assigned for i in range(len(read))):
        return None
    condition = _Condition(base)
    function = _function_of(node, parents)
    owner = parents.get(function) if function is not None else None
    flags = _flags(owner) if isinstance(owner, ast.ClassDef) else {}
    try:
        tests = [
            condition.test(_Flagged(flags).visit(copy.deepcopy(test)) if flags else test)
            for test in _conditions(node, parents)
        ]
    except Unreadable:
        return None
    if not condition.paths:
        return None
    # The sections the object may be: those where the read's whole chain is a key path.
    candidates = sorted(
        path[: len(path) - len(read)]
        for path in ending.get(read[-1], [])
        if path[len(path) - len(read) :] == read
    )
    at = [
        list(prefix)
        for prefix in candidates
        if all((*prefix, *path) in keys for path in condition.paths)
        and not all(keys[(*prefix, *read[: i + 1])] for i in range(len(read)))
    ]
    if not at:
        return None
    when = tests[0] if len(tests) == 1 else ast.BoolOp(ast.And(), tests)
    return {"at": at, "needs": list(read), "when": ast.unparse(when)}


# Each pinned runner whose every run is read (tools/every_run.py), with the master config it
# reads: the stages' GRPO runners (sweep_reach.ENTRY_POINTS) and, at super-v3.5-posttraining,
# the other runners the manifest pins.
EVERY_RUN: dict[str, dict[str, str]] = {
    "nemo-rl/super-v3": {"examples/run_grpo.py": ROOT},
    "nemo-rl/super-v3.5-posttraining": {
        "examples/nemo_gym/run_grpo_nemo_gym.py": ROOT,
        "examples/run_sft.py": "nemo_rl.algorithms.sft:MasterConfig",
        "examples/run_dpo.py": "nemo_rl.algorithms.dpo:MasterConfig",
        "examples/run_ppo.py": "nemo_rl.algorithms.ppo:MasterConfig",
    },
}


def every_run_reads(label: str) -> dict[str, list[dict[str, Any]]]:
    """What every run of each of the label's runners reads without a default, by runner."""
    root = reference_dir() / label
    runners = EVERY_RUN[label]
    reached = sweep_reach.reach_from(label, reference_dir(), sweep_reach.pinned(label), runners)
    paths = [p for p in reached.modules if p not in reached.unread]
    texts = {path: (root / path).read_text(encoding="utf-8") for path in paths}
    # The runners' own names resolve too (their MasterConfig(**config)).
    files = {
        **tree_files(root / "nemo_rl", "nemo_rl"),
        **{every_run.module_name(entry): texts[entry] for entry in runners},
    }
    package = every_run.Package.read(texts, UpstreamSource(files), table(label))
    return {
        entry: sorted(
            every_run.reads(package, entry, master),
            key=lambda r: (r["file"], r["line"], r["needs"]),
        )
        for entry, master in runners.items()
    }


def generate() -> dict[str, str]:
    commits = pins()
    data = {
        label: {
            "commit": commits[label],
            "root": ROOT,
            "pairs": pairs(label),
            "every_run": every_run_reads(label),
        }
        for label in sorted(sweep_reach.ENTRY_POINTS)
    }
    return json_table(OUTPUT, TOOL, data)


def main() -> int:
    return write_or_check(generate(), TOOL, __doc__)


if __name__ == "__main__":
    raise SystemExit(main())
