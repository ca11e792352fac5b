"""Config classes read from upstream Python sources with ``ast``.

A config class is a ``TypedDict``, a pydantic ``BaseModel``, or a dataclass (plain or vLLM's
pydantic ``@config`` dataclasses). Its fields are its own and its config bases', in base order,
each with its annotation, whether it must be given, its default and the bounds a pydantic
``Field(gt=..., ge=..., lt=..., le=...)`` declares. A base or an annotation's name is resolved
through the module's imports to the class it names where that class is among the sources read;
a module-level alias (``ModelDType = Literal[...]``) is resolved the same way.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

import attrs

from recipekit.upstream.bounds import NAMES

TYPED_DICT_BASES = frozenset({"TypedDict", "typing.TypedDict", "typing_extensions.TypedDict"})
MODEL_BASES = frozenset({"BaseModel", "pydantic.BaseModel"})
# Decorators that make a class a dataclass: the standard one, pydantic's, and vLLM's @config
# (vllm/config/utils.py: a pydantic dataclass).
DATACLASS_DECORATORS = frozenset(
    {"dataclass", "dataclasses.dataclass", "pydantic.dataclasses.dataclass", "config"}
)
BOUNDS = ("gt", "ge", "lt", "le")
# Bases that declare no config fields.
_MARKER_BASES = frozenset(
    {
        *TYPED_DICT_BASES,
        *MODEL_BASES,
        "object",
        "ABC",
        "abc.ABC",
        "Generic",
        "typing.Generic",
        "Protocol",
        "typing.Protocol",
        "Enum",
        "enum.Enum",
        "str",
    }
)


@attrs.frozen
class UpstreamField:
    """One field of a config class as its source declares it."""

    name: str
    annotation: str
    # Must be given: a TypedDict key that is not NotRequired (in a total class), a dataclass
    # or pydantic field without a default.
    required: bool
    # The default's source text ("" for none).
    default: str = ""
    # What its ``Field(...)`` default constrains, by pydantic's keywords (gt, ge, lt, le,
    # multiple_of, min_length, max_length).
    constraints: Mapping[str, float] = attrs.field(factory=dict)
    # The module whose names the annotation uses.
    module: str = ""
    line: int = 0
    # A dataclass field declared ``field(init=False)``: no constructor argument.
    init: bool = True

    @property
    def bounds(self) -> dict[str, float]:
        """The numeric bounds among its constraints (gt, ge, lt, le), as floats."""
        return {k: float(v) for k, v in self.constraints.items() if k in BOUNDS}


@attrs.frozen
class ConfigClass:
    qualified: str  # "module:Name"
    kind: str  # "typeddict", "model" or "dataclass"
    fields: Mapping[str, UpstreamField]
    # A pydantic model with extra="allow" takes keys it does not declare.
    allows_extra: bool = False
    # Bases (its own or an ancestor's) that name no class of the sources read: fields they may
    # declare are unknown here (typing's markers and ``object`` are not counted).
    open_bases: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return self.qualified.split(":")[1]


class UpstreamSource:
    """The config classes of a set of Python files, by ``module:Name``.

    ``files`` maps a module's dotted name to its source text.
    """

    def __init__(self, files: Mapping[str, str], *, packages_export: bool = False) -> None:
        """``packages_export``: a name imported from a package whose ``__init__`` is not among
        the files (``from megatron.training.config import TrainingConfig``, with only
        ``megatron/training/config/training_config.py`` pinned) is the one class of that name
        its read submodules define, as a package's ``__init__`` re-exports them."""
        self.packages_export = packages_export
        self.trees: dict[str, ast.Module] = {m: ast.parse(text) for m, text in files.items()}
        self.nodes: dict[str, ast.ClassDef] = {}
        self.scope: dict[str, dict[str, str]] = {}
        self.aliases: dict[str, ast.expr] = {}
        for module, tree in self.trees.items():
            names: dict[str, str] = {}
            for node in tree.body:
                if isinstance(node, ast.ImportFrom) and node.module:
                    base = _absolute(module, node.module, node.level)
                    for alias in node.names:
                        names[alias.asname or alias.name] = f"{base}:{alias.name}"
                elif isinstance(node, ast.ClassDef):
                    names[node.name] = f"{module}:{node.name}"
                    self.nodes[f"{module}:{node.name}"] = node
                elif (
                    isinstance(node, ast.Assign)
                    and len(node.targets) == 1
                    and isinstance(node.targets[0], ast.Name)
                ):
                    self.aliases[f"{module}:{node.targets[0].id}"] = node.value
                    names[node.targets[0].id] = f"{module}:{node.targets[0].id}"
                elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                    if node.value is not None and "TypeAlias" in ast.unparse(node.annotation):
                        self.aliases[f"{module}:{node.target.id}"] = node.value
                        names[node.target.id] = f"{module}:{node.target.id}"
            self.scope[module] = names
        self._classes: dict[str, ConfigClass | None] = {}

    @classmethod
    def from_tree(cls, root: Path, package: str | None = None) -> UpstreamSource:
        """Every ``*.py`` under ``root`` (a package folder), named from ``package`` (default:
        the folder's own name)."""
        return cls(tree_files(root, package))

    @classmethod
    def from_files(cls, root: Path, paths: Iterable[str]) -> UpstreamSource:
        """The files ``paths`` (relative to ``root``, as ``pkg/mod.py``), named by their path."""
        files = {}
        for path in paths:
            module = ".".join(Path(path).with_suffix("").parts).removesuffix(".__init__")
            files[module] = (root / path).read_text()
        return cls(files)

    # --- names -----------------------------------------------------------------------------

    def resolve(self, module: str, name: str) -> str | None:
        """The ``module:Name`` a name used in ``module`` stands for, following re-exports, when
        it is a class or an alias of the sources read; None otherwise."""
        head, _, rest = name.partition(".")
        found = self.scope.get(module, {}).get(head)
        if found is None:
            return None
        if rest:  # module.Name, a module imported as a name
            target_module = found.replace(":", ".")
            return self.resolve(target_module, rest) if target_module in self.scope else None
        if found in self.nodes or found in self.aliases:
            return found
        target_module, _, target = found.partition(":")
        if target_module in self.scope and target_module != module:
            return self.resolve(target_module, target)
        if self.packages_export and target_module not in self.scope:
            inside = [
                q
                for q in self.nodes
                if q.startswith(f"{target_module}.") and q.split(":")[1] == target
            ]
            return inside[0] if len(inside) == 1 else None
        return None

    def imported(self, module: str, name: str) -> str | None:
        """``package:Name`` a plain name of ``module`` was imported as (``from pydantic import
        PositiveInt``: ``pydantic:PositiveInt``), whether or not that package was read."""
        return self.scope.get(module, {}).get(name)

    def alias(self, qualified: str) -> ast.expr | None:
        return self.aliases.get(qualified)

    # --- classes ---------------------------------------------------------------------------

    def config_class(self, qualified: str) -> ConfigClass | None:
        """The config class ``module:Name``; None when it is not one (or not read)."""
        if qualified not in self._classes:
            self._classes[qualified] = None  # a class cycle reads as no class
            self._classes[qualified] = self._read(qualified)
        return self._classes[qualified]

    def config_classes(self) -> dict[str, ConfigClass]:
        found = {q: self.config_class(q) for q in self.nodes}
        return {q: c for q, c in found.items() if c is not None}

    def bases(self, qualified: str) -> list[str]:
        module = qualified.split(":")[0]
        node = self.nodes[qualified]
        return [r for b in node.bases if (r := self.resolve(module, ast.unparse(b))) is not None]

    def subclasses(self, qualified: str) -> list[str]:
        """``qualified`` and every config class derived from it, nearest first."""
        out, todo = [qualified], [qualified]
        while todo:
            parent = todo.pop(0)
            for name in self.nodes:
                if name not in out and parent in self.bases(name):
                    out.append(name)
                    todo.append(name)
        return out

    def _kind(self, qualified: str) -> str:
        node = self.nodes[qualified]
        texts = {ast.unparse(b) for b in node.bases}
        if texts & TYPED_DICT_BASES:
            return "typeddict"
        if texts & MODEL_BASES:
            return "model"
        decorators = {ast.unparse(d).split("(")[0] for d in node.decorator_list}
        if decorators & DATACLASS_DECORATORS:
            return "dataclass"
        for base in self.bases(qualified):
            found = self.config_class(base)
            if found is not None:
                return found.kind
        return ""

    def _read(self, qualified: str) -> ConfigClass | None:
        if qualified not in self.nodes:
            return None
        kind = self._kind(qualified)
        if not kind:
            return None
        node = self.nodes[qualified]
        module = qualified.split(":")[0]
        fields: dict[str, UpstreamField] = {}
        allows_extra = _extra_allowed(node)
        open_bases: list[str] = [
            text
            for b in node.bases
            if (text := ast.unparse(b)).split("[")[0] not in _MARKER_BASES
            and self.resolve(module, text.split("[")[0]) is None
        ]
        for base in self.bases(qualified):
            inherited = self.config_class(base)
            if inherited is not None:
                fields.update(inherited.fields)
                allows_extra = allows_extra or inherited.allows_extra
                open_bases += inherited.open_bases
        total = not any(
            k.arg == "total" and isinstance(k.value, ast.Constant) and k.value.value is False
            for k in node.keywords
        )
        for stmt in node.body:
            if not isinstance(stmt, ast.AnnAssign) or not isinstance(stmt.target, ast.Name):
                continue
            text = ast.unparse(stmt.annotation)
            if text.startswith(("ClassVar", "typing.ClassVar", "InitVar")):
                continue
            annotation = stmt.annotation
            not_required = text.startswith(("NotRequired[", "typing.NotRequired["))
            if not_required or text.startswith(("Required[", "typing.Required[")):
                annotation = annotation.slice  # type: ignore[attr-defined]
            default, has_default = _default(stmt.value)
            if kind == "typeddict":
                required = total and not not_required
            else:
                required = not has_default
            fields[stmt.target.id] = UpstreamField(
                stmt.target.id,
                ast.unparse(annotation),
                required,
                default,
                _field_constraints(stmt.value),
                module,
                stmt.lineno,
                _init(stmt.value),
            )
        return ConfigClass(qualified, kind, fields, allows_extra, tuple(dict.fromkeys(open_bases)))

    def find(self, name: str) -> str:
        """The one ``module:Name`` of a class called ``name`` (a KeyError when none is, a
        ValueError when several are)."""
        found = [q for q in self.nodes if q.split(":")[1] == name]
        if not found:
            raise KeyError(name)
        if len(found) > 1:
            raise ValueError(f"{name} is defined in {', '.join(found)}")
        return found[0]


def _absolute(module: str, target: str, level: int) -> str:
    if not level:
        return target
    parts = module.split(".")[:-level]
    return ".".join([*parts, target]) if target else ".".join(parts)


def _extra_allowed(node: ast.ClassDef) -> bool:
    text = ast.unparse(node)
    return any(
        k.arg == "extra" and isinstance(k.value, ast.Constant) and k.value.value == "allow"
        for k in node.keywords
    ) or ("extra=" in text and "'allow'" in text.split("extra=", 1)[1][:12])


def _init(value: ast.expr | None) -> bool:
    """False for ``field(init=False)``."""
    return not (
        isinstance(value, ast.Call)
        and ast.unparse(value.func).split(".")[-1] == "field"
        and any(
            k.arg == "init" and isinstance(k.value, ast.Constant) and k.value.value is False
            for k in value.keywords
        )
    )


def _field_constraints(value: ast.expr | None) -> dict[str, float]:
    """The literal constraint keywords of a ``Field(...)`` default ({} for any other)."""
    if not (isinstance(value, ast.Call) and ast.unparse(value.func).split(".")[-1] == "Field"):
        return {}
    return {
        k.arg: k.value.value
        for k in value.keywords
        if k.arg in NAMES
        and isinstance(k.value, ast.Constant)
        and isinstance(k.value.value, int | float)
        and not isinstance(k.value.value, bool)
    }


def _default(value: ast.expr | None) -> tuple[str, bool]:
    """A field's default (source text) and whether it has one."""
    if value is None:
        return "", False
    if isinstance(value, ast.Call) and ast.unparse(value.func).split(".")[-1] in (
        "Field",
        "field",
    ):
        given = {k.arg: k.value for k in value.keywords}
        if "default" in given:
            return ast.unparse(given["default"]), True
        if "default_factory" in given:
            return ast.unparse(given["default_factory"]) + "()", True
        if value.args and ast.unparse(value.args[0]) != "...":
            return ast.unparse(value.args[0]), True
        return "", False
    return ast.unparse(value), True


def tree_files(root: Path, package: str | None = None) -> dict[str, str]:
    """Module name -> source of every ``*.py`` under the package folder ``root`` (named from
    ``package``, default the folder's own name)."""
    package = package or root.name
    files = {}
    for path in sorted(root.rglob("*.py")):
        parts = (package, *path.relative_to(root).with_suffix("").parts)
        files[".".join(parts).removesuffix(".__init__")] = path.read_text()
    return files
