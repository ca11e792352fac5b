"""The config keys every run of a NeMo-RL entry point reads without a default, found with ``ast``
in the pinned modules it reaches (issue 40: a KeyError is a failure a config value causes).

``generate_key_needs.py`` finds the reads a feature switch guards; this finds the ones nothing
guards. A read is kept only where all of this holds, so a key it names fails every run that
lacks it:

- its function runs on every run: the entry point's ``main``, and each function or class that a
  function already kept calls at a point that always runs, named so that it resolves without
  running anything (a plain name, an imported module's attribute, ``self.method``, a class, a
  method of a name set from a class's constructor);
- the read always runs in that function: not under an ``if``, a loop, a comprehension, the
  second operand of ``and``/``or``, a ``try`` that catches a KeyError, or after a statement that
  may ``return``, ``break`` or ``continue`` first (one that only raises is a failure either way);
- it is a chain of constant subscripts on an object typed with a config class: a parameter or
  name annotated with one, a parameter its caller passes one to, ``self.x`` set from one, a
  subscript or (pydantic) attribute of one, a ``cast``, or a config class's constructor;
- the key is ``NotRequired`` in every class the object may be, and the class stands at one key
  path of the entry point's master config (a class used at two paths is not known to be this
  one);
- no pinned module writes a key of that name (NeMo-RL fills some keys itself).

Calls through other objects (``policy.train()``, Ray actors) are not followed: what it finds is
a floor, never a guess.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import attrs

from recipekit.upstream.classes import UpstreamSource
from recipekit.upstream.declared import DeclaredTable

Path_ = tuple[str, ...]
# What a ``try`` must catch for a KeyError in its body not to end the run.
_CATCHES = ("KeyError", "LookupError", "Exception", "BaseException")
# Statements whose body is not sure to run (or to run before what follows them).
_BRANCHES = (
    ast.If,
    ast.IfExp,
    ast.While,
    ast.For,
    ast.AsyncFor,
    ast.comprehension,
    ast.Lambda,
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
    ast.Match,
)
_FunctionDef = ast.FunctionDef | ast.AsyncFunctionDef


def module_name(path: str) -> str:
    return path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")


class Modules:
    """The reached modules' functions, classes and imports, by qualified name (``module:name``,
    ``module:Class.method``)."""

    def __init__(self, texts: Mapping[str, str]) -> None:
        self.paths: dict[str, str] = {}
        self.trees: dict[str, ast.Module] = {}
        self.parents: dict[str, dict[ast.AST, ast.AST]] = {}
        self.defs: dict[str, ast.AST] = {}
        self.imports: dict[str, dict[str, str]] = {}
        self._linearized: dict[str, list[str]] = {}
        for path, text in texts.items():
            module = module_name(path)
            tree = ast.parse(text)
            self.paths[module], self.trees[module] = path, tree
            self.parents[module] = {c: n for n in ast.walk(tree) for c in ast.iter_child_nodes(n)}
            self.imports[module] = _imports(tree)
            for node in tree.body:
                if isinstance(node, _FunctionDef | ast.ClassDef):
                    self.defs[f"{module}:{node.name}"] = node
                if isinstance(node, ast.ClassDef):
                    for member in node.body:
                        if isinstance(member, _FunctionDef):
                            self.defs[f"{module}:{node.name}.{member.name}"] = member

    def follow(self, qualified: str) -> str | None:
        """The definition ``module:name`` is, through re-exports."""
        for _ in range(8):
            if qualified in self.defs:
                return qualified
            module, _, name = qualified.partition(":")
            target = self.imports.get(module, {}).get(name)
            if target is None or ":" not in target:
                return None
            qualified = target
        return None

    def target(
        self, call: ast.Call, module: str, owner: str | None, instances: Mapping[str, str]
    ) -> str | None:
        """The function or class a call names, where its name alone says: a plain or imported
        name, an imported module's attribute, ``self.method``, or a method of a name the
        function set from a class's constructor (``instances``)."""
        func = call.func
        if isinstance(func, ast.Name):
            local = f"{module}:{func.id}"
            return self.follow(
                local if local in self.defs else self.imports[module].get(func.id, "")
            )
        if not isinstance(func, ast.Attribute) or not isinstance(func.value, ast.Name):
            return None
        name = func.value.id
        if name == "self" and owner is not None:
            method = f"{module}:{owner}.{func.attr}"
            return method if method in self.defs else None
        if name in instances:
            method = f"{instances[name]}.{func.attr}"
            return method if method in self.defs else None
        imported = self.imports[module].get(name, "")
        if imported.replace(":", ".") in self.trees:  # a module, imported or from its package
            return self.follow(f"{imported.replace(':', '.')}:{func.attr}")
        return None

    def init_of(self, cls: str) -> str | None:
        """The ``__init__`` that building an object of the pinned class ``cls`` runs: its own,
        else the first its pinned bases have (``@ray.remote class Worker(WorkerImpl): pass``
        runs ``WorkerImpl.__init__``)."""
        return self.method_of(cls, "__init__")

    def method_of(self, cls: str, method: str, after: str = "") -> str | None:
        """The pinned ``method`` an object of the class ``cls`` runs: the first class of its
        order (``mro``) that defines it; ``after``: from the class after that one, as
        ``super()`` in a method of ``after`` searches. None where no pinned class does."""
        order = self.mro(cls)
        if after:
            order = order[order.index(after) + 1 :] if after in order else []
        return next((f"{c}.{method}" for c in order if f"{c}.{method}" in self.defs), None)

    def mro(self, cls: str) -> list[str]:
        """The pinned classes of ``cls``'s method resolution order, as Python's C3 orders
        them (a base the pinned files do not define is left out)."""
        found = self._linearized.get(cls)
        if found is None:
            self._linearized[cls] = [cls]  # a cycle reads as no bases
            orders = [self.mro(b) for b in self.bases(cls)]
            orders.append(list(self.bases(cls)))
            merged = [cls]
            while any(orders):
                head = next(
                    (o[0] for o in orders if o and not any(o[0] in r[1:] for r in orders)), None
                )
                if head is None:  # no consistent order: Python refuses the class
                    break
                merged.append(head)
                orders = [o[1:] if o and o[0] == head else o for o in orders]
            found = self._linearized[cls] = merged
        return found

    def class_named(self, node: ast.expr, module: str) -> str | None:
        """The pinned class an expression of ``module`` names (``Policy``,
        ``lm_policy.Policy``), if it names one."""
        found = self.target(ast.Call(func=node, args=[], keywords=[]), module, None, {})
        return found if found is not None and isinstance(self.defs[found], ast.ClassDef) else None

    def bases(self, cls: str) -> list[str]:
        """The pinned classes the class ``cls`` names as its bases, in order."""
        node = self.defs[cls]
        assert isinstance(node, ast.ClassDef), cls
        found = (self.class_named(base, cls.partition(":")[0]) for base in node.bases)
        return [base for base in found if base is not None]

    def callee(
        self, call: ast.Call, module: str, owner: str | None, instances: Mapping[str, str]
    ) -> str | None:
        """The function a call runs (a class: its ``__init__``)."""
        found = self.target(call, module, owner, instances)
        if found is not None and isinstance(self.defs[found], ast.ClassDef):
            init = f"{found}.__init__"
            return init if init in self.defs else None
        return found

    def always_runs(self, node: ast.AST, module: str, function: ast.AST) -> bool:
        """Whether ``node`` runs whenever ``function`` runs to its end."""
        parents = self.parents[module]
        child = node
        while child is not function:
            parent = parents[child]
            if parent is not function and isinstance(parent, _BRANCHES):
                tested = isinstance(parent, ast.If | ast.While | ast.IfExp) and child is parent.test
                iterated = isinstance(parent, ast.For | ast.AsyncFor) and child is parent.iter
                if not (tested or iterated):
                    return False
            if isinstance(parent, ast.Try) and (
                child not in parent.body or any(_catches(h) for h in parent.handlers)
            ):
                return False
            if isinstance(parent, ast.BoolOp) and parent.values.index(child) > 0:  # type: ignore[arg-type]
                return False
            for field in ("body", "orelse", "finalbody"):
                body = getattr(parent, field, None)
                if isinstance(body, list) and child in body:
                    if any(_may_leave(s) for s in body[: body.index(child)]):
                        return False
            child = parent
        return True

    def every_run(self, entry: str, typing: Typing) -> dict[str, dict[str, tuple[str, ...]]]:
        """The functions every run of the entry point's ``main`` runs, each with its typed
        names: its own (annotations, assignments, ``self.x`` of its class) and the config
        classes its callers pass to parameters it does not annotate."""
        passed: dict[str, dict[str, tuple[str, ...]]] = {}
        kept: dict[str, dict[str, tuple[str, ...]]] = {}
        todo = [f"{module_name(entry)}:main"]
        while todo:
            qualified = todo.pop(0)
            if qualified in kept or qualified not in self.defs:
                continue
            function = self.defs[qualified]
            module, owner = qualified.partition(":")[0], _owner(qualified)
            members = [
                d
                for q, d in self.defs.items()
                if owner is not None and q.startswith(f"{module}:{owner}.") and q != qualified
            ]
            names = typing.names(module, function, passed.get(qualified, {}), members)
            kept[qualified] = names
            instances = self._instances(function, module, owner)
            for node in ast.walk(function):
                if not isinstance(node, ast.Call) or not self.always_runs(node, module, function):
                    continue
                callee = self.callee(node, module, owner, instances)
                if callee is None:
                    continue
                todo.append(callee)
                arguments = _arguments(self.defs[callee], node, typing, names, module)
                for param, classes in arguments:
                    known = passed.setdefault(callee, {})
                    known[param] = tuple(dict.fromkeys((*known.get(param, ()), *classes)))
        return dict(sorted(kept.items()))

    def _instances(self, function: ast.AST, module: str, owner: str | None) -> dict[str, str]:
        """Names the function sets from a class's constructor: name -> the class."""
        out: dict[str, str] = {}
        for node in ast.walk(function):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                found = self.target(node.value, module, owner, {})
                if found is not None and isinstance(self.defs[found], ast.ClassDef):
                    for target in node.targets:
                        if isinstance(target, ast.Name):
                            out[target.id] = found
        return out

    def written(self) -> set[str]:
        """Every key name a reached module writes (``x["k"] = ...``, ``setdefault("k")``)."""
        out: set[str] = set()
        for tree in self.trees.values():
            for node in ast.walk(tree):
                if isinstance(node, ast.Subscript) and not isinstance(node.ctx, ast.Load):
                    if isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
                        out.add(node.slice.value)
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("setdefault", "update")
                    and node.args
                    and isinstance(node.args[0], ast.Constant)
                    and isinstance(node.args[0].value, str)
                ):
                    out.add(node.args[0].value)
        return out


def _imports(tree: ast.Module) -> dict[str, str]:
    """Name -> ``module:name`` (a from-import) or ``module`` (an import), absolute ones only."""
    out: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                out[alias.asname or alias.name] = f"{node.module}:{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    out[alias.asname] = alias.name
                else:
                    out[alias.name.split(".")[0]] = alias.name.split(".")[0]
    return out


def _arguments(
    callee: ast.AST,
    call: ast.Call,
    typing: Typing,
    names: Mapping[str, tuple[str, ...]],
    module: str,
) -> Iterator[tuple[str, tuple[str, ...]]]:
    """The callee's parameters that the call gives a typed value (a method's ``self`` is not
    one of its arguments)."""
    assert isinstance(callee, _FunctionDef)
    params = [a.arg for a in (*callee.args.posonlyargs, *callee.args.args)]
    if params and params[0] in ("self", "cls"):
        params = params[1:]
    for param, value in zip(params, call.args, strict=False):
        if isinstance(value, ast.Starred):
            return
        classes = typing.of(value, names, module)
        if classes:
            yield param, classes
    for keyword in call.keywords:
        if keyword.arg is not None:
            classes = typing.of(keyword.value, names, module)
            if classes:
                yield keyword.arg, classes


def _owner(qualified: str) -> str | None:
    name = qualified.partition(":")[2]
    return name.split(".")[0] if "." in name else None


def _catches(handler: ast.ExceptHandler) -> bool:
    return handler.type is None or any(n in ast.unparse(handler.type) for n in _CATCHES)


def _may_leave(statement: ast.stmt) -> bool:
    """Whether a statement may end its block early without failing (return, break, continue):
    what follows it then does not always run."""
    if not isinstance(statement, ast.If | ast.For | ast.AsyncFor | ast.While | ast.Try | ast.With):
        return False
    return any(isinstance(n, ast.Return | ast.Break | ast.Continue) for n in ast.walk(statement))


def assignment_targets(node: ast.AST) -> list[ast.expr]:
    """What an assignment statement (plain, augmented or annotated) assigns to; [] for any
    other node."""
    if isinstance(node, ast.Assign):
        return node.targets
    if isinstance(node, ast.AugAssign | ast.AnnAssign):
        return [node.target]
    return []


def self_attribute(node: ast.AST) -> str | None:
    """``F`` where ``node`` is ``self.F``, else None."""
    if isinstance(node, ast.Attribute) and ast.unparse(node.value) == "self":
        return node.attr
    return None


def key_chain(node: ast.expr) -> tuple[ast.expr, Path_]:
    """The constant keys a subscript chain reads (``cfg["a"]["b"]``: ``cfg``, ("a", "b"))."""
    keys: list[str] = []
    while (
        isinstance(node, ast.Subscript)
        and isinstance(node.slice, ast.Constant)
        and isinstance(node.slice.value, str)
    ):
        keys.append(node.slice.value)
        node = node.value
    return node, tuple(reversed(keys))


class Typing:
    """Which config classes an expression of a module is (a tuple: several where a key's value
    may be any of them)."""

    def __init__(self, source: UpstreamSource, declared: DeclaredTable) -> None:
        self.source = source
        self.declared = declared

    def classes(self, annotation: ast.expr, module: str) -> tuple[str, ...]:
        found: list[str] = []
        for node in ast.walk(annotation):
            if isinstance(node, ast.Name | ast.Attribute):
                resolved = self.source.resolve(module, ast.unparse(node))
                if resolved is not None and resolved in self.declared.classes:
                    found += [
                        c for c in self.source.subclasses(resolved) if c in self.declared.classes
                    ]
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                try:
                    quoted = ast.parse(node.value, mode="eval").body
                except SyntaxError:
                    continue
                found += self.classes(quoted, module)
        return tuple(dict.fromkeys(found))

    def step(self, classes: tuple[str, ...], key: str) -> tuple[tuple[str, ...], bool] | None:
        """The classes under ``key`` and whether any of ``classes`` requires it; None where none
        declares it."""
        specs = [self.declared[c].keys[key] for c in classes if key in self.declared[c].keys]
        if not specs:
            return None
        nested = tuple(dict.fromkeys(n for s in specs for n in s.nested))
        return nested, any(s.required for s in specs)

    def of(
        self, node: ast.expr, names: Mapping[str, tuple[str, ...]], module: str
    ) -> tuple[str, ...]:
        """The classes ``node`` is, in ``module`` whose typed names are ``names``."""
        if isinstance(node, ast.Name):
            return names.get(node.id, ())
        if (attribute := self_attribute(node)) is not None:
            return names.get(f"self.{attribute}", ())
        if isinstance(node, ast.Call):
            called = ast.unparse(node.func)
            if called in ("cast", "typing.cast") and len(node.args) == 2:
                return self.classes(node.args[0], module)
            return self.classes(node.func, module)  # a config class's constructor
        if isinstance(node, ast.Attribute):  # a pydantic config's field: never a KeyError
            outer = self.of(node.value, names, module)
            stepped = self.step(outer, node.attr) if outer else None
            return stepped[0] if stepped is not None else ()
        root, keys = key_chain(node)
        if not keys:
            return ()
        classes = self.of(root, names, module)
        for key in keys:
            stepped = self.step(classes, key) if classes else None
            if stepped is None:
                return ()
            classes = stepped[0]
        return classes

    def names(
        self,
        module: str,
        function: ast.AST,
        known: Mapping[str, tuple[str, ...]],
        members: Iterable[ast.AST] = (),
    ) -> dict[str, tuple[str, ...]]:
        """The typed names of ``function`` (parameters, assignments), starting from ``known``,
        and the ``self.x`` that it or the other methods of its class (``members``) set."""
        names = dict(known)
        for member in (*members, function):
            found = self._assigned(module, member, names if member is function else {})
            if member is function:
                names.update(found)
            else:
                names.update({k: v for k, v in found.items() if k.startswith("self.")})
        return names

    def _assigned(
        self, module: str, function: ast.AST, known: Mapping[str, tuple[str, ...]]
    ) -> dict[str, tuple[str, ...]]:
        assert isinstance(function, _FunctionDef)
        names = dict(known)
        arguments = function.args
        for argument in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs):
            if argument.annotation is not None:
                found = self.classes(argument.annotation, module)
                if found:
                    names[argument.arg] = found
        for node in ast.walk(function):
            if not isinstance(node, ast.Assign | ast.AnnAssign) or node.value is None:
                continue
            found = ()
            if isinstance(node, ast.AnnAssign):
                found = self.classes(node.annotation, module)
            found = found or self.of(node.value, names, module)
            if not found:
                continue
            for target in assignment_targets(node):
                if isinstance(target, ast.Name):
                    names[target.id] = found
                elif (attribute := self_attribute(target)) is not None:
                    names[f"self.{attribute}"] = found
        return names


def class_paths(declared: DeclaredTable, root: str) -> dict[str, set[Path_]]:
    """Each config class below ``root`` and the key paths it stands at (``()``: the root)."""
    out: dict[str, set[Path_]] = {root: {()}}

    def walk(qualified: str, prefix: Path_, seen: frozenset[str]) -> None:
        for key, spec in declared[qualified].keys.items():
            for nested in spec.nested:
                if nested in declared.classes and nested not in seen:
                    out.setdefault(nested, set()).add((*prefix, key))
                    walk(nested, (*prefix, key), seen | {nested})

    walk(root, (), frozenset({root}))
    return out


@attrs.frozen
class Package:
    """The reached modules of one pinned source, read once for each entry point: their
    definitions, the config classes their names may be, and every key name they write (a
    key one runner's modules write counts for all: fewer reads kept, never a wrong one)."""

    modules: Modules
    typing: Typing
    written: frozenset[str]

    @classmethod
    def read(
        cls, texts: Mapping[str, str], source: UpstreamSource, declared: DeclaredTable
    ) -> Package:
        modules = Modules(texts)
        return cls(modules, Typing(source, declared), frozenset(modules.written()))


def reads(package: Package, entry: str, root: str) -> Iterator[dict[str, Any]]:
    """The reads every run of ``entry`` makes of a NotRequired key (see the module's docstring),
    each as {"at": key path of its section, "needs": [key], "file", "line", "scope"}, where
    ``root`` is the master config class the entry point reads."""
    modules, typing_, written = package.modules, package.typing, package.written
    paths = class_paths(typing_.declared, root)
    for qualified, names in modules.every_run(entry, typing_).items():
        module, _, scope = qualified.partition(":")
        function = modules.defs[qualified]
        parents = modules.parents[module]
        for node in ast.walk(function):
            if not isinstance(node, ast.Subscript) or not isinstance(node.ctx, ast.Load):
                continue
            parent = parents.get(node)
            if isinstance(parent, ast.Subscript) and parent.value is node:
                continue  # the longer chain is the read
            base, keys = key_chain(node)
            classes = typing_.of(base, names, module) if keys else ()
            if not classes or not modules.always_runs(node, module, function):
                continue
            for key in keys:
                stepped = typing_.step(classes, key)
                if stepped is None:
                    break
                if not stepped[1] and key not in written:
                    at = {p for c in classes for p in paths.get(c, set())}
                    if len(at) == 1:
                        [prefix] = at
                        yield {
                            "at": list(prefix),
                            "needs": [key],
                            "file": modules.paths[module],
                            "line": node.lineno,
                            "scope": scope,
                        }
                    break
                classes = stepped[0]
                if not classes:
                    break
