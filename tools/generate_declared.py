"""Write each pinned NeMo-RL version's config classes as data recipekit imports.

    python tools/generate_declared.py            # rewrite the generated modules
    python tools/generate_declared.py --check    # exit 1 when one differs from its source

For every NeMo-RL source the typed sections model (``SOURCES``), every ``TypedDict`` and
pydantic config class its entry points' ``MasterConfig`` reach under its ``nemo_rl/`` (as pinned
in 3rdparty/reference/manifest.toml and materialised by tools/fetch-reference) becomes one entry
of ``src/python/recipekit/upstream/declared/<label>.json``: its keys, each key's type as
recipekit checks it, whether upstream marks it required, and the config classes a mapping under
it is checked against. Run it after a pin moves; ``declared_test.py`` fails while a table
differs from what this writes.
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

from recipekit.upstream.annotations import type_text
from recipekit.upstream.classes import ConfigClass, UpstreamSource
from recipekit.upstream.declared import TABLES, Declared, DeclaredTable, Key
from tools.generated_modules import CHECKOUT, pins, reference_dir, write_or_check

# The NeMo-RL sources the typed sections model.
SOURCES = ("nemo-rl/super-v3", "nemo-rl/super-v3.5-posttraining")
# Where an entry point's config starts: every class a MasterConfig reaches is written.
ROOT_CLASS = "MasterConfig"
MAPPING = "dict[str, Any]"


def read_table(label: str, reference: Path) -> DeclaredTable:
    """The table of the pinned source ``label``: every config class its entry points'
    MasterConfigs reach, and the subclasses that may stand in for one."""
    root = reference / label / "nemo_rl"
    source = UpstreamSource.from_tree(root)
    classes = source.config_classes()
    table = DeclaredTable(label, pins()[label], {})
    declared: dict[str, Declared] = {}
    todo = sorted(q for q in classes if q.endswith(f":{ROOT_CLASS}"))
    while todo:
        qualified = todo.pop(0)
        if qualified in declared:
            continue
        found = classes[qualified]
        keys = {}
        for name, field in found.fields.items():
            nested = _nested(field.annotation, field.module, source, classes)
            todo += [n for n in nested if n not in declared]
            text = type_text(
                field.annotation, field.module, source, lambda q: MAPPING if q in classes else None
            )
            keys[name] = Key(text, field.required, nested, field.line)
        declared[qualified] = Declared(
            qualified, keys, found.allows_extra, label, _path(root, qualified), table
        )
    object.__setattr__(table, "classes", dict(sorted(declared.items())))
    return table


def table_text(label: str, reference: Path) -> str:
    return json.dumps(read_table(label, reference).as_json(), indent=1) + "\n"


def _path(root: Path, qualified: str) -> str:
    """The file (in its repository) that defines ``qualified``: a module or a package."""
    module = Path(*qualified.split(":")[0].split("."))
    package = module / "__init__.py"
    return package.as_posix() if (root.parent / package).is_file() else f"{module.as_posix()}.py"


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
    missing = [label for label in SOURCES if not (reference / label / "nemo_rl").is_dir()]
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
