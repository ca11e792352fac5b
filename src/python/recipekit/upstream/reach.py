"""Which modules of an upstream package an entry point reaches, read from their text with ``ast``.

A module is reached when the entry point, or a module it reaches, imports it (``import a.b``,
``from a import b``, relative imports, imports inside functions: a call may run them) or names it
in a dotted string (NeMo-RL starts its Ray actors by a string such as
``"nemo_rl.models.policy.workers.megatron_policy_worker.MegatronPolicyWorker"``). Importing
``a.b.c`` also runs the ``__init__.py`` of ``a`` and ``a.b``, so those are reached too. Imports
under ``if TYPE_CHECKING:`` never run and do not count.

Reaching a module does not mean a stage runs every function in it: the rule catalogue says, per
rule site, whether recipekit's stages get there (``reason = "unreachable"`` where not).

Only modules of the package (``nemo_rl``) are followed; the package's own tree (every ``.py``
path at the pinned commit) says which dotted names are modules, and ``read`` gives a module's
text, or None where it is not at hand (not pinned, not fetched).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Collection, Iterable

import attrs

PACKAGE = "nemo_rl"


@attrs.frozen
class Reach:
    # Every reached path of the tree, the entry points included, sorted.
    modules: tuple[str, ...]
    # Reached paths whose text ``read`` did not give (so what they import is not followed).
    unread: tuple[str, ...]


def _module_name(path: str) -> list[str]:
    return path.removesuffix(".py").removesuffix("/__init__").split("/")


def _type_checking(test: ast.expr) -> bool:
    return ast.unparse(test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")


def names(source: str, path: str, package: str = PACKAGE) -> set[str]:
    """The dotted names a module's text imports or names in a string, that may be modules of
    ``package`` (an imported class's name too: the tree sorts them out)."""
    tree = ast.parse(source)
    skipped = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and _type_checking(node.test)
        for statement in node.body
        for inner in ast.walk(statement)
    }
    here = _module_name(path)
    # The package a relative import counts from: the module's own for an __init__.py.
    parent = here if path.endswith("__init__.py") else here[:-1]
    dotted = re.compile(rf"{re.escape(package)}(\.\w+)+")
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = parent[: len(parent) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found.add(module)
            found |= {f"{module}.{alias.name}" for alias in node.names if alias.name != "*"}
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if dotted.fullmatch(node.value):
                found.add(node.value)
    return {name for name in found if name == package or name.startswith(package + ".")}


def _paths(name: str, tree: Collection[str]) -> list[str]:
    """The modules of ``tree`` that importing ``name`` runs: each package on the way, and the
    module itself (a class's dotted name runs its module)."""
    parts = name.split(".")
    found = []
    for end in range(1, len(parts) + 1):
        stem = "/".join(parts[:end])
        for candidate in (f"{stem}/__init__.py", f"{stem}.py"):
            if candidate in tree:
                found.append(candidate)
    return found


def reach(
    entry_points: Iterable[str],
    tree: Collection[str],
    read: Callable[[str], str | None],
    package: str = PACKAGE,
) -> Reach:
    """The modules of ``tree`` the entry points reach (see the module's docstring)."""
    seen: set[str] = set()
    unread: set[str] = set()
    todo = list(entry_points)
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        text = read(path)
        if text is None:
            unread.add(path)
            continue
        for name in names(text, path, package):
            todo += [p for p in _paths(name, tree) if p not in seen]
    return Reach(tuple(sorted(seen)), tuple(sorted(unread)))
