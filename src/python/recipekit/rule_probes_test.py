"""A rule that asks for a key only some framework versions have probes for it
(``getattr(section, "key", None)``): a misspelt name would read None on every version and the
rule would never fire, silently. Every name a rule or check module probes is a field of some
version's section (every schema module of every framework package, imported here)."""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path

import attrs

import recipekit
from recipekit.errors import did_you_mean

PACKAGE = Path(recipekit.__file__).parent
# Where the rules and checks live (a folder of topic modules, or one module).
RULE_FOLDERS = ("rules", "checks")


def _rule_modules() -> list[Path]:
    return sorted(
        path
        for path in PACKAGE.rglob("*.py")
        if not path.name.endswith("_test.py")
        and path.name != "conftest.py"
        and "generated" not in path.parts
        and (set(path.parts) & set(RULE_FOLDERS) or path.stem in RULE_FOLDERS)
    )


def _probes() -> dict[str, list[str]]:
    """name -> where: every ``getattr(x, "name", ...)`` with a literal name."""
    found: dict[str, list[str]] = {}
    for path in _rule_modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "getattr"
                and len(node.args) >= 2
                and isinstance(node.args[1], ast.Constant)
                and isinstance(node.args[1].value, str)
            ):
                where = f"{path.relative_to(PACKAGE.parent)}:{node.lineno}"
                found.setdefault(node.args[1].value, []).append(where)
    return found


def _section_fields() -> set[str]:
    """Every field (and framework key) of every section class of every schema module."""
    names: set[str] = set()
    for info in pkgutil.walk_packages(recipekit.__path__, "recipekit."):
        if not info.name.rsplit(".", 1)[-1].startswith("schema") or info.name.endswith("_test"):
            continue
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if isinstance(value, type) and attrs.has(value):
                for field in attrs.fields(value):
                    names.update({field.name, field.alias or field.name})
    return names


def test_every_probed_name_is_a_field_of_some_version() -> None:
    probes = _probes()
    assert len(probes) > 20, "the probes were not found"
    fields = _section_fields()
    # Attributes of the check contexts and layouts rules also probe (not config keys).
    from recipekit.checking import CheckContext

    context = {name for cls in CheckContext.__subclasses__() for name in dir(cls)} | set(
        dir(CheckContext)
    )
    unknown = {
        name: where
        for name, where in probes.items()
        if name not in fields and name not in context
    }
    assert not unknown, "\n".join(
        f"{where[0]}: probes {name!r}, no field of any version's section "
        f"({did_you_mean(name, sorted(fields)) or 'no near name'})"
        for name, where in sorted(unknown.items())
    )
