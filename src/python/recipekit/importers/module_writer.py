"""The Python text ``import-yaml`` writes: a recipe module whose ``recipe`` compiles to the YAML.

Leaves are written as the YAML had them (an integer given for a float key stays an integer:
NeMo-RL reads it so), sections as their classes, ``${oc.env:VAR}`` as ``from_env("VAR")``, and
every value with the comments that explain it: the YAML's own, the expression the YAML computed
it with, and, in ``UNTYPED_KEYS``, why the typed schema does not hold it.
"""

from __future__ import annotations

import builtins
import keyword
import math
from pathlib import Path
from typing import Any

import attrs

from recipekit.hardware import Hardware
from recipekit.importers.data_paths import parts_of, resolved_at
from recipekit.importers.upstream import Upstream
from recipekit.markers import DERIVED, UNSET
from recipekit.nemo_rl.run_env import ENV_REFERENCE, split_env
from recipekit.sections import key_of

WIDTH = 96


@attrs.define
class ModuleWriter:
    resolved: dict[str, Any]  # the YAML's values, by key path
    comments: dict[str, tuple[str, ...]]  # the YAML's comments, by dotted key path
    computed: dict[str, str]  # keys the YAML computed with ${...} and that stay literal
    added: tuple[str, ...] = ()  # keys the schema requires that the YAML omits
    classes: set[tuple[str, str]] = attrs.field(factory=set)  # (module, class) used
    uses_env: bool = False
    uses_unset: bool = False

    def module(
        self,
        *,
        source: Path,
        header: tuple[str, ...],
        stage_name: str,
        node_name: str,
        hardware: Hardware,
        config: Any,
        untyped: dict[str, tuple[Any, str]],
        framework: Any,
        schema: str,
    ) -> str:
        sections = [
            (_variable(field.name), field.name, self._notes(key), self.expr(value, key, 0))
            for field, key, value in self._top_level(config)
        ]
        hatch = self._untyped(untyped)
        config_class = type(config)
        self.classes.add((config_class.__module__, config_class.__name__))
        framework_module, framework_name = _importable(framework)
        lines = [
            f'"""{stage_name}: imported from {source.name} by `recipekit import-yaml`.',
            "",
            f"NeMo-RL {schema} schema; the framework object names the version and entry point",
            f"({framework.version}, {framework.entry_point}). Read as NeMo-RL reads the YAML",
            "(defaults, _override_, resolvers); keys the YAML interpolated and recipekit derives",
            "the same way are DERIVED, and the plan computes them.",
            '"""',
            "",
        ]
        if header:
            lines += ["# The YAML's header:", *_comment_lines(header, 0), ""]
        lines.append(f"from recipekit.hardware import {node_name}_NODE, Hardware")
        body = "".join(text for *_, text in sections) + hatch
        lines += self._imports(
            body,
            "from recipekit.model_card import ModelCard",
            f"from {framework_module} import {framework_name}",
        )
        if untyped:
            lines.append("from recipekit.importers.nemo_rl_yaml import ImportedRecipe")
        lines += ["from recipekit.stage import Stage", ""]
        for variable, _, notes, text in sections:
            lines += [*_comment_lines(notes, 0), f"{variable} = {text}", ""]
        model_name = next(
            (
                name
                for section in ("policy", "generation")
                if isinstance(
                    name := getattr(getattr(config, section, None), "model_name", None), str
                )
            ),
            "model",
        )
        lines += [
            "# Fill in what the plan checks the layout against (parameters, layers, experts).",
            f"MODEL = ModelCard(name={model_name!r}, total_params_b=0, active_params_b=0, "
            "num_layers=0)",
            "",
            "stage = Stage(",
            f"    name={stage_name!r},",
            f"    description={('Imported from ' + source.name)!r},",
            f"    hardware=Hardware({node_name}_NODE, num_nodes={hardware.num_nodes}),",
            "    model=MODEL,",
            f"    framework={framework_name},",
            f"    config={config_class.__name__}(",
            *(f"        {name}={variable}," for variable, name, _, _ in sections),
            "    ),",
            ")",
            "",
        ]
        if untyped:
            lines += [
                "# Keys the typed schema does not hold, kept verbatim (why, above each);",
                "# compile adds them back.",
                f"UNTYPED_KEYS = {hatch}",
                "",
                "recipe = ImportedRecipe(stage=stage, untyped_keys=UNTYPED_KEYS)",
            ]
        else:
            lines.append("recipe = stage")
        return "\n".join(lines) + "\n"

    def base_module(self, *, upstream: Upstream, config: Any, schema: str) -> str:
        """A typed base: the YAML's values as one config object, ``config``, for stages to
        start from. Values only: the YAML's comments and prose stay upstream."""
        config_class = type(config)
        body = self._sections_call(config)
        self.classes.add((config_class.__module__, config_class.__name__))
        lines = [
            f'"""Typed base: a NeMo-RL {schema} config, as NeMo-RL reads it.',
            "",
            f"{upstream.repository} at {upstream.commit[:12]}: {upstream.path}",
            "",
            "Written by `recipekit import-yaml --base`; recipes/upstream/bases_test.py checks that",
            "the pinned file still reads as this. Values only: the YAML's comments stay upstream.",
            "Do not edit: a stage starts from `config` and states what it changes.",
            '"""',
            "",
            "# Generated: upstream paths and strings stay whole, however long.",
            "# ruff: noqa: E501",
            "",
        ]
        lines += self._imports(body)
        lines += [
            "",
            "# The pinned file (3rdparty/reference/manifest.toml), under the reference folder.",
            f"UPSTREAM = {upstream.local!r}",
            f"SCHEMA = {schema!r}",
            "",
            f"config = {body}",
            "",
        ]
        return "\n".join(lines)

    def _imports(self, body: str, *between: str) -> list[str]:
        """The imports ``body`` needs: the markers it uses, ``between``, the run-time
        environment, and the section classes written."""
        markers = [
            m for m, used in (("DERIVED", "DERIVED" in body), ("UNSET", self.uses_unset)) if used
        ]
        lines = [f"from recipekit.markers import {', '.join(markers)}"] if markers else []
        lines += between
        if self.uses_env:
            lines.append("from recipekit.nemo_rl.run_env import from_env")
        for module in sorted({m for m, _ in self.classes}):
            names = sorted(c for m, c in self.classes if m == module)
            lines.append(f"from {module} import (\n" + "".join(f"    {c},\n" for c in names) + ")")
        return lines

    def _sections_call(self, config: Any) -> str:
        rows = []
        for field, key, value in self._top_level(config):
            rows += _comment_lines(self._notes(key), 1)
            rows.append(f"    {field.name}={self.expr(value, key, 1)},")
        return f"{type(config).__name__}(\n" + "\n".join(rows) + "\n)"

    def _top_level(self, config: Any) -> list[tuple[Any, str, Any]]:
        """The config's set sections, in the YAML's order: (field, key, value)."""
        found = []
        for field in self._in_yaml_order(type(config), ""):
            value = getattr(config, field.name)
            if value is not UNSET:
                found.append((field, key_of(type(config), field.name), value))
        return found

    def _untyped(self, untyped: dict[str, tuple[Any, str]]) -> str:
        if not untyped:
            return ""
        rows = []
        for key, (value, why) in untyped.items():
            dotted = ".".join(str(p) for p in parts_of(key))
            rows += _comment_lines((why, *self._notes(dotted)), 1)
            rows.append(f"    {key!r}: {self.literal(value, 1, dotted)},")
        return "{\n" + "\n".join(rows) + "\n}"

    def _notes(self, key: str) -> tuple[str, ...]:
        notes = self.comments.get(key, ())
        if key in self.computed:
            notes = (*notes, f"the YAML computes it: {self.computed[key]}")
        if key in self.added:
            notes = (*notes, "not in the YAML: the schema requires it (the compiled config has it)")
        return notes

    def _in_yaml_order(self, cls: type, key: str) -> list[Any]:
        """``cls``'s fields in the order the YAML has its keys (then the others): a subclass
        that redeclares a key would otherwise move it last."""
        original = resolved_at(self.resolved, key) if key else self.resolved
        order = {k: i for i, k in enumerate(original)} if isinstance(original, dict) else {}
        fields = list(attrs.fields(cls))
        return sorted(fields, key=lambda f: order.get(key_of(cls, f.name), len(order)))

    def expr(self, value: Any, key: str, depth: int) -> str:
        # Leaves are written as the YAML had them: a typed float key given an integer keeps
        # the integer, which is what NeMo-RL reads.
        original = resolved_at(self.resolved, key)
        if original is not UNSET and not _holds_sections(value) and original == value:
            return self.literal(
                tuple(original) if isinstance(value, tuple) else original, depth, key
            )
        if value is DERIVED:
            return "DERIVED"
        pad, end = "    " * (depth + 1), "    " * depth
        if attrs.has(type(value)):
            cls = type(value)
            self.classes.add((cls.__module__, cls.__name__))
            rows = []
            for field in self._in_yaml_order(cls, key):
                item = getattr(value, field.name)
                if item is UNSET and field.default is UNSET:
                    continue
                sub = f"{key}.{key_of(cls, field.name)}"
                if item is UNSET:
                    # Absent from the YAML, where recipekit would otherwise derive it.
                    self.uses_unset = True
                    rows.append(f"{pad}{field.name}=UNSET,")
                    continue
                rows += _comment_lines(self._notes(sub), depth + 1)
                rows.append(f"{pad}{field.name}={self.expr(item, sub, depth + 1)},")
            if not rows:
                return f"{cls.__name__}()"
            return f"{cls.__name__}(\n" + "\n".join(rows) + f"\n{end})"
        if isinstance(value, dict) and _holds_sections(value):
            rows = []
            for k, v in value.items():
                rows += _comment_lines(self._notes(f"{key}.{k}"), depth + 1)
                rows.append(f"{pad}{k!r}: {self.expr(v, f'{key}.{k}', depth + 1)},")
            return "{\n" + "\n".join(rows) + f"\n{end}}}"
        if isinstance(value, tuple) and _holds_sections(value):
            rows = []
            for i, v in enumerate(value):
                rows += _comment_lines(self._notes(f"{key}.{i}"), depth + 1)
                rows.append(f"{pad}{self.expr(v, f'{key}.{i}', depth + 1)},")
            return "(\n" + "\n".join(rows) + f"\n{end})"
        return self.literal(value, depth, key)

    def literal(self, value: Any, depth: int, key: str) -> str:
        """Plain data as Python, one entry a line (with its comments) when it is long."""
        if isinstance(value, str) and ENV_REFERENCE.search(value):
            self.uses_env = True
            return _env_expression(value)
        if isinstance(value, float) and not math.isfinite(value):
            return f"float({str(value)!r})"
        if not isinstance(value, (dict, list, tuple)):
            return repr(value)
        flat = self._flat(value)
        notes = any(self.comments.get(f"{key}.{k}") for k in _keys(value))
        if flat is not None and len(flat) + 4 * depth < WIDTH and not notes:
            return flat
        pad, end = "    " * (depth + 1), "    " * depth
        rows = []
        if isinstance(value, dict):
            for k, v in value.items():
                rows += _comment_lines(self.comments.get(f"{key}.{k}", ()), depth + 1)
                rows.append(f"{pad}{k!r}: {self.literal(v, depth + 1, f'{key}.{k}')},")
            return "{\n" + "\n".join(rows) + f"\n{end}}}"
        open_, close = ("(", ")") if isinstance(value, tuple) else ("[", "]")
        for i, v in enumerate(value):
            rows += _comment_lines(self.comments.get(f"{key}.{i}", ()), depth + 1)
            rows.append(f"{pad}{self.literal(v, depth + 1, f'{key}.{i}')},")
        return open_ + "\n" + "\n".join(rows) + f"\n{end}{close}"

    def _flat(self, value: Any) -> str | None:
        """One-line Python for plain data, or None when it holds something repr cannot say."""
        if isinstance(value, str) and ENV_REFERENCE.search(value):
            self.uses_env = True
            return _env_expression(value)
        if isinstance(value, float) and not math.isfinite(value):
            return None
        if isinstance(value, dict):
            items = [(repr(k), self._flat(v)) for k, v in value.items()]
            if any(v is None for _, v in items):
                return None
            return "{" + ", ".join(f"{k}: {v}" for k, v in items) + "}"
        if isinstance(value, (list, tuple)):
            parts = [self._flat(v) for v in value]
            if any(p is None for p in parts):
                return None
            text = ", ".join(p for p in parts if p is not None)
            if isinstance(value, tuple):
                return f"({text},)" if len(parts) == 1 else f"({text})"
            return f"[{text}]"
        return repr(value)


def _keys(value: Any) -> list[Any]:
    return list(value) if isinstance(value, dict) else list(range(len(value)))


def _env_expression(text: str) -> str:
    pieces = []
    for part in split_env(text):
        if isinstance(part, str):
            pieces.append(repr(part))
        else:
            variable, default = part
            args = repr(variable) if default is None else f"{variable!r}, {default!r}"
            pieces.append(f"from_env({args})")
    return " + ".join(pieces)


def _holds_sections(value: Any) -> bool:
    if attrs.has(type(value)):
        return True
    if isinstance(value, dict):
        return any(attrs.has(type(v)) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(attrs.has(type(v)) for v in value)
    return False


def _comment_lines(notes: tuple[str, ...], depth: int) -> list[str]:
    pad = "    " * depth
    return [f"{pad}# {note}".rstrip() for text in notes for note in text.splitlines() or [""]]


def _variable(name: str) -> str:
    """A module-level name for a section: ``eval`` would shadow the builtin."""
    return f"{name}_" if keyword.iskeyword(name) or hasattr(builtins, name) else name


def _importable(obj: Any) -> tuple[str, str]:
    """The module and name a framework object is imported by."""
    from recipekit.nemo_rl import algorithms, framework

    for module in (framework, algorithms):
        for name, value in vars(module).items():
            if value is obj and name.isupper() and not name.startswith("_"):
                return module.__name__, name
    raise ValueError(f"{obj!r} is not a framework constant of recipekit.nemo_rl")
