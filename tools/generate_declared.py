"""Write each pinned NeMo-RL version's config classes as data recipekit imports.

    python tools/generate_declared.py            # rewrite the generated modules
    python tools/generate_declared.py --check    # exit 1 when one differs from its source

For every NeMo-RL source the typed sections model (``SOURCES``), every ``TypedDict`` and
pydantic config class its entry points' ``MasterConfig`` reach under its ``nemo_rl/`` (as pinned
in 3rdparty/reference/manifest.toml and materialised by tools/fetch-reference) becomes one entry
of ``src/python/recipekit/upstream/declared/<label>.json``: its keys, each key's type as
recipekit checks it, whether upstream marks it required, and the config classes a mapping under
it is checked against. A ``NotRequired`` TypedDict key that the version's code reads only as
``cfg.get(key)`` (no default, or ``None``) also takes a null: to that code a null is the key left
out, and upstream's example configs write one so (``moe_tensor_parallel_size: null`` in
``grpo_math_1B_trtllm.yaml``). Run it after a pin moves; ``declared_test.py`` fails while a table
differs from what this writes.
"""

from __future__ import annotations

import ast
import json
import sys
from collections.abc import Iterable
from pathlib import Path

import attrs

from recipekit.upstream.annotations import type_text
from recipekit.upstream.bounds import from_keywords
from recipekit.upstream.classes import ConfigClass, UpstreamSource, tree_files
from recipekit.upstream.declared import TABLES, Declared, DeclaredTable, Key
from tools import generate_nemo_rl_guards as nemo_rl_guards
from tools.generated_modules import CHECKOUT, pins, reference_dir, write_or_check


@attrs.frozen
class Tree:
    """A package folder of ``.reference/``: ``folder`` (under it), the pinned source it belongs
    to, and the package name its modules have."""

    folder: str
    label: str
    package: str


@attrs.frozen
class Table:
    """One generated table: named by the pinned source of its root classes, read from
    ``trees`` (several where a framework's config classes extend another's), starting at the
    classes whose qualified name ends with one of ``roots``."""

    label: str
    trees: tuple[Tree, ...]
    roots: tuple[str, ...]
    # Megatron-Bridge imports from packages whose __init__ is not pinned.
    packages_export: bool = False


# The models NeMo-RL validates a section with on its own, outside its master config's tree
# (GRPO's setup validates policy.generation as DynamoConfig with backend dynamo): roots too.
BOUNDARY_ROOTS = {nemo_rl_guards.LABEL: tuple(b[0] for b in nemo_rl_guards.BOUNDARIES)}

TABLES_WRITTEN = (
    *(
        Table(
            label,
            (Tree(f"{label}/nemo_rl", label, "nemo_rl"),),
            (":MasterConfig", *BOUNDARY_ROOTS.get(label, ())),
        )
        for label in ("nemo-rl/super-v3", "nemo-rl/super-v3.5-posttraining")
    ),
    Table(
        "megatron-bridge/main",
        (
            Tree("megatron-bridge/main/src/megatron", "megatron-bridge/main", "megatron"),
            Tree("megatron-bridge/0.6.2-wheel/megatron", "megatron-bridge/0.6.2-wheel", "megatron"),
            Tree("megatron-core/0.19.2/megatron", "megatron-core/0.19.2", "megatron"),
        ),
        ("megatron.bridge.training.config:ConfigContainer",),
        packages_export=True,
    ),
)
SOURCES = tuple(t.label for t in TABLES_WRITTEN)
MAPPING = "dict[str, Any]"


def read_table(label: str, reference: Path) -> DeclaredTable:
    """The table of the pinned source ``label``: every config class its root classes reach,
    and the subclasses that may stand in for one."""
    spec = next(t for t in TABLES_WRITTEN if t.label == label)
    files: dict[str, str] = {}
    for tree in spec.trees:
        files.update(tree_files(reference / tree.folder, tree.package))
    source = UpstreamSource(files, packages_export=spec.packages_export)
    classes = source.config_classes()
    # The runners read the config too (examples/*.py beside the package, where pinned).
    runners = [
        path.read_text(encoding="utf-8")
        for tree in spec.trees
        for path in sorted((reference / tree.label / "examples").glob("**/*.py"))
    ]
    got_only = keys_read_only_by_get([*files.values(), *runners])
    commits = dict.fromkeys(pins()[t.label] for t in spec.trees)
    table = DeclaredTable(label, " + ".join(commits), {})
    declared: dict[str, Declared] = {}
    todo = sorted(q for q in classes if q.endswith(spec.roots))
    while todo:
        qualified = todo.pop(0)
        if qualified in declared:
            continue
        found = classes[qualified]
        keys = {}
        for name, field in found.fields.items():
            if not field.init:
                continue  # field(init=False): no key sets it
            nested = _nested(field.annotation, field.module, source, classes)
            todo += [n for n in nested if n not in declared]
            text = type_text(
                field.annotation,
                field.module,
                source,
                lambda q: MAPPING if q in classes else None,
                constraints=True,
                bounds=from_keywords(dict(field.constraints)),
            )
            if (
                found.kind == "typeddict"
                and not field.required
                and name in got_only
                and "None" not in text.split(" | ")
            ):
                text += " | None"  # a null is the key left out to every read of it
            keys[name] = Key(text, field.required, nested, field.line)
        # A base no pinned file defines may declare keys this table cannot know: the class
        # then takes keys it does not list (never refused for what upstream may accept).
        open_ended = found.allows_extra or bool(found.open_bases)
        declared[qualified] = Declared(
            qualified, keys, open_ended, label, _path(reference, spec, qualified), table
        )
    object.__setattr__(table, "classes", dict(sorted(declared.items())))
    return table


def keys_read_only_by_get(texts: Iterable[str]) -> set[str]:
    """The string constants whose every read in ``texts`` (Python sources) is the key of a
    ``.get(key)`` or ``.get(key, None)``: a null and an absent key read alike there. A constant
    used any other way (a subscript read, ``in``, another default, a list of names) is left
    out; one that only names a key written (``kwargs[key] = ...``) reads nothing."""
    got: set[str] = set()
    other: set[str] = set()
    for text in texts:
        tree = ast.parse(text)
        as_get: set[int] = set()
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "get"
                and not node.keywords
                and 1 <= len(node.args) <= 2
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
                and (
                    len(node.args) == 1
                    or (isinstance(node.args[1], ast.Constant) and node.args[1].value is None)
                )
            ):
                as_get.add(id(node.args[0]))
                got.add(node.args[0].value)
            elif isinstance(node, ast.Subscript) and not isinstance(node.ctx, ast.Load):
                as_get.add(id(node.slice))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and id(node) not in as_get
            ):
                other.add(node.value)
    return got - other


def table_text(label: str, reference: Path) -> str:
    return json.dumps(read_table(label, reference).as_json(), indent=1) + "\n"


def _path(reference: Path, spec: Table, qualified: str) -> str:
    """The file that defines ``qualified``, in its repository (naming its pinned source where
    that is not the table's)."""
    parts = qualified.split(":")[0].split(".")
    for tree in spec.trees:
        folder = reference / tree.folder
        module = folder.joinpath(*parts[1:])
        for found in (module / "__init__.py", module.with_suffix(".py")):
            if found.is_file():
                path = found.relative_to(reference / tree.label).as_posix()
                return path if tree.label == spec.label else f"{path} @ {tree.label}"
    return ""


def _nested(
    annotation: str, module: str, source: UpstreamSource, classes: dict[str, ConfigClass]
) -> tuple[str, ...]:
    """The config classes (and their subclasses) a mapping under the key may be."""
    try:
        node = ast.parse(annotation, mode="eval").body
    except SyntaxError:
        return ()
    found: list[str] = []
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name | ast.Attribute):
            resolved = source.resolve(module, ast.unparse(sub))
            if resolved in classes:
                found += [c for c in source.subclasses(resolved) if c in classes]
    return tuple(dict.fromkeys(found))


def generated(label: str) -> Path:
    return TABLES / f"{label.replace('/', '@')}.json"


def main() -> int:
    reference = reference_dir()
    folders = [tree.folder for table in TABLES_WRITTEN for tree in table.trees]
    missing = [folder for folder in folders if not (reference / folder).is_dir()]
    if missing:
        print(
            f"error: {reference / missing[0]} is missing: run tools/fetch-reference",
            file=sys.stderr,
        )
        return 2
    outputs = {
        generated(label).relative_to(CHECKOUT).as_posix(): table_text(label, reference)
        for label in SOURCES
    }
    return write_or_check(outputs, "tools/generate_declared.py", __doc__)


if __name__ == "__main__":
    sys.exit(main())
