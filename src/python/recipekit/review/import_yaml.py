"""``recipekit import-yaml``: a NeMo-RL GRPO YAML as a typed recipe module.

The YAML's schema is NeMo-RL ``super-v3`` (Super V3) or ``main`` (``super-v3.5-posttraining``:
Gym, MOPD, VLM); ``auto`` takes the one that knows more of its keys.

The YAML is read as NeMo-RL reads it (``yaml_loader``: ``defaults:``, ``_override_``, the
resolvers). Its resolved values become typed sections, written out as Python:

- a key the YAML interpolated, and whose value our derivation gives, is written ``DERIVED``
  (it follows its source, as it did in the YAML); another interpolated key keeps its value, with
  the YAML's expression as a comment;
- a key the typed schema does not know goes into ``UNTYPED_KEYS``, an explicit escape hatch the
  compiled config gets back verbatim, and is reported as a warning: never dropped, never silent.

``compile_object`` is what ``recipekit compile`` prints: the framework config, derived and
rendered (the layout checks are ``plan``'s job).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from recipekit.convert import from_dict
from recipekit.errors import Issue, RecipeError
from recipekit.hardware import B200_NODE, GB200_NODE, H100_NODE, Hardware
from recipekit.keypaths import replace_at
from recipekit.markers import DERIVED, UNSET
from recipekit.nemo_rl.grpo import NEMO_RL_GRPO, NEMO_RL_SUPER35, NemoRLGrpo
from recipekit.sections import key_of
from recipekit.stage import Stage

NODES = {"GB200": GB200_NODE, "B200": B200_NODE, "H100": H100_NODE}
# Schema name -> the framework that reads it, and how a generated module names that framework.
SCHEMAS: dict[str, tuple[NemoRLGrpo, str]] = {
    "super-v3": (NEMO_RL_GRPO, "NEMO_RL_GRPO"),
    "main": (NEMO_RL_SUPER35, "NEMO_RL_SUPER35"),
}
DEFAULT_NODE = {4: "GB200", 8: "B200"}


@attrs.frozen(kw_only=True)
class ImportedRecipe:
    """A stage plus the keys its typed schema does not know, by dotted path, kept verbatim."""

    stage: Stage
    untyped_keys: Mapping[str, Any] = attrs.field(factory=dict)


@attrs.frozen
class Imported:
    source: str  # the Python module
    warnings: tuple[Issue, ...]


def import_yaml(
    path: Path, *, node: str | None = None, name: str = "", schema: str = "auto"
) -> Imported:
    from omegaconf import OmegaConf

    from recipekit.nemo_rl.yaml_loader import _register_resolvers, expand, load_merged

    _register_resolvers()
    resolved = expand(path)
    merged = load_merged(path)
    interpolated = {
        key: expr for key, expr in _interpolations(OmegaConf.to_container(merged, resolve=False))
    }
    if "grpo" not in resolved:
        raise RecipeError([Issue(str(path), "not a GRPO config (no grpo section)")])
    schema = _choose_schema(resolved) if schema == "auto" else schema
    framework, framework_name = SCHEMAS[schema]
    config_type = framework.config_type
    data, untyped = _split_unknown(resolved, config_type)
    config: Any = from_dict(data, config_type)
    cluster = resolved.get("cluster", {})
    gpus = cluster.get("gpus_per_node")
    node_name = node or DEFAULT_NODE.get(gpus if isinstance(gpus, int) else 0, "")
    if node_name not in NODES or NODES[node_name].gpus_per_node != gpus:
        raise RecipeError(
            [
                Issue(
                    "cluster.gpus_per_node",
                    f"no known node type with {gpus} GPUs (choose with --node GB200|B200|H100)",
                    value=gpus,
                )
            ]
        )
    hardware = Hardware(NODES[node_name], num_nodes=int(cluster.get("num_nodes", 1)))
    config, derived = _as_derived(config, hardware, resolved, interpolated, framework)
    warnings = tuple(
        Issue(key, "unknown to the typed schema: kept verbatim in UNTYPED_KEYS", value=value)
        for key, value in untyped.items()
    )
    comments = {
        k: f"the YAML computes it: {v}" for k, v in interpolated.items() if k not in derived
    }
    stage_name = name or path.stem
    writer = _Writer(comments=comments, resolved=resolved)
    source = _module(path, stage_name, node_name, hardware, config, untyped, writer, framework_name)
    return Imported(source, warnings)


def _choose_schema(resolved: dict[str, Any]) -> str:
    """The schema that leaves the fewest keys untyped (super-v3 on a tie)."""
    unknown = {}
    for schema, (framework, _) in SCHEMAS.items():
        try:
            _, untyped = _split_unknown(copy.deepcopy(resolved), framework.config_type)
        except RecipeError as exc:
            unknown[schema] = 1000 + len(exc.issues)
        else:
            unknown[schema] = len(untyped)
    return min(SCHEMAS, key=lambda schema: unknown[schema])


def _interpolations(data: Any, prefix: str = "") -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    if isinstance(data, dict):
        for key, value in data.items():
            out += _interpolations(value, f"{prefix}.{key}" if prefix else str(key))
    elif isinstance(data, str) and "${" in data:
        out.append((prefix, data))
    return out


def _split_unknown(
    data: dict[str, Any], config_type: type
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``data`` without the keys the schema rejects as unknown, and those keys by path."""
    untyped: dict[str, Any] = {}
    for _ in range(50):
        try:
            from_dict(data, config_type)
            return data, untyped
        except RecipeError as exc:
            unknown = [i.path for i in exc.issues if i.message == "unknown key"]
            if not unknown:
                raise
            for key in unknown:
                untyped[key] = _pop(data, key)
    raise RecipeError([Issue("", "too many unknown keys")])


def _pop(data: dict[str, Any], key: str) -> Any:
    *head, last = key.split(".")
    node = data
    for part in head:
        node = node[part]
    return node.pop(last)


def _as_derived(
    config: Any,
    hardware: Hardware,
    resolved: dict[str, Any],
    interpolated: dict[str, str],
    framework: NemoRLGrpo,
) -> tuple[Any, set[str]]:
    """Interpolated keys our derivations reproduce become DERIVED again."""
    from recipekit.derivation import lookup

    done: set[str] = set()
    for rule in framework.rules:
        if rule.target not in interpolated:
            continue
        inputs = [lookup(config, hardware, s) for s in rule.sources]
        value = _resolved_at(resolved, rule.target)
        try:
            same = rule.compute(*inputs) == value
        except TypeError:
            same = False
        if not same:
            continue
        try:
            config = replace_at(config, rule.target, DERIVED)
        except RecipeError:
            continue  # the schema does not declare this key derivable: keep the literal
        done.add(rule.target)
    return config, done


def _resolved_at(data: Any, key: str) -> Any:
    for part in key.split("."):
        if not isinstance(data, dict) or part not in data:
            return UNSET
        data = data[part]
    return data


# --- writing the module ---------------------------------------------------------------------


def _module(
    path: Path,
    stage_name: str,
    node_name: str,
    hardware: Hardware,
    config: Any,
    untyped: dict[str, Any],
    writer: _Writer,
    framework_name: str,
) -> str:
    sections = []
    for field in attrs.fields(type(config)):
        value = getattr(config, field.name)
        if value is UNSET:
            continue
        key = key_of(type(config), field.name)
        sections.append((field.name, writer.expr(value, key, 0)))
    uses_derived = "DERIVED" in "".join(text for _, text in sections)
    lines = [
        f'"""{stage_name}: imported from {path.name} by `recipekit import-yaml`.',
        "",
        "Read as NeMo-RL reads it (defaults, _override_, resolvers). Keys the YAML interpolated",
        "and recipekit derives the same way are DERIVED; the plan computes them.",
        '"""',
        "",
        f"from recipekit.hardware import {node_name}_NODE, Hardware",
    ]
    if uses_derived:
        lines.append("from recipekit.markers import DERIVED")
    lines.append("from recipekit.model_card import ModelCard")
    lines.append(f"from recipekit.nemo_rl.grpo import {framework_name}")
    config_class = type(config)
    classes = writer.classes | {(config_class.__module__, config_class.__name__)}
    for module in sorted({m for m, _ in classes}):
        lines.append(
            f"from {module} import (\n"
            + "".join(f"    {c},\n" for m, c in sorted(classes) if m == module)
            + ")"
        )
    if untyped:
        lines.append("from recipekit.review.import_yaml import ImportedRecipe")
    lines += ["from recipekit.stage import Stage", ""]
    for name, text in sections:
        lines += [f"{name} = {text}", ""]
    model_name = getattr(getattr(config, "policy", None), "model_name", "model")
    lines += [
        "# Fill in what the plan checks the layout against (parameters, layers, experts).",
        f"MODEL = ModelCard(name={str(model_name)!r}, total_params_b=0, active_params_b=0, "
        "num_layers=0)",
        "",
        "stage = Stage(",
        f"    name={stage_name!r},",
        f"    description={('Imported from ' + path.name)!r},",
        f"    hardware=Hardware({node_name}_NODE, num_nodes={hardware.num_nodes}),",
        "    model=MODEL,",
        f"    framework={framework_name},",
        f"    config={config_class.__name__}(",
        *(f"        {name}={name}," for name, _ in sections),
        "    ),",
        ")",
        "",
    ]
    if untyped:
        lines += [
            "# Keys the typed schema does not know, kept verbatim; compile adds them back.",
            f"UNTYPED_KEYS = {_literal(untyped, 0)}",
            "",
            "recipe = ImportedRecipe(stage=stage, untyped_keys=UNTYPED_KEYS)",
        ]
    else:
        lines.append("recipe = stage")
    return "\n".join(lines) + "\n"


@attrs.define
class _Writer:
    """Python text for typed values, with the YAML's comments and its own leaf values."""

    comments: dict[str, str]
    resolved: dict[str, Any]
    classes: set[tuple[str, str]] = attrs.field(factory=set)  # (module, class)

    def expr(self, value: Any, key: str, depth: int) -> str:
        # Leaves are written as the YAML had them: the typed structuring turns an int given
        # for a float key into a float (10 -> 10.0), which would change what NeMo-RL reads.
        original = _resolved_at(self.resolved, key)
        if original is not UNSET and not _holds_sections(value) and original == value:
            return _literal(tuple(original) if isinstance(value, tuple) else original, depth)
        pad = "    " * (depth + 1)
        end = "    " * depth
        if value is DERIVED:
            return "DERIVED"
        if attrs.has(type(value)):
            cls = type(value)
            self.classes.add((cls.__module__, cls.__name__))
            rows = []
            for field in attrs.fields(cls):
                item = getattr(value, field.name)
                if item is UNSET:
                    continue
                sub = f"{key}.{key_of(cls, field.name)}"
                if sub in self.comments:
                    rows.append(f"{pad}# {self.comments[sub]}")
                rows.append(f"{pad}{field.name}={self.expr(item, sub, depth + 1)},")
            if not rows:
                return f"{cls.__name__}()"
            return f"{cls.__name__}(\n" + "\n".join(rows) + f"\n{end})"
        if isinstance(value, dict) and _holds_sections(value):
            rows = [
                f"{pad}{k!r}: {self.expr(v, f'{key}.{k}', depth + 1)}," for k, v in value.items()
            ]
            return "{\n" + "\n".join(rows) + f"\n{end}}}"
        if isinstance(value, tuple) and _holds_sections(value):
            rows = [f"{pad}{self.expr(v, f'{key}.{i}', depth + 1)}," for i, v in enumerate(value)]
            return "(\n" + "\n".join(rows) + f"\n{end})"
        return _literal(value, depth)


def _holds_sections(value: Any) -> bool:
    if attrs.has(type(value)):
        return True
    if isinstance(value, dict):
        return any(attrs.has(type(v)) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(attrs.has(type(v)) for v in value)
    return False


def _literal(value: Any, depth: int) -> str:
    text = repr(value)
    if len(text) + 4 * depth < 90 or not isinstance(value, (dict, list, tuple)):
        return text
    pad = "    " * (depth + 1)
    if isinstance(value, dict):
        rows = [f"{pad}{k!r}: {_literal(v, depth + 1)}," for k, v in value.items()]
        return "{\n" + "\n".join(rows) + f"\n{'    ' * depth}}}"
    open_, close = ("(", ")") if isinstance(value, tuple) else ("[", "]")
    rows = [f"{pad}{_literal(v, depth + 1)}," for v in value]
    return open_ + "\n" + "\n".join(rows) + f"\n{'    ' * depth}{close}"


# --- compiling --------------------------------------------------------------------------------


def compile_object(obj: Any) -> tuple[dict[str, Any], list[Issue]]:
    """The framework config of a Stage (or an ImportedRecipe), and the warnings to print."""
    from recipekit.plan import _underived, resolve_run_inputs

    untyped: Mapping[str, Any] = {}
    if isinstance(obj, ImportedRecipe):
        obj, untyped = obj.stage, obj.untyped_keys
    if not isinstance(obj, Stage):
        raise RecipeError([Issue("recipe", f"is a {type(obj).__name__}, not a Stage")])
    config, _ = obj.framework.derive(resolve_run_inputs(obj)[0], obj.hardware)
    errors = _underived(config)
    if errors:
        raise RecipeError(errors, context=f"{obj.name}: cannot compile")
    rendered = obj.framework.render(config)
    warnings = []
    for key, value in untyped.items():
        _put(rendered, key, value)
        warnings.append(Issue(key, "not in the typed schema: passed through verbatim", value=value))
    return rendered, warnings


def _put(data: dict[str, Any], key: str, value: Any) -> None:
    *head, last = key.split(".")
    for part in head:
        data = data.setdefault(part, {})
    data[last] = value


def dumps(config: dict[str, Any]) -> str:
    return json.dumps(config, indent=2)
