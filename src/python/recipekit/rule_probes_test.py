"""A rule that asks for a key only some framework versions have must not probe for it with
``getattr(section, "key", None)``: a misspelt name would read None on every version and the
rule would never fire, silently.

NeMo-RL's rules and checks ask :func:`recipekit.nemo_rl.keys.value_of`, which refuses a key no
pinned NeMo-RL version declares: here every name they pass it is such a key, and no rule or check
module probes with getattr but those listed in ``PROBING``, where every name probed is a field of
some version's section (every schema module of every framework package, imported here)."""

from __future__ import annotations

import ast
import importlib
import pkgutil
from collections.abc import Iterator
from pathlib import Path

import attrs

import recipekit
from recipekit.errors import did_you_mean
from recipekit.nemo_rl import keys
from recipekit.upstream.declared import table

PACKAGE = Path(recipekit.__file__).parent
# Where the rules and checks live (a folder of topic modules, or one module).
RULE_FOLDERS = ("rules", "checks")
# The rule modules that still probe with getattr: NeMo Evaluator's checks read through levels
# that may be UNSET, and recipekit.nemo_rl.keys knows NeMo-RL's versions only.
PROBING = (PACKAGE / "nemo_evaluator" / "checks.py",)


# NeMo-RL's modules that read a config beside its rules and checks (the launch, layout and
# summary read keys too); yaml_loader reads OmegaConf's exceptions, no config, and keys is
# the asking itself.
NEMO_RL_READERS = tuple(
    path
    for path in (PACKAGE / "nemo_rl").glob("*.py")
    if not path.name.endswith("_test.py")
    and not path.stem.startswith("schema")
    and path.name not in ("conftest.py", "yaml_loader.py", "keys.py")
)


def _rule_modules() -> list[Path]:
    return sorted(
        {
            path
            for path in PACKAGE.rglob("*.py")
            if not path.name.endswith("_test.py")
            and path.name != "conftest.py"
            and "generated" not in path.parts
            and (set(path.parts) & set(RULE_FOLDERS) or path.stem in RULE_FOLDERS)
        }
        | set(NEMO_RL_READERS)
    )


def _calls(path: Path, function: str, arity: int) -> Iterator[tuple[ast.Call, str]]:
    """Every ``function(...)`` call with at least ``arity`` arguments, and where it is (a
    class's own attribute, ``getattr(type(config), ...)``, is no config key)."""
    for node in ast.walk(ast.parse(path.read_text())):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == function
            and len(node.args) >= arity
            and not (
                isinstance(node.args[0], ast.Call)
                and isinstance(node.args[0].func, ast.Name)
                and node.args[0].func.id == "type"
            )
        ):
            yield node, f"{path.relative_to(PACKAGE.parent)}:{node.lineno}"


def _named(calls: Iterator[tuple[ast.Call, str]]) -> dict[str, list[str]]:
    """name -> where: the calls whose second argument is a literal name."""
    found: dict[str, list[str]] = {}
    for node, where in calls:
        name = node.args[1]
        if isinstance(name, ast.Constant) and isinstance(name.value, str):
            found.setdefault(name.value, []).append(where)
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


def test_rules_ask_the_version_instead_of_probing() -> None:
    probes = [
        where
        for path in _rule_modules()
        if path not in PROBING
        for probe, arity in (("getattr", 3), ("hasattr", 2))
        for node, where in _calls(path, probe, arity)
    ]
    assert not probes, (
        "a getattr with a default, or a hasattr, probes a key some version may lack; ask "
        "the version (recipekit.nemo_rl.keys.value_of(section, key[, absent]) or "
        "has_key(section, key) for NeMo-RL's):\n" + "\n".join(probes)
    )


def test_every_key_a_rule_asks_for_is_declared_by_a_pinned_version() -> None:
    asked = _named(
        call
        for path in _rule_modules()
        for asking in ("value_of", "has_key")
        for call in _calls(path, asking, 2)
    )
    assert len(asked) > 40, "the value_of calls were not found"
    declared = keys.declared_keys()
    unknown = {name: where for name, where in asked.items() if name not in declared}
    assert not unknown, "\n".join(
        f"{where[0]}: asks for {name!r}, which no pinned NeMo-RL version declares "
        f"({did_you_mean(name, sorted(declared)) or 'no near name'})"
        for name, where in sorted(unknown.items())
    )


def test_undeclared_keys_are_section_fields_no_pinned_version_declares() -> None:
    """keys.UNDECLARED lists keys recipekit's sections state beyond the pinned tables: each is a
    field of some section, and is dropped from the list once a pinned version declares it."""
    fields = _section_fields()
    declared = {
        keys.field_name(key)
        for label in keys.PINNED
        for cls in table(label).classes.values()
        for key in cls.keys
    }
    assert keys.UNDECLARED <= fields, sorted(keys.UNDECLARED - fields)
    assert not keys.UNDECLARED & declared, sorted(keys.UNDECLARED & declared)


def test_every_probed_name_is_a_field_of_some_version() -> None:
    assert all(path.is_file() for path in PROBING), PROBING
    probes = _named(call for path in PROBING for call in _calls(path, "getattr", 2))
    fields = _section_fields()
    # Attributes of the check contexts and layouts rules also probe (not config keys).
    from recipekit.checking import CheckContext

    context = {name for cls in CheckContext.__subclasses__() for name in dir(cls)} | set(
        dir(CheckContext)
    )
    unknown = {
        name: where for name, where in probes.items() if name not in fields and name not in context
    }
    assert not unknown, "\n".join(
        f"{where[0]}: probes {name!r}, no field of any version's section "
        f"({did_you_mean(name, sorted(fields)) or 'no near name'})"
        for name, where in sorted(unknown.items())
    )
