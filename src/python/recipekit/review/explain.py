"""``recipekit explain TARGET KEY``: where the value of one key of a compiled plan comes from.

In order of precedence, as the plan applies them:

- an **override** (``--set KEY=...``);
- a **derivation** (the key was ``DERIVED`` and follows a source key: which, and the formula),
  with the source explained in turn;
- a **variant** (``with_values``: file and line of the key in that call, and which stage);
- the **base recipe** (file and line of the section constructor that set it, found by reading
  the recipe file);
- the **upstream** config the recipe starts from (the constructor in the typed base under
  ``recipes/upstream/`` that the recipe file imports, and the pinned file it was written from);
- else the section's default.

For a key that takes one of a set of values it also says which, and where the pinned source
defines them (``recipekit.upstream.allowed``), or the ``Literal`` upstream types it with.
"""

from __future__ import annotations

import ast
import functools
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from recipekit.errors import Issue, RecipeError, did_you_mean
from recipekit.keypaths import get_at, split
from recipekit.plan import make_plan
from recipekit.sections import field_of
from recipekit.stage import Stage


@attrs.frozen
class Origin:
    key: str
    value: Any
    kind: str  # "override", "derived", "variant", "base", "default", "hardware"
    where: str = ""  # file:line, or the --set text
    detail: str = ""
    sources: tuple[Origin, ...] = ()
    # The values the key takes, where its section lists them, and who says so.
    accepts: str = ""

    def as_json(self) -> dict[str, Any]:
        out = attrs.asdict(self, recurse=False)
        out["sources"] = [s.as_json() for s in self.sources]
        return out

    def text(self, indent: str = "") -> list[str]:
        head = f"{indent}{self.key} = {_show(self.value)}: {self.kind}"
        if self.where:
            head += f" at {self.where}"
        lines = [head]
        if self.detail:
            lines.append(f"{indent}  {self.detail}")
        if self.accepts:
            lines.append(f"{indent}  accepts {self.accepts}")
        for source in self.sources:
            lines += source.text(indent + "  ")
        return lines


def _show(value: Any) -> str:
    import json

    return json.dumps(value, default=str)


def explain(stage: Stage, key: str, overrides: Sequence[str] = ()) -> Origin:
    plan = make_plan(stage, overrides)
    value = _value(plan.framework_config, key)
    origin = _explain(stage, plan, key, value, overrides, depth=0)
    return attrs.evolve(origin, accepts=_accepts(plan.config, key))


def _accepts(config: Any, key: str) -> str:
    """The values the key's field takes: the pinned source's set (validators.allowed_at), or
    the ``Literal`` its upstream class types it with; "" for any other key."""
    from typing import Literal, get_args, get_origin

    from recipekit.convert import union_members
    from recipekit.markers import Marker
    from recipekit.sections import is_section
    from recipekit.validators import checks_of

    parent_path, _, last = key.rpartition(".")
    try:
        parent = get_at(config, parent_path) if parent_path else config
    except RecipeError:
        return ""
    name = field_of(type(parent), last) if is_section(parent) else None
    if name is None:
        return ""
    field = attrs.fields_dict(type(parent))[name]
    for check in checks_of(field.validator):
        found = getattr(check, "allowed", None)
        if found is not None:
            return ", ".join(map(repr, found.values)) + f" ({found.cited()})"
    literals = [
        value
        for member in union_members(field.type)
        if get_origin(member) is Literal
        for value in get_args(member)
        if not isinstance(value, Marker)
    ]
    return ", ".join(map(repr, literals))


def _value(config: dict[str, Any], key: str) -> Any:
    value: Any = config
    walked: list[str] = []
    for part in split(key):
        if isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        elif isinstance(value, dict) and part in value:
            value = value[part]
        else:
            options = list(value) if isinstance(value, dict) else []
            raise RecipeError(
                [
                    Issue(
                        ".".join([*walked, part]),
                        "not a key of the compiled config",
                        hint=did_you_mean(part, options),
                    )
                ]
            )
        walked.append(part)
    return value


def _explain(
    stage: Stage, plan: Any, key: str, value: Any, overrides: Sequence[str], depth: int
) -> Origin:
    for resolved_key, ref in plan.run_inputs.items():
        if key == resolved_key:
            return Origin(key, value, "lineage", detail=f"the path of input artifact {ref}")
    if key.startswith("hardware."):
        field = key.removeprefix("hardware.")
        return Origin(
            key,
            value,
            "hardware",
            *_stage_field_site(stage, "hardware"),
            detail=f"the stage's Hardware(...).{field}",
        )
    for text in reversed(overrides):
        path = text.partition("=")[0].strip()
        if key == path or key.startswith(path + "."):
            return Origin(key, value, "override", f"--set {text}")
    # A framework's derivation rules, when it declares them as nemo_rl's do.
    rules = {r.target: r for r in stage.framework.rules}
    rule = rules.get(key)
    if rule is not None and key in plan.derived and depth < 5:
        sources = tuple(
            _explain(stage, plan, src, _source_value(plan, src), overrides, depth + 1)
            for src in rule.sources
        )
        return Origin(key, value, "derived", detail=f"= {rule.formula}", sources=sources)
    for assignment in reversed(stage.assignments):
        if key == assignment.key or key.startswith(assignment.key + "."):
            line = _key_line(assignment.file, assignment.line, assignment.key)
            return Origin(
                key,
                value,
                "variant",
                f"{_rel(assignment.file)}:{line}",
                detail=f"with_values of {assignment.stage}"
                + (f" (sets {assignment.key})" if assignment.key != key else ""),
            )
    return _base(stage, key, value)


def _source_value(plan: Any, source: str) -> Any:
    if source.startswith("hardware."):
        return getattr(plan.stage.hardware, source.removeprefix("hardware."))
    try:
        return _value(plan.framework_config, source)
    except RecipeError:
        return None


def _stage_field_site(stage: Stage, field: str) -> tuple[str]:
    for assignment in reversed(stage.assignments):
        if assignment.key == field:
            line = _key_line(assignment.file, assignment.line, field)
            return (f"{_rel(assignment.file)}:{line}",)
    return (_rel_site(stage.origin),)


def _base(stage: Stage, key: str, value: Any) -> Origin:
    """The section constructor in the base recipe's file that names the key, if one does."""
    *head, last = split(key)
    try:
        parent = get_at(stage.config, ".".join(head)) if head else stage.config
    except RecipeError:
        parent = None
    file = stage.origin.rpartition(":")[0]
    if parent is None or not attrs.has(type(parent)):
        return Origin(key, value, "base", _rel_site(stage.origin), detail="in a mapping value")
    cls = type(parent)
    name = field_of(cls, last) or last
    lines = _constructor_lines(file, cls.__name__, name, value)
    if lines:
        where = ", ".join(f"{_rel(file)}:{n}" for n in lines)
        detail = f"{cls.__name__}({name}=...)"
        if len(lines) > 1:
            detail += f": one of these {len(lines)} calls (the recipe file alone cannot tell which)"
        return Origin(key, value, "base", where, detail=detail)
    for base_file, upstream in _typed_bases(file):
        lines = _constructor_lines(base_file, cls.__name__, name, value)
        if lines:
            return Origin(
                key,
                value,
                "upstream",
                ", ".join(f"{_rel(base_file)}:{n}" for n in lines),
                detail=f"{cls.__name__}({name}=...) in the typed base of {upstream}",
            )
    return Origin(
        key,
        value,
        "default",
        f"{_rel(cls.__module__.replace('.', '/'))}.py",
        detail=f"the default of {cls.__name__}.{name}; no constructor in {_rel(file)} sets it",
    )


def _typed_bases(file: str) -> list[tuple[str, str]]:
    """The typed bases (recipes/upstream/) the recipe file imports: (file, pinned upstream)."""
    tree = _tree(file)
    if tree is None:
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                module = sys.modules.get(f"{node.module}.{alias.name}")
                upstream = getattr(module, "UPSTREAM", None)
                if module is not None and module.__file__ and isinstance(upstream, str):
                    found.append((module.__file__, upstream))
    return found


@functools.cache
def _tree(file: str) -> ast.Module | None:
    try:
        return ast.parse(Path(file).read_text(), filename=file)
    except (OSError, SyntaxError):
        return None


def _constructor_lines(file: str, cls_name: str, keyword: str, value: Any) -> list[int]:
    """Lines of ``cls_name(..., keyword=...)`` in ``file``; those whose literal equals
    ``value`` when several calls name it (``Dataset(env_name=...)`` appears three times)."""
    tree = _tree(file)
    if tree is None:
        return []
    found: list[tuple[int, Any]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
        if called != cls_name:
            continue
        for kw in node.keywords:
            if kw.arg == keyword:
                found.append((kw.value.lineno, _literal(kw.value)))
    if len(found) > 1:
        matching = [line for line, literal in found if _equal(literal, value)]
        if matching:
            return matching
    return [line for line, _ in found]


_NOT_LITERAL = object()


def _literal(node: ast.expr) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError):
        return _NOT_LITERAL


def _equal(literal: Any, value: Any) -> bool:
    if isinstance(literal, tuple):
        literal = list(literal)
    return literal is not _NOT_LITERAL and literal == value


def _key_line(file: str, call_line: int, key: str) -> int:
    """The line of ``"key": ...`` inside the ``with_values`` call made at ``call_line``."""
    tree = _tree(file)
    if tree is None:
        return call_line
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or getattr(node.func, "attr", "") != "with_values":
            continue
        if not (node.lineno <= call_line <= (node.end_lineno or node.lineno)):
            continue
        for arg in node.args:
            # The changes written in the call, or in a module-level dict it names.
            changes = _module_dict(tree, arg.id) if isinstance(arg, ast.Name) else arg
            if isinstance(changes, ast.Dict):
                for k in changes.keys:
                    if isinstance(k, ast.Constant) and k.value == key:
                        return k.lineno
        for kw in node.keywords:
            if kw.arg == key:
                return kw.value.lineno
        return node.lineno
    return call_line


def _module_dict(tree: ast.Module, name: str) -> ast.expr | None:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            return node.value
    return None


def _rel(file: str) -> str:
    try:
        return str(Path(file).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return file


def _rel_site(site: str) -> str:
    file, _, line = site.rpartition(":")
    return f"{_rel(file)}:{line}"
