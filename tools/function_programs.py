"""A pinned runner's ``main`` and the functions it calls, as programs
``recipekit.upstream.replay`` runs on a config's values (issue 40: the checks NeMo-RL makes in
its runners and ``setup`` functions, read from the pinned source, not mirrored by hand).

A runner loads its YAML, builds its master config (``config = MasterConfig(**config)``), then
runs its own checks and the algorithm's ``setup(config, ...)``, which reads the config's
sections through names of its own (``grpo_config = master_config.grpo``), writes keys into them
(``policy_config["generation"] = ...``) and calls helpers that assert on them. The program of
the script (its ``if __name__ == "__main__":`` block, which calls ``main``) holds the master
config's values from where ``main`` builds them (the name ``MASTER``); a call to a function the
pinned files define at module level, or to a pinned class (its ``__init__``), is an ``invoke``
step that binds its parameters to the arguments' values and runs that function's own program
(a call in a condition runs before it, its result in a name of its own; one that may not run,
in the second operand of an ``and``, is quiet: its guards say nothing); ``d.setdefault("k",
v)`` is a store where ``d`` lacks ``k``. Each step that evaluates something ends with where it
is (``file:line``), where a key it reads may be missing. Beside the steps of
``tools/guard_reader.program``:

  ["invoke", function, [[parameter, argument | None], ...], target | None, quiet]
  ["store", container | None, key, value | None, roots]   container[key] = value (or .key);
                                                           container None: roots are changed
  ["mutate", [expression, ...]]    what code the replay does not follow may change (a call
                                   handed it, a method of it that may change it);
                                   ``x[...]``: one of the values ``x`` holds, which one
                                   unknown (``configs[name]`` handed on)
  ["return", value | None]

A worker builder's call (``WORKER_BUILDERS``: ``RayWorkerBuilder("pkg.module.Worker", config)``)
builds the worker its dotted path names, on a copy of what it was handed: an ``if`` step on the
path for each pinned class the function names by dotted path invokes that class's ``__init__``
(its own, else its bases'), as Ray would on the worker. A method called on ``self`` (or on
``super()``) is handed the same object (``["self", "self"]``), which the replay holds while its
``__init__`` runs and which knows the class it was built as (``conditions.CLASS``): where the
object's pinned classes define the method differently, an ``if`` step on its class
(``conditions.CLASS_OF``) runs the one Python's method resolution order picks. A pinned
function changes no argument its source only reads from (``_unchanged``). A loop or ``try``
that may return leaves the rest of the function undecided. ``copy.deepcopy`` after ``import
copy`` is evaluated (``EVALUATED_IMPORTS``), and a call handed one keyword twice fails as
Python's does (``conditions.DuplicateKeyword``).

A mapping's changes are the mapping's wherever the function holds it
(``recipekit.upstream.conditions.Tracked``). What a statement the walk does not follow (a loop,
a ``try``, a nested function) may change is forgotten or changed.
"""

from __future__ import annotations

import ast
import copy
import functools
from collections.abc import Iterable
from typing import Any

from recipekit.upstream import conditions
from recipekit.upstream.conditions import keyed_call
from tools.config_programs import Pinned, _Known, _located, _rule_sites
from tools.every_run import Modules, module_name
from tools.guard_reader import (
    PURE_BUILTINS,
    WARNINGS,
    Step,
    _exits,
    _on_the_way,
    evaluable,
    stored,
)

# What the program of main calls the master config's values (the replay's one given name).
MASTER = "__master__"
# The class a runner builds its master config with.
MASTER_CLASS = "MasterConfig"
# The classes NeMo-RL builds its Ray workers with: ``Builder(dotted_path, *args, **kwargs)``
# names the worker's class by its dotted path, and Ray builds each worker as
# ``cls(*args, **kwargs)`` on a copy of what it was handed
# (nemo_rl/distributed/worker_groups.py, RayWorkerBuilder).
WORKER_BUILDERS = ("nemo_rl.distributed.worker_groups:RayWorkerBuilder",)
# Calls that change none of their arguments, by the name they are called with: the builtins
# the guard reader knows, and what a runner calls to print, join paths or time itself.
PURE_CALLS = PURE_BUILTINS | {
    "print",
    "range",
    "enumerate",
    "zip",
    "pprint.pprint",
    "json.dumps",
    "os.path.join",
    "os.path.exists",
    "os.path.dirname",
    "time.perf_counter",
    "time.time",
}
# Library functions the replay evaluates (``conditions.CALLS``), by what the module imports
# (``import copy; copy.deepcopy(x)``): the name it evaluates them by.
EVALUATED_IMPORTS = {"copy:deepcopy": "deepcopy"}
# The steps that evaluate what a statement reads, which end with where it is.
_EVALUATING = ("set", "if", "store", "invoke", "return")
# Methods that change nothing of the value they are called on, nor their arguments.
PURE_METHODS = conditions.METHOD_NAMES | {
    # pydantic builds a new model from what it validates
    "model_validate",
    "model_dump",
    "copy",
    "format",
    "join",
    "split",
    "replace",
    "count",
    "index",
}


def _chain(node: ast.expr) -> bool:
    """Whether ``node`` is a name, or a chain of attributes and constant subscripts on one."""
    while isinstance(node, ast.Attribute | ast.Subscript):
        if isinstance(node, ast.Subscript) and not isinstance(node.slice, ast.Constant):
            return False
        node = node.value
    return isinstance(node, ast.Name)


def _root(node: ast.expr) -> ast.expr:
    """The receiver a chain of attributes, subscripts and method calls starts from."""
    while True:
        if isinstance(node, ast.Attribute | ast.Subscript):
            node = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            node = node.func.value
        else:
            return node


def _defined(body: list[ast.stmt]) -> Iterable[ast.FunctionDef]:
    """The functions ``body`` defines itself (in its branches too, not inside another
    function or class)."""
    for statement in body:
        if isinstance(statement, ast.FunctionDef):
            yield statement
        elif not isinstance(statement, ast.AsyncFunctionDef | ast.ClassDef):
            for field in ("body", "orelse", "finalbody"):
                yield from _defined(getattr(statement, field, None) or [])
            for handler in getattr(statement, "handlers", None) or []:
                yield from _defined(handler.body)


def _takes_receiver(qualified: str, fn: ast.FunctionDef) -> bool:
    """Whether a function takes its object or class first: a method, not a static one."""
    scope = qualified.partition(":")[2]
    method = "." in scope and "<locals>" not in scope
    return method and _bound_to_class(fn) is not False


def _on_self(node: ast.expr) -> bool:
    """Whether a method is called on the object the caller's method has: ``self.m()`` or
    ``super().m()``."""
    if isinstance(node, ast.Name):
        return node.id == "self"
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "super"
        and not node.args
    )


def _bound_to_class(fn: ast.FunctionDef) -> bool | None:
    """Whether a method takes its class first (``@classmethod``: True), takes neither class
    nor object (``@staticmethod``: False), or is an object's own (None)."""
    names = {ast.unparse(d) for d in fn.decorator_list}
    if "classmethod" in names:
        return True
    return False if "staticmethod" in names else None


def _own_names(fn: ast.FunctionDef) -> set[str]:
    """A function's own names: its parameters and the names it assigns."""
    arguments = fn.args
    own = {a.arg for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)}
    return own | stored(ast.Module(body=fn.body, type_ignores=[]))


def _free(fn: ast.FunctionDef, outer: frozenset[str]) -> list[str]:
    """The names a nested function reads from the one that defines it: those of ``outer``
    it loads, but its own."""
    loaded = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return sorted((loaded & outer) - _own_names(fn))


# Annotations that promise a value is only read: no code changes it through them.
_READ_ONLY = {
    "Mapping",
    "Sequence",
    "Iterable",
    "Collection",
    "Container",
    "AbstractSet",
    "tuple",
    "Tuple",
    "frozenset",
    "FrozenSet",
    "str",
    "bytes",
    "int",
    "float",
    "bool",
    "None",
}


def _read_only(annotation: ast.expr) -> bool:
    """Whether a parameter's annotation takes only values its function does not change:
    each member of a union is a read-only type (``Mapping[str, Any] | None``)."""
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        return _read_only(annotation.left) and _read_only(annotation.right)
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            return _read_only(ast.parse(annotation.value, mode="eval").body)
        except SyntaxError:
            return False
    if isinstance(annotation, ast.Constant) and annotation.value is None:
        return True
    base = annotation.value if isinstance(annotation, ast.Subscript) else annotation
    name = base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", "")
    if name == "Optional" and isinstance(annotation, ast.Subscript):
        return _read_only(annotation.slice)
    return name in _READ_ONLY


# Where a value read out of a parameter ends without the function changing the parameter: a
# test, a comparison, a negation, text; or yielded or returned (a caller that changes a value
# it is handed back changes it through a name of its own).
_READING = (
    ast.Compare,
    ast.If,
    ast.While,
    ast.IfExp,
    ast.Assert,
    ast.FormattedValue,
    ast.Yield,
    ast.Return,
)


def _unchanged(fn: ast.FunctionDef) -> frozenset[str]:
    """The parameters ``fn`` leaves as they are, read from its source: every use of the name
    reads a value out of it (a key, an attribute, a ``.get``, a pure method) that ends in a
    test, a comparison, a pure builtin's argument or text, or is yielded or returned (an item
    of a tuple too; never the parameter itself); and no other name is set to it."""
    parents = {c: n for n in ast.walk(fn) for c in ast.iter_child_nodes(n)}
    arguments = fn.args
    parameters = (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)
    return frozenset(a.arg for a in parameters if _only_read(fn, parents, a.arg))


def _only_read(fn: ast.FunctionDef, parents: dict[ast.AST, ast.AST], parameter: str) -> bool:
    for node in ast.walk(fn):
        if not (isinstance(node, ast.Name) and node.id == parameter):
            continue
        if not isinstance(node.ctx, ast.Load):
            return False
        top: ast.AST = node
        while True:
            parent = parents.get(top)
            if isinstance(parent, ast.Subscript | ast.Attribute) and parent.value is top:
                if not isinstance(parent.ctx, ast.Load):
                    return False
                top = parent
            elif isinstance(parent, ast.Call) and top is parent.func:
                method = isinstance(top, ast.Attribute) and top.attr in PURE_METHODS
                if not method:
                    return False
                top = parent
            else:
                break
        # An operand of ``and``/``or``, a branch of ``a if t else b``, an item of what is
        # yielded: its value goes on to where that ends.
        read = top
        parent = parents.get(top)
        while (
            isinstance(parent, ast.BoolOp)
            or (isinstance(parent, ast.IfExp) and top is not parent.test)
            or (isinstance(parent, ast.Tuple) and isinstance(parents.get(parent), ast.Yield))
        ):
            top, parent = parent, parents.get(parent)
        negated = isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.Not)
        pure = (
            isinstance(parent, ast.Call)
            and top in parent.args
            and ast.unparse(parent.func) in PURE_BUILTINS
        )
        if not (pure or negated or isinstance(parent, _READING)):
            return False
        if read is node and isinstance(parent, ast.Yield | ast.Return):
            return False  # handed back whole: its caller may change it through a new name
    return True


def _keyed_on_chain(call: ast.Call, method: str) -> tuple[ast.expr, str] | None:
    """(the chain, the key) of ``chain.method("key"[, default])``; None for another call."""
    made = keyed_call(call, method)
    if made is None or not _chain(made[0]) or not isinstance(made[1], str):
        return None
    return (made[0], made[1]) if len(call.args) <= 2 and not call.keywords else None


def _literal(node: ast.expr) -> bool:
    """Whether ``node`` is a literal no code can change: a constant, a negated one, a tuple of
    them."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    if isinstance(node, ast.Tuple):
        return all(_literal(e) for e in node.elts)
    return isinstance(node, ast.Constant)


def _held(node: ast.expr) -> list[ast.expr]:
    """The values code handed ``node`` may change: ``node`` itself where it is a name or a
    chain; the one a method chain starts from (``x.setdefault("k", {})``: ``x``); none of a
    call's result (a value of its own; the call's own effects are its own); else each one it
    holds (``[a, b.c]``: ``a``, ``b.c``)."""
    if isinstance(node, ast.Starred):
        node = node.value
    if _chain(node):
        return [node]
    if isinstance(node, ast.Subscript) and _chain(node.value):
        # ``configs[name]``, its key unknown: one of the values it holds (``configs[...]``),
        # not the mapping's keys.
        return [ast.Subscript(value=node.value, slice=ast.Constant(value=...), ctx=ast.Load())]
    if isinstance(node, ast.Call | ast.Compare | ast.BinOp | ast.JoinedStr | ast.Constant):
        return []  # a value of its own (a call's own effects are its own)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return []
    if isinstance(node, ast.IfExp):
        return [*_held(node.body), *_held(node.orelse)]  # the test only decides
    if isinstance(node, ast.Subscript | ast.Attribute) and not _chain(node.value):
        return _held(node.value)  # an item of what it reads; the index only picks it
    root = _root(node)
    if root is not node and _chain(root):
        return [root]
    return [
        h
        for child in ast.iter_child_nodes(node)
        if isinstance(child, ast.expr)
        for h in _held(child)
    ]


class Functions:
    """The programs of a pinned tree's functions, each written once (``programs``), and each
    function a program invokes among them."""

    def __init__(
        self, modules: Modules, pinned: Pinned, builders: tuple[str, ...] = WORKER_BUILDERS
    ) -> None:
        self.modules = modules
        self.pinned = pinned
        self.mirrored = pinned.mirrored()
        self.programs: dict[str, dict[str, Any]] = {}
        # Nested functions (``f.<locals>.g``): as written; the names of the function that
        # defines each; what each may call by name (``_Reader.defined``); what each reads from
        # the function that defines it, once worked out (``closure``).
        self.written: dict[str, ast.FunctionDef] = {}
        self.outer: dict[str, frozenset[str]] = {}
        self.scopes: dict[str, dict[str, str]] = {}
        self.alternatives: dict[str, dict[str, ast.IfExp]] = {}
        self.free: dict[str, list[str]] = {}
        self.constants: dict[str, dict[str, ast.expr]] = {}
        self.subclasses: dict[str, list[str]] | None = None
        self.unchanged: dict[str, frozenset[str]] = {}
        self.builders = {self._builder(cls) for cls in builders if cls in modules.defs}
        # A script imports its neighbour by its bare name (run_vlm_sft.py: from run_sft import
        # main), as Python finds it on the script's own folder.
        for module, names in modules.imports.items():
            package = module.rpartition(".")[0]
            for name, target in names.items():
                head, _, rest = target.partition(":")
                if package and head not in modules.trees and f"{package}.{head}" in modules.trees:
                    names[name] = f"{package}.{head}:{rest}" if rest else f"{package}.{head}"

    def _builder(self, cls: str) -> str:
        """The ``__init__`` of the worker builder ``cls``, which must still take the worker's
        dotted path and then what it hands the worker."""
        init = self.modules.defs.get(f"{cls}.__init__")
        arguments = init.args if isinstance(init, ast.FunctionDef) else None
        if arguments is None or not (
            len(arguments.args) == 2 and arguments.vararg and arguments.kwarg
        ):
            raise SystemExit(f"{cls} no longer builds workers as read: read WORKER_BUILDERS again")
        return f"{cls}.__init__"

    def define(self, qualified: str, fn: ast.FunctionDef) -> str:
        """Note the nested function ``qualified``, as written."""
        self.written.setdefault(qualified, fn)
        return qualified

    def closure(self, qualified: str, seen: frozenset[str] = frozenset()) -> list[str]:
        """The names the nested function ``qualified`` reads from the function that defines
        it, and those the nested functions it calls by name read (they read them when it runs):
        its program takes them as keyword-only parameters."""
        if qualified in self.free:
            return self.free[qualified]
        fn, outer, scope = self.written[qualified], self.outer[qualified], self.scopes[qualified]
        found = set(_free(fn, outer))
        own = _own_names(fn)
        picks = self.alternatives.get(qualified, {})
        for call in ast.walk(fn):
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Name):
                callee = scope.get(call.func.id)
                if callee is not None and call.func.id not in own and callee not in seen:
                    found |= set(self.closure(callee, seen | {qualified})) & outer
                pick = picks.get(call.func.id)
                if pick is not None and call.func.id not in own:
                    found |= set(conditions.names(ast.unparse(pick))) & outer
        free = sorted(found)
        if not seen:
            self.free[qualified] = free
        made = copy.deepcopy(fn)
        made.args.kwonlyargs += [ast.arg(arg=n) for n in free]
        made.args.kw_defaults += [None] * len(free)
        self.modules.defs[qualified] = made
        return free

    def runner(self, path: str) -> str | None:
        """The program of what a runner (``examples/run_ppo.py``) runs as a script (its
        ``if __name__ == "__main__":`` block, which calls its ``main``), and of every function
        it reaches; its qualified name (None: the file is no script)."""
        module = module_name(path)
        block = next(
            (
                node
                for node in self.modules.trees[module].body
                if isinstance(node, ast.If)
                and ast.unparse(node.test) in ("__name__ == '__main__'", '__name__ == "__main__"')
            ),
            None,
        )
        if block is None:
            return None
        qualified = f"{module}:__main__"
        script = ast.FunctionDef(
            name="__main__",
            args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[]),
            body=block.body,
            decorator_list=[],
            lineno=block.lineno,
        )
        self.modules.defs[qualified] = script
        self._describe(qualified)
        return qualified

    def _describe(self, qualified: str) -> None:
        todo = [qualified]
        while todo:
            name = todo.pop()
            if name in self.programs:
                continue
            fn = self.modules.defs[name]
            assert isinstance(fn, ast.FunctionDef), name
            reader = _Reader(self, name.partition(":")[0], fn, name)
            steps = reader.steps(copy.deepcopy(fn.body), [])
            path = self.modules.paths[name.partition(":")[0]]
            located = _located(steps, path, _rule_sites(self.pinned.root / path), self.mirrored)
            self.programs[name] = {
                "file": path,
                "parameters": reader.parameters,
                "program": located,
            }
            todo += sorted(reader.invoked)

    def kept(self) -> dict[str, dict[str, Any]]:
        """The programs, without the functions whose run changes nothing the replay can tell
        (no guard, warning, store or change, no return value it can evaluate, and no function
        invoked that has one): an invoke of one only leaves its target unknown."""
        inert: set[str] = set()
        while True:
            found = {
                name
                for name, entry in self.programs.items()
                if name not in inert and _inert(entry["program"], inert)
            }
            if not found:
                break
            inert |= found
        kept = {
            name: entry | {"program": _without(entry["program"], inert)}
            for name, entry in sorted(self.programs.items())
            if name not in inert
        }
        _mark_live(kept)
        return kept

    def callee(self, call: ast.Call, module: str, owner: str = "") -> str | None:
        """The pinned function a call runs, where its name alone says: a module-level function,
        the ``__init__`` of a class it builds (``Class.__init__``), a static or class method
        called on its class (``MegatronGeneration.nvlink_domain_span(...)``), or, in a method
        of the class ``owner``, one of its static or class methods called on ``cls``. (A method
        called on ``self`` runs by the object's class: ``_Reader.on_self``.)"""
        func = call.func
        if owner and isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            if func.value.id == "cls":
                method = self.modules.defs.get(f"{module}:{owner}.{func.attr}")
                if (
                    isinstance(method, ast.FunctionDef)
                    and _bound_to_class(method) is not None
                    and not self.overridden(f"{module}:{owner}", func.attr)
                ):
                    return f"{module}:{owner}.{func.attr}"
        if isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name):
            cls = self.modules.class_named(call.func.value, module)
            if cls is not None:
                method = self.modules.defs.get(f"{cls}.{call.func.attr}")
                if isinstance(method, ast.FunctionDef) and _bound_to_class(method) is not None:
                    return f"{cls}.{call.func.attr}"
        found = self.modules.target(call, module, None, {})
        if found is None or "." in found.partition(":")[2]:
            return None
        if isinstance(self.modules.defs[found], ast.ClassDef):
            found = self.modules.init_of(found) or ""
        return found if isinstance(self.modules.defs.get(found), ast.FunctionDef) else None

    def imported(self, func: ast.expr, module: str) -> str:
        """What a called name or attribute chain is by the module's imports, as
        ``module:name`` (``copy.deepcopy`` after ``import copy``: ``copy:deepcopy``); "" where
        its root is no imported name."""
        parts = []
        while isinstance(func, ast.Attribute):
            parts.append(func.attr)
            func = func.value
        if not isinstance(func, ast.Name):
            return ""
        target = self.modules.imports.get(module, {}).get(func.id, "")
        if not parts:
            return target
        if not target or ":" in target:  # no import, or an attribute of a name imported
            return ""
        return f"{target}:{'.'.join(reversed(parts))}"

    def overridden(self, cls: str, method: str) -> bool:
        """Whether a pinned subclass of ``cls`` defines ``method`` again: a call of it on
        ``self`` may then run that one, which the class alone does not tell."""
        return any(f"{sub}.{method}" in self.modules.defs for sub in self.subclasses_of(cls))

    def subclasses_of(self, cls: str) -> list[str]:
        """Every pinned class that derives from ``cls``, however far down, in a stable order."""
        if self.subclasses is None:
            self.subclasses = {}
            for name, node in self.modules.defs.items():
                if isinstance(node, ast.ClassDef):
                    for base in self.modules.bases(name):
                        self.subclasses.setdefault(base, []).append(name)
        todo, seen = list(self.subclasses.get(cls, [])), []
        while todo:
            sub = todo.pop(0)
            if sub not in seen:
                seen.append(sub)
                todo += self.subclasses.get(sub, [])
        return seen

    def dispatch(self, owner: str, method: str, after_owner: bool) -> dict[str, list[str]]:
        """The pinned function a call of ``method`` on ``self`` in a method of the class
        ``owner`` runs, for each class the object may be (``owner`` and every pinned subclass):
        function -> those classes; "" -> the classes for which no pinned method runs (an
        unpinned base's). ``after_owner``: called through ``super()``, so the search starts
        after ``owner`` in the object's order."""
        found: dict[str, list[str]] = {}
        for cls in [owner, *self.subclasses_of(owner)]:
            runs = self.modules.method_of(cls, method, owner if after_owner else "")
            if runs is None or not isinstance(self.modules.defs[runs], ast.FunctionDef):
                runs = ""
            found.setdefault(runs, []).append(cls)
        return found if set(found) - {""} else {}

    def record_fields(self, call: ast.Call, module: str) -> list[tuple[str, ast.expr | None]]:
        """The fields, in order, each with its default, of the pinned record class a call
        builds (a ``NamedTuple``, or a ``@dataclass`` that writes no ``__init__`` of its own);
        none for another call."""
        found = self.modules.target(call, module, None, {})
        node = self.modules.defs.get(found) if found is not None else None
        if not isinstance(node, ast.ClassDef) or f"{found}.__init__" in self.modules.defs:
            return []
        named = {ast.unparse(b).rpartition(".")[2] for b in node.bases}
        decorators = {
            ast.unparse(d.func if isinstance(d, ast.Call) else d).rpartition(".")[2]
            for d in node.decorator_list
        }
        if "NamedTuple" not in named and "dataclass" not in decorators:
            return []
        return [
            (statement.target.id, statement.value)
            for statement in node.body
            if isinstance(statement, ast.AnnAssign)
            and isinstance(statement.target, ast.Name)
            and "ClassVar" not in ast.unparse(statement.annotation)
            and not (isinstance(statement.value, ast.Call) and statement.value.keywords)
        ]

    def constant(self, module: str, name: str) -> ast.expr | None:
        """The value of a module's constant (``TOP_K_THRESHOLD = 8000``, or one it imports):
        a name the module sets once, at its top level, to a literal that no code changes (a
        number, a string, a tuple of them); None for another name."""
        found = self._bound_once(module, name)
        return found if found is not None and _literal(found) else None

    def mapping_keys(self, module: str, name: str) -> ast.Tuple | None:
        """The keys of a module's mapping set once to a dict literal whose keys are constants
        (``STRING_TO_DTYPE = {"float32": torch.float32, ...}``), as a tuple: what ``x in
        NAME`` tests, whatever the values are; None for another name."""
        found = self._bound_once(module, name)
        if not isinstance(found, ast.Dict) or not all(
            isinstance(k, ast.Constant) for k in found.keys
        ):
            return None
        if name in self._changed_mappings():
            return None  # a registry code adds to: its literal is not all it holds
        return ast.Tuple(elts=[copy.deepcopy(k) for k in found.keys], ctx=ast.Load())  # type: ignore[misc]

    @functools.cache  # noqa: B019 - one Functions per generation
    def _changed_mappings(self) -> frozenset[str]:
        """The names any pinned module stores or deletes a key of (``NAME[k] = v``), or calls
        a method of that is not a read (``NAME.update(...)``), or hands to a call."""
        reads = {"get", "keys", "values", "items", "copy"}
        changed = set()
        for tree in self.modules.trees.values():
            for node in ast.walk(tree):
                if (
                    isinstance(node, ast.Subscript)
                    and isinstance(node.ctx, ast.Store | ast.Del)
                    and isinstance(node.value, ast.Name)
                ):
                    changed.add(node.value.id)
                elif isinstance(node, ast.Call):
                    func = node.func
                    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
                        if func.attr not in reads:
                            changed.add(func.value.id)
                    handed = [*node.args, *(k.value for k in node.keywords)]
                    changed |= {a.id for a in handed if isinstance(a, ast.Name)}
        return frozenset(changed)

    def _bound_once(self, module: str, name: str) -> ast.expr | None:
        """What a module sets ``name`` to, once, at its top level, and nowhere rebinds (or what
        the module it imports the name from sets it to); None for another name."""
        if module not in self.constants:
            tree = self.modules.trees[module]
            values = {
                node.targets[0].id: node.value
                for node in tree.body
                if isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
            }
            # Bound more than once anywhere outside its functions and classes, or rebound
            # inside one (global): no constant.
            bound: dict[str, int] = {}
            for statement in tree.body:
                if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    continue
                for node in ast.walk(statement):
                    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                        bound[node.id] = bound.get(node.id, 0) + 1
            rebound = {
                n
                for node in ast.walk(tree)
                if isinstance(node, ast.Global | ast.Nonlocal)
                for n in node.names
            }
            self.constants[module] = {
                n: value for n, value in values.items() if bound.get(n) == 1 and n not in rebound
            }
        found = self.constants[module].get(name)
        if found is None:
            home, _, imported = self.modules.imports.get(module, {}).get(name, "").partition(":")
            if imported and home in self.modules.trees and home != module:
                return self._bound_once(home, imported)
        return found

    def worker_classes(self, fn: ast.FunctionDef) -> list[tuple[str, str]]:
        """The pinned classes ``fn`` names by dotted path (``"pkg.module.Class"``), each with
        the class's qualified name: the workers it may hand a worker builder."""
        found = []
        for node in ast.walk(fn):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                module, _, name = node.value.rpartition(".")
                cls = self.modules.follow(f"{module}:{name}") if module else None
                if cls is not None and isinstance(self.modules.defs[cls], ast.ClassDef):
                    found.append((node.value, cls))
        return sorted(set(found))

    def builds_master(self, call: ast.Call, module: str) -> bool:
        """Whether a call builds the runner's master config (``MasterConfig(**config)``)."""
        found = self.modules.target(call, module, None, {})
        return found is not None and found.endswith(f":{MASTER_CLASS}")


class _Reader:
    """One function's body as steps (see the module)."""

    def __init__(
        self, functions: Functions, module: str, fn: ast.FunctionDef, qualified: str = ""
    ) -> None:
        self.functions = functions
        self.module = module
        self.qualified = qualified
        self.fn = fn
        # The class it is a method of (its ``self`` and ``cls``), if it is one.
        scope = qualified.partition(":")[2]
        self.owner = scope.rpartition(".")[0] if "." in scope and "<locals>" not in scope else ""
        arguments = fn.args
        self.parameters = [a.arg for a in (*arguments.posonlyargs, *arguments.args)]
        self.parameters += [a.arg for a in arguments.kwonlyargs]
        names = set(self.parameters) | stored(ast.Module(body=fn.body, type_ignores=[]))
        self.names = frozenset(names | {MASTER})
        self.invoked: set[str] = set()
        self.made = 0
        # Its names that hold an object of a pinned class (``logger = Logger(cfg)``), by the
        # class's qualified name: what a method call on one runs.
        self.instances: dict[str, str] = {}
        # The functions it defines inside itself, each with the names of its own it reads: a
        # call of one may change what they hold, handed to it or not.
        self.closures = {
            node.name: sorted(
                {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} & self.names
            )
            for statement in fn.body
            for node in ast.walk(statement)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        }
        # The functions it may call by a name of its own, each by its qualified name: those
        # it defines itself (``setup.<locals>.init_policy``), and those the function that
        # defines it defines, where no name of its own hides them (``nested``).
        inherited = functions.scopes.get(qualified, {})
        self.defined = {k: v for k, v in inherited.items() if k not in names}
        # Its names set to one of two callables (``make = factory if factory else Policy``),
        # and those of the function that defines it: a call of one runs the one the test picks.
        enclosing = functions.alternatives.get(qualified, {})
        written = functions.written.get(qualified)
        own = _own_names(written) if written is not None else names
        self.alternatives: dict[str, ast.IfExp] = {
            k: v for k, v in enclosing.items() if k not in own
        }
        for node in _defined(fn.body):
            self.defined[node.name] = functions.define(f"{qualified}.<locals>.{node.name}", node)
        for inner in self.defined.values():
            if inner.startswith(f"{qualified}.<locals>."):
                functions.scopes[inner] = self.defined
                functions.outer[inner] = self.names
                functions.alternatives[inner] = self.alternatives  # filled as it is read

    # --- expressions ---------------------------------------------------------------------

    def text(self, node: ast.expr | None) -> str | None:
        return evaluable(node, self.names | self._made())

    def _made(self) -> frozenset[str]:
        return frozenset(f"_r{n}" for n in range(self.made))

    def hoisted(self, node: ast.expr, out: list[Step]) -> ast.expr:
        """``node`` with each call of a pinned function run first (an invoke step appended to
        ``out``, its result a name of its own), ``MasterConfig(**x)`` the master config's
        values and ``cast(T, x)`` as ``x``."""
        reader = self

        class Hoist(ast.NodeTransformer):
            def __init__(self) -> None:
                self.quiet = 0

            def visit_BoolOp(self, node: ast.BoolOp) -> ast.expr:
                first, *rest = node.values
                values = [self.visit(first)]
                self.quiet += 1
                values += [self.visit(v) for v in rest]
                self.quiet -= 1
                return ast.copy_location(ast.BoolOp(op=node.op, values=values), node)

            def visit_IfExp(self, node: ast.IfExp) -> ast.expr:
                test = self.visit(node.test)
                self.quiet += 1
                body, orelse = self.visit(node.body), self.visit(node.orelse)
                self.quiet -= 1
                return ast.copy_location(ast.IfExp(test=test, body=body, orelse=orelse), node)

            def visit_Name(self, node: ast.Name) -> ast.expr:
                # A module's constant that no name of the function hides: its literal.
                if isinstance(node.ctx, ast.Load) and node.id not in reader.names:
                    value = reader.functions.constant(reader.module, node.id)
                    if value is not None:
                        return ast.copy_location(copy.deepcopy(value), node)
                return node

            def visit_Compare(self, node: ast.Compare) -> ast.expr:
                # ``x in NAME`` of a module's dict literal: a test of its keys alone.
                right = node.comparators[0]
                if (
                    len(node.ops) == 1
                    and isinstance(node.ops[0], ast.In | ast.NotIn)
                    and isinstance(right, ast.Name)
                    and right.id not in reader.names
                    and (keys := reader.functions.mapping_keys(reader.module, right.id))
                ):
                    left = self.visit(node.left)
                    tested = ast.Compare(left=left, ops=node.ops, comparators=[keys])
                    return ast.copy_location(tested, node)
                return self.generic_visit(node)  # type: ignore[return-value]

            def _local(self, node: ast.AST) -> ast.AST:
                return node  # names bound inside: the walk does not follow them

            visit_Lambda = visit_ListComp = visit_SetComp = visit_DictComp = _local
            visit_GeneratorExp = _local

            def visit_Call(self, node: ast.Call) -> ast.expr:
                if ast.unparse(node.func) == "cast" and len(node.args) == 2:
                    return self.visit(node.args[1])  # type: ignore[no-any-return]
                imported = reader.functions.imported(node.func, reader.module)
                known = EVALUATED_IMPORTS.get(imported)
                if known is not None and not set(conditions.names(ast.unparse(node.func))) & (
                    reader.names
                ):
                    node = ast.Call(
                        func=ast.Name(id=known, ctx=ast.Load()),
                        args=node.args,
                        keywords=node.keywords,
                    )
                if reader.functions.builds_master(node, reader.module):
                    return ast.copy_location(ast.Name(id=MASTER, ctx=ast.Load()), node)
                visited = self.generic_visit(node)
                assert isinstance(visited, ast.Call)
                if not self.quiet and (read := reader.set_default(visited, out)) is not None:
                    return ast.copy_location(read, node)
                if not self.quiet and (read := reader.popped(visited, out)) is not None:
                    return ast.copy_location(read, node)
                callee = reader.functions.callee(visited, reader.module, reader.owner)
                if callee is None and (on_self := reader.on_self(visited)):
                    name = f"_r{reader.made}"
                    reader.made += 1
                    out.append(reader.by_class(visited, on_self, name, bool(self.quiet)))
                    return ast.copy_location(ast.Name(id=name, ctx=ast.Load()), node)
                if callee is None and (found := reader.nested(visited)) is not None:
                    callee, visited = found
                if callee is None and (picked := reader.picked(visited, out)) is not None:
                    return ast.copy_location(picked, node)
                if callee is None and (
                    fields := reader.functions.record_fields(visited, reader.module)
                ):
                    return ast.copy_location(reader.record(visited, fields, out), node)
                if callee is None and (choices := reader.dispatched(visited)):
                    # One of them runs, which one unknown: each may, its checks quiet.
                    name = f"_r{reader.made}"
                    reader.made += 1
                    out.extend(reader.invoke(choice, visited, None, True) for choice in choices)
                    out.append(["set", name, None])
                    return ast.copy_location(ast.Name(id=name, ctx=ast.Load()), node)
                if callee is None:
                    return visited
                if callee in reader.functions.builders:
                    out.extend(reader.built_workers(visited, bool(self.quiet)))
                name = f"_r{reader.made}"
                reader.made += 1
                if callee.endswith(".__init__"):
                    # What a class builds is an object the replay does not hold.
                    made = reader.functions.modules.target(visited, reader.module, None, {})
                    out.append(reader.invoke(callee, visited, None, bool(self.quiet), made or ""))
                    out.append(["set", name, None])
                else:
                    out.append(reader.invoke(callee, visited, name, bool(self.quiet)))
                return ast.copy_location(ast.Name(id=name, ctx=ast.Load()), node)

        result = Hoist().visit(copy.deepcopy(node))  # the source stays as written
        assert isinstance(result, ast.expr)
        return result

    def set_default(self, call: ast.Call, out: list[Step]) -> ast.expr | None:
        """``d.setdefault("k", v)`` on a chain ``d``: a store of ``v`` at ``k`` where ``d``
        has no ``k`` (appended to ``out``), and the call as the read of ``d["k"]`` it returns;
        None for another call."""
        made = _keyed_on_chain(call, "setdefault")
        if made is None:
            return None
        owner, key = made
        container = self.text(owner)
        value = self.text(call.args[1]) if len(call.args) == 2 else "None"
        roots = [t] if (t := self.text(_root(owner))) else []
        store: Step = ["store", container, key, value, roots]
        absent = f"{key!r} not in {container}" if container else None
        out.append(["if", absent, [store], [], [], False])
        return ast.Subscript(value=owner, slice=ast.Constant(value=key), ctx=ast.Load())

    def popped(self, call: ast.Call, out: list[Step]) -> ast.expr | None:
        """``d.pop("k", v)`` on a chain ``d``: what it returns, read before (a name of its own,
        set to ``d.get("k", v)``, or ``d["k"]`` without a default), and the key unknown after
        (gone, which a store of an unknown value says); None for another call."""
        made = _keyed_on_chain(call, "pop")
        if made is None:
            return None
        container = self.text(made[0])
        if not container:
            return None
        key, name = made[1], f"_r{self.made}"
        self.made += 1
        default = self.text(call.args[1]) if len(call.args) == 2 else ""
        read = f"{container}.get({key!r}, {default})" if default else f"{container}[{key!r}]"
        out.append(["set", name, None if default is None else read])
        # A store of what the replay cannot tell: the key is unknown from now on.
        roots = [t] if (t := self.text(_root(made[0]))) else []
        out.append(["store", container, key, None, roots])
        return ast.Name(id=name, ctx=ast.Load())

    def on_self(self, call: ast.Call) -> dict[str, list[str]]:
        """The pinned methods a call on ``self`` (``self.setup()``, ``super().__init__()``) in
        a method of this function's class may run, each with the classes the object is of
        when it does (``Functions.dispatch``); none for another call."""
        func = call.func
        if not (self.owner and isinstance(func, ast.Attribute) and _on_self(func.value)):
            return {}
        through_super = isinstance(func.value, ast.Call)
        return self.functions.dispatch(f"{self.module}:{self.owner}", func.attr, through_super)

    def by_class(
        self, call: ast.Call, choices: dict[str, list[str]], target: str, quiet: bool
    ) -> Step:
        """The call of one of ``choices`` (function -> the classes it runs for): an ``if`` step
        on the object's class for each; where the class is unknown, each may run, quietly. For
        a class no pinned method serves (``""``), the call is one the walk does not follow."""
        if len(choices) == 1:
            return self.invoke(next(iter(choices)), call, target, quiet)
        unfollowed = [s for s in self.effects(call) if s[0] == "mutate"] if "" in choices else []
        rest: list[Step] = [*unfollowed, ["set", target, None]]
        for function, classes in reversed(choices.items()):
            if function:
                test = f"{conditions.CLASS_OF}(self) in {tuple(classes)!r}"
                invoked = [self.invoke(function, call, target, quiet)]
                rest = [["if", test, invoked, rest, [target], False]]
        return rest[0]

    def invoke(
        self, callee: str, call: ast.Call, target: str | None, quiet: bool, of_class: str = ""
    ) -> Step:
        """The invoke step of ``callee`` for ``call``: each parameter bound to its argument's
        text or its default; ``of_class``: the class of the object an ``__init__`` builds."""
        fn = self.functions.modules.defs[callee]
        assert isinstance(fn, ast.FunctionDef)
        self.invoked.add(callee)
        positional = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
        if _takes_receiver(callee, fn):
            # self: the object (one being built); cls: the class. The replay holds neither.
            positional = positional[1:]
        defaults = dict(zip(positional[::-1], fn.args.defaults[::-1], strict=False))
        defaults |= {
            a.arg: d for a, d in zip(fn.args.kwonlyargs, fn.args.kw_defaults, strict=True) if d
        }
        given: dict[str, str | None] = {}
        for parameter, value in zip(positional, call.args, strict=False):
            if isinstance(value, ast.Starred):
                break
            given[parameter] = self.text(value)
        starred = any(isinstance(a, ast.Starred) for a in call.args)
        for keyword in call.keywords:
            if keyword.arg is not None:
                given[keyword.arg] = self.text(keyword.value)
        unpacked = starred or any(k.arg is None for k in call.keywords)
        bindings: list[list[str | None]] = []
        func = call.func
        if (
            _takes_receiver(callee, fn)
            and _bound_to_class(fn) is None
            and isinstance(func, ast.Attribute)
            and _on_self(func.value)
        ):
            # A method called on the object its caller holds (self.setup(), super().setup()):
            # the same object.
            bindings.append(["self", "self"])
        if of_class:
            bindings.append([conditions.CLASS, repr(of_class)])
        for parameter in [*positional, *(a.arg for a in fn.args.kwonlyargs)]:
            if parameter in given:
                bindings.append([parameter, given[parameter]])
            elif parameter in defaults and not unpacked:
                bindings.append([parameter, evaluable(defaults[parameter])])
        return ["invoke", callee, bindings, target, quiet]

    def effects(self, node: ast.AST) -> list[Step]:
        """What ``node`` may change through code the walk does not follow: the names it
        assigns (forgotten), and each value a call may change (changed): one it is handed, and
        the value a method is called on, unless the call changes nothing."""
        changed: list[str] = []
        for part in ast.walk(node):
            handed: list[ast.expr] = []
            if isinstance(part, ast.Call):
                func = ast.unparse(part.func)
                method = isinstance(part.func, ast.Attribute) and part.func.attr in PURE_METHODS
                if func in PURE_CALLS or func in WARNINGS or method:
                    continue
                handed = self._may_change(part)
                if isinstance(part.func, ast.Attribute):
                    handed.append(part.func.value)
                elif isinstance(part.func, ast.Name) and part.func.id in self.closures:
                    handed += [ast.Name(id=n, ctx=ast.Load()) for n in self.closures[part.func.id]]
            elif isinstance(part, ast.Subscript | ast.Attribute) and not isinstance(
                part.ctx, ast.Load
            ):
                handed = [part.value]
            for value in handed:
                for held in _held(value):
                    if (text := self.text(held)) is not None:
                        changed.append(text)
        out: list[Step] = [self.handed_on(name) for name in self._escaping(node)]
        forgotten = sorted(stored(node))
        if forgotten:
            out.append(["forget", forgotten])
        if changed:
            out.append(["mutate", sorted(set(changed))])
        return out

    def nested(self, call: ast.Call) -> tuple[str, ast.Call] | None:
        """A call of a nested function it may call by name (``self.defined``): its qualified
        name, its program taking the names it reads from the function that defines it as
        keyword-only parameters (``Functions.closure``), and the call with each of those handed
        by name (a closure reads them when it runs)."""
        if not isinstance(call.func, ast.Name) or call.func.id not in self.defined:
            return None
        qualified = self.defined[call.func.id]
        free = self.functions.closure(qualified)
        passed = [ast.keyword(arg=n, value=ast.Name(id=n, ctx=ast.Load())) for n in free]
        return qualified, ast.Call(
            func=call.func, args=call.args, keywords=[*call.keywords, *passed]
        )

    def _escaping(self, node: ast.AST) -> list[str]:
        """The nested functions ``node`` hands on as values (to an executor, into a table of
        tasks: ``{"policy": init_policy}``), each once, rather than calling them."""
        called = {id(n.func) for n in ast.walk(node) if isinstance(n, ast.Call)}
        found = [
            n.id
            for n in ast.walk(node)
            if isinstance(n, ast.Name)
            and isinstance(n.ctx, ast.Load)
            and n.id in self.defined
            and id(n) not in called
        ]
        return list(dict.fromkeys(found))

    def picked(self, call: ast.Call, out: list[Step]) -> ast.Name | None:
        """A call of a name set to one of two callables: an ``if`` step on the test that
        picked it, each branch calling its own (``_make_policy(...)`` runs ``Policy(...)`` where
        ``policy_factory`` is None), the result a name of its own."""
        if not isinstance(call.func, ast.Name) or call.func.id not in self.alternatives:
            return None
        choice = self.alternatives[call.func.id]
        name = f"_r{self.made}"
        self.made += 1
        branches: list[list[Step]] = []
        for callable_ in (choice.body, choice.orelse):
            steps: list[Step] = []
            made = ast.Call(func=callable_, args=call.args, keywords=call.keywords)
            result = self.hoisted(made, steps)
            steps += [s for s in self.effects(result) if s[0] in ("invoke", "mutate")]
            steps.append(["set", name, self.text(result)])
            branches.append(steps)
        out.append(["if", self.text(choice.test), branches[0], branches[1], [name], False])
        return ast.Name(id=name, ctx=ast.Load())

    def dispatched(self, call: ast.Call) -> list[str]:
        """The pinned methods a call through a table of classes may run (``{"vllm": A, "x":
        B}[backend].setup(cfg)``: ``A.setup`` and ``B.setup``); none where any is not one."""
        func = call.func
        if not (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Subscript)
            and isinstance(func.value.value, ast.Dict)
        ):
            return []
        found = []
        for value in func.value.value.values:
            cls = self.functions.modules.class_named(value, self.module)
            method = self.functions.modules.defs.get(f"{cls}.{func.attr}") if cls else None
            if not isinstance(method, ast.FunctionDef) or _bound_to_class(method) is None:
                return []
            found.append(f"{cls}.{func.attr}")
        return found

    def record(
        self, call: ast.Call, fields: list[tuple[str, ast.expr | None]], out: list[Step]
    ) -> ast.Name:
        """A record a call builds (``RuntimeConfig(model_config=..., cp_size=...)``): an object
        the replay holds (``conditions.Built``), each field stored from its argument or its
        default, and unknown where neither is known; the name it is held by."""
        name = f"_r{self.made}"
        self.made += 1
        out.append(["set", name, f"{conditions.BUILT}()"])
        given: dict[str, ast.expr | None] = dict(fields)
        if any(isinstance(a, ast.Starred) for a in call.args) or any(
            k.arg is None for k in call.keywords
        ):
            given = {field: None for field in given}
        else:
            given |= {field: value for (field, _), value in zip(fields, call.args, strict=False)}
            given |= {k.arg: k.value for k in call.keywords if k.arg is not None}
        for field, value in given.items():
            out.append(["store", name, field, self.text(value), []])
        return ast.Name(id=name, ctx=ast.Load())

    def built_workers(self, call: ast.Call, quiet: bool) -> list[Step]:
        """What a worker builder's call (``RayWorkerBuilder(worker_cls, config, ...)``) builds:
        each pinned class this function names by dotted path may be the worker, built on a
        copy of what the builder is handed after the path (what it changes stays its own).
        An ``if`` step on the path runs the one it names."""
        if not call.args or isinstance(call.args[0], ast.Starred):
            return []
        path = self.text(call.args[0])
        where = f"{self.functions.modules.paths[self.module]}:{call.lineno}"

        def copied(value: ast.expr) -> ast.expr:
            return ast.Call(func=ast.Name(id="deepcopy", ctx=ast.Load()), args=[value], keywords=[])

        args = [a if isinstance(a, ast.Starred) else copied(a) for a in call.args[1:]]
        keywords = [
            ast.keyword(arg=k.arg, value=copied(k.value) if k.arg else k.value)
            for k in call.keywords
        ]
        out: list[Step] = []
        for dotted, cls in self.functions.worker_classes(self.fn):
            init = self.functions.modules.init_of(cls)
            if init is None:
                continue
            built = ast.Call(func=ast.Name(id=cls, ctx=ast.Load()), args=args, keywords=keywords)
            invoke = [*self.invoke(init, built, None, quiet, cls), where]
            test = f"{path} == {dotted!r}" if path else None
            out.append(["if", test, [invoke], [], [], False])
        return out

    def handed_on(self, name: str) -> Step:
        """A function this one defines, handed to code the walk does not follow (an executor,
        a table of tasks) or stored, which runs it: it runs here, its own parameters unknown."""
        found = self.nested(ast.Call(func=ast.Name(id=name, ctx=ast.Load()), args=[], keywords=[]))
        assert found is not None
        return self.invoke(*found, None, False)

    def _note_instance(self, name: str, value: ast.expr) -> None:
        """``name`` holds an object of the pinned class ``value`` builds, if it builds one."""
        self.instances.pop(name, None)
        if isinstance(value, ast.Call):
            modules = self.functions.modules
            found = modules.target(value, self.module, None, self.instances)
            if found is not None and isinstance(modules.defs[found], ast.ClassDef):
                self.instances[name] = found

    def _may_change(self, call: ast.Call) -> list[ast.expr]:
        """The arguments a call the walk does not follow may change: each one but those the
        pinned function it runs declares read-only (a parameter annotated ``Mapping``,
        ``Sequence``, ...: ``Logger.log_hyperparams(self, params: Mapping[str, Any])``) or only
        reads from (``_unchanged``)."""
        modules = self.functions.modules
        found = modules.callee(call, self.module, None, self.instances) or ""
        fn = modules.defs.get(found)
        read_only: set[str] = set()
        positional: list[str] = []
        if isinstance(fn, ast.FunctionDef):
            arguments = fn.args
            params = [*arguments.posonlyargs, *arguments.args]
            kind = _bound_to_class(fn)
            method = isinstance(call.func, ast.Attribute) and kind is None
            bound = method or kind is True or found.endswith(".__init__")
            positional = (
                [a.arg for a in params[1:]] if bound and params else [a.arg for a in params]
            )
            read_only = {
                a.arg
                for a in (*params, *arguments.kwonlyargs)
                if a.annotation is not None and _read_only(a.annotation)
            }
            if found not in self.functions.unchanged:
                self.functions.unchanged[found] = _unchanged(fn)
            read_only |= self.functions.unchanged[found]
        handed = [
            arg
            for index, arg in enumerate(call.args)
            if not (index < len(positional) and positional[index] in read_only)
        ]
        handed += [k.value for k in call.keywords if k.arg not in read_only]
        return handed

    # --- statements ----------------------------------------------------------------------

    def steps(self, body: Iterable[ast.stmt], on_the_way: list[ast.expr]) -> list[Step]:
        out: list[Step] = []
        for statement in body:
            out += self.statement(statement, on_the_way)
        return out

    def statement(self, statement: ast.stmt, on_the_way: list[ast.expr]) -> list[Step]:
        """The steps of ``statement``; each that evaluates something ends with where it is
        (``file:line``), where a key it reads may be missing."""
        where = f"{self.functions.modules.paths[self.module]}:{statement.lineno}"
        return [
            [*step, where] if step[0] in _EVALUATING else step
            for step in self._statement(statement, on_the_way)
        ]

    def _statement(self, statement: ast.stmt, on_the_way: list[ast.expr]) -> list[Step]:
        out: list[Step] = []
        if isinstance(statement, ast.If):
            test = self.hoisted(statement.test, out)
            negated = ast.UnaryOp(op=ast.Not(), operand=statement.test)
            then = self.steps(statement.body, [*on_the_way, statement.test])
            orelse = self.steps(statement.orelse, [*on_the_way, negated])
            changed = sorted(stored(ast.Module(body=[statement], type_ignores=[])))
            exits = _exits(statement.body) or _exits(statement.orelse)
            out.append(["if", self.text(test), then, orelse, changed, exits])
        elif isinstance(statement, ast.Raise) and statement.exc is not None:
            exc = statement.exc
            raised = ast.unparse(exc.func if isinstance(exc, ast.Call) else exc)
            out.append(["guard", "True", raised, statement.lineno, _on_the_way(on_the_way)])
        elif isinstance(statement, ast.Assert):
            test = self.hoisted(statement.test, out)
            failing = ast.UnaryOp(op=ast.Not(), operand=test)
            shown = _on_the_way([*on_the_way, ast.UnaryOp(op=ast.Not(), operand=statement.test)])
            out.append(["guard", self.text(failing), "AssertionError", statement.lineno, shown])
        elif isinstance(statement, ast.Return):
            value = self.hoisted(statement.value, out) if statement.value else None
            out.append(["return", self.text(value) if value else "None"])
        elif isinstance(statement, ast.Assign | ast.AnnAssign | ast.AugAssign):
            out += self.assignment(statement)
        elif isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
            call = statement.value
            if ast.unparse(call.func) in WARNINGS:
                out.append(["warn", statement.lineno, _on_the_way(on_the_way)])
            else:
                value = self.hoisted(call, out)
                out += self.effects(value)
        elif isinstance(statement, ast.With):
            for item in statement.items:
                out += self.effects(self.hoisted(item.context_expr, out))
                if item.optional_vars is not None:
                    out += self.effects(item.optional_vars)
            out += self.steps(statement.body, on_the_way)
        elif isinstance(statement, ast.Try) and not statement.handlers:
            # try/finally catches nothing: its body runs as written, then the cleanup.
            out += self.steps(statement.body, on_the_way)
            out += self.steps(statement.finalbody, on_the_way)
        elif isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
            # A nested function runs where it is called (its effects then: ``closures``);
            # defining it runs only its decorators.
            for decorator in statement.decorator_list:
                out += self.effects(decorator)
            out.append(["forget", [statement.name]])
        elif not isinstance(statement, ast.Expr | ast.Pass):
            out += self.effects(statement)
            if _exits([statement]):
                # A loop or ``try`` that may return: the rest of the function may not run.
                out.append(["if", None, [], [], [], True])
        return out

    def assignment(self, statement: ast.Assign | ast.AnnAssign | ast.AugAssign) -> list[Step]:
        out: list[Step] = []
        if statement.value is None:
            return out  # a declaration
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        value = statement.value
        if isinstance(statement, ast.AugAssign):
            value = ast.BinOp(left=_loaded(statement.target), op=statement.op, right=value)
        if isinstance(statement, ast.AnnAssign) and self.functions.builds_master(
            ast.Call(func=statement.annotation, args=[], keywords=[]), self.module
        ):
            # ``config: MasterConfig = OmegaConf.to_container(...)``: a runner whose master
            # config is a TypedDict names its values by their type.
            value = ast.Name(id=MASTER, ctx=ast.Load())
        value = self.hoisted(value, out)
        text = self.text(value)
        out += [s for s in self.effects(value) if s[0] in ("invoke", "mutate")]
        for target in targets:
            if isinstance(target, ast.Name):
                self._note_instance(target.id, statement.value)
                self.alternatives.pop(target.id, None)
                value_node = statement.value
                if isinstance(value_node, ast.IfExp) and all(
                    isinstance(b, ast.Name) for b in (value_node.body, value_node.orelse)
                ):
                    self.alternatives[target.id] = value_node
                out.append(["set", target.id, text])
            elif isinstance(target, ast.Tuple | ast.List) and all(
                isinstance(e, ast.Name) for e in target.elts
            ):
                # ``a, b = f()``: each name the item it unpacks (``_r0[1]``).
                for index, element in enumerate(target.elts):
                    self.instances.pop(element.id, None)  # type: ignore[attr-defined]
                    item = f"{text}[{index}]" if text is not None and text.isidentifier() else None
                    out.append(["set", element.id, item])  # type: ignore[attr-defined]
            elif isinstance(target, ast.Subscript | ast.Attribute) and (
                isinstance(target, ast.Attribute) or isinstance(target.slice, ast.Constant)
            ):
                key = target.attr if isinstance(target, ast.Attribute) else target.slice.value  # type: ignore[attr-defined]
                owner = self.hoisted(target.value, out)
                container = self.text(owner) if _chain(owner) else None
                root = _root(owner)
                roots = [t] if _chain(root) and (t := self.text(root)) else []
                out.append(["store", container, str(key), text, roots])
            else:
                out += self.effects(target)
        return out


class _Flow:
    """What the liveness of every program of a table tells the others: each function's
    parameters that some invoke binds to a value the replay may know, and the functions that
    may return one."""

    def __init__(self, programs: dict[str, dict[str, Any]]) -> None:
        # An __init__'s self is the object the replay holds while it runs.
        self.given: dict[str, set[str]] = {
            name: {"self"} if name.endswith(".__init__") else set() for name in programs
        }
        self.returning: set[str] = set()
        # A function whose returned tuple may hold a value in some places only: those places.
        self.returning_items: dict[str, set[int]] = {}
        self.changed = False

    def bind(self, callee: str, parameter: str) -> None:
        if callee in self.given and parameter not in self.given[callee]:
            self.given[callee].add(parameter)
            self.changed = True

    def returns(self, name: str) -> None:
        if name not in self.returning:
            self.returning.add(name)
            self.changed = True

    def returns_items(self, name: str, items: set[int]) -> None:
        held = self.returning_items.setdefault(name, set())
        if not items <= held:
            held |= items
            self.changed = True

    def known_after(self, callee: str, target: str) -> set[str]:
        """What an invoke of ``callee`` into ``target`` may give a value: the target, or the
        places of its returned tuple that may hold one (``target[i]``)."""
        if callee in self.returning:
            return {target}
        return {f"{target}[{i}]" for i in self.returning_items.get(callee, ())}


def _mark_live(programs: dict[str, dict[str, Any]]) -> None:
    """Each guard and warning of ``programs`` marked (a last item) with whether any config can
    make the replay evaluate it: as ``tools.config_programs.live`` marks a class's program,
    where what a function knows is what its callers may bind its parameters to (the master
    config's values in a runner's main) and what the functions it invokes may return."""
    flow = _Flow(programs)
    flow.changed = True
    while flow.changed:
        flow.changed = False
        for name, entry in programs.items():
            _flow(entry["program"], _Known({*flow.given[name], MASTER}), True, flow, name, False)
    for name, entry in programs.items():
        _flow(entry["program"], _Known({*flow.given[name], MASTER}), True, flow, name, True)


def _flow(
    steps: list[Step], known: _Known, reached: bool, flow: _Flow, name: str, mark: bool
) -> _Known:
    for step in steps:
        kind = step[0]
        if kind == "set":
            # What it reads is read before it is set (x = cast(T, x) keeps x).
            readable = not known.reads_unknown(step[2])  # type: ignore[arg-type]
            known.forget([step[1]])  # type: ignore[list-item]
            if readable:
                known.names.add(step[1])  # type: ignore[arg-type]
        elif kind == "forget":
            known.forget(step[1])  # type: ignore[arg-type]
        elif kind == "mutate":
            # A name handed to code it does not follow holds what the replay cannot tell (a
            # key of a chain so handed is unknown, its mapping's other keys are not).
            known.forget([t for t in step[1] if t.isidentifier()])  # type: ignore[attr-defined]
        elif kind == "if":
            decidable = reached and not known.reads_unknown(step[1])  # type: ignore[arg-type]
            then = _flow(step[2], known.copy(), decidable, flow, name, mark)  # type: ignore[arg-type]
            orelse = _flow(step[3], known.copy(), decidable, flow, name, mark)  # type: ignore[arg-type]
            if decidable:
                known = _Known(then.names & orelse.names)
            else:
                known.forget(step[4])  # type: ignore[arg-type]
                reached = reached and not step[5]
        elif kind in ("guard", "warn") and mark:
            evaluable = kind == "warn" or not known.reads_unknown(step[1])  # type: ignore[arg-type]
            step.append(reached and evaluable)
        elif kind == "invoke":
            callee, bindings, target = step[1], step[2], step[3]
            for parameter, argument in bindings:  # type: ignore[attr-defined]
                if reached and not known.reads_unknown(argument):
                    flow.bind(callee, parameter)  # type: ignore[arg-type]
            if target is not None:
                known.forget([target])  # type: ignore[list-item]
                if reached:
                    known.names |= flow.known_after(callee, target)  # type: ignore[arg-type]
        elif kind == "return" and reached and step[1] is not None:
            if not known.reads_unknown(step[1]):  # type: ignore[arg-type]
                flow.returns(name)
            elif items := _readable_items(step[1], known):  # type: ignore[arg-type]
                flow.returns_items(name, items)
    return known


def _readable_items(text: str, known: _Known) -> set[int]:
    """The places of a returned tuple literal whose value the replay may know."""
    node = ast.parse(text, mode="eval").body
    if not isinstance(node, ast.Tuple):
        return set()
    return {i for i, item in enumerate(node.elts) if not known.reads_unknown(ast.unparse(item))}


def _inert(steps: list[Step], inert: set[str]) -> bool:
    for step in steps:
        kind = step[0]
        if kind in ("guard", "warn", "store", "mutate") or (kind == "return" and step[1]):
            if not (kind == "return" and step[1] == "None"):
                return False
        if kind == "invoke" and step[1] not in inert:
            return False
        if kind == "if" and not (_inert(step[2], inert) and _inert(step[3], inert)):  # type: ignore[arg-type]
            return False
    return True


def _without(steps: list[Step], inert: set[str]) -> list[Step]:
    """``steps`` with each invoke of an ``inert`` function as what it leaves: its target
    unknown."""
    out: list[Step] = []
    for step in steps:
        if step[0] == "invoke" and step[1] in inert:
            if step[3] is not None:
                out.append(["set", step[3], None])
        elif step[0] == "if":
            then, orelse = (_without(s, inert) for s in step[2:4])  # type: ignore[arg-type]
            out.append([*step[:2], then, orelse, *step[4:]])
        else:
            out.append(step)
    return out


def _loaded(target: ast.expr) -> ast.expr:
    """An assignment's target read as a value (``x += 1`` reads ``x``)."""
    node = copy.deepcopy(target)
    for part in ast.walk(node):
        if hasattr(part, "ctx"):
            part.ctx = ast.Load()
    return node
