"""``recipekit import-yaml``: a NeMo-RL YAML as a typed recipe module.

The YAML is read as NeMo-RL reads it (``yaml_loader``: ``defaults:``, ``_override_``, the
resolvers), except that ``${oc.env:VAR}`` stays a reference the run's environment fills in
(``nemo_rl.run_env``). Its top-level sections name the algorithm (``grpo:``, ``sft:``, ``dpo:``,
``rm:``, ``distillation:``, ``ppo:``, ``eval:``) and with it the entry point; the schema is
NeMo-RL ``super-v3`` or ``main`` (``super-v3.5-posttraining``), ``auto`` taking the one that
leaves the fewest keys untyped. The written module's framework object names the NeMo-RL
version and entry point it targets (``nemo_rl.algorithms``).

The resolved values become typed sections, written out as Python:

- a key the YAML interpolated, and whose value our derivation gives, is written ``DERIVED``
  (it follows its source, as it did in the YAML); another interpolated key keeps its value, with
  the YAML's expression as a comment;
- the YAML's comments stay beside the values they explain;
- a key the typed schema does not know, or a value it rejects where the key is optional (a
  switched-off back-end that omits what an enabled one requires, say), goes into
  ``UNTYPED_KEYS``, an explicit escape hatch the compiled config gets back verbatim, and is
  reported as a warning saying why: never dropped, never silent.

``compile_object`` is what ``recipekit compile`` prints: the framework config, derived and
rendered (the layout checks are ``plan``'s job).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, get_args, get_origin

import attrs

from recipekit.convert import from_dict
from recipekit.errors import Issue, RecipeError, did_you_mean
from recipekit.hardware import B200_NODE, GB200_NODE, H100_NODE, Hardware
from recipekit.importers.data_paths import parts_of, path_of, resolved_at
from recipekit.importers.upstream import Upstream
from recipekit.keypaths import replace_at
from recipekit.markers import DERIVED, UNSET
from recipekit.sections import field_of, key_names, key_of
from recipekit.stage import Stage

NODES = {"GB200": GB200_NODE, "B200": B200_NODE, "H100": H100_NODE}
# The node a YAML's cluster.gpus_per_node suggests; anything else (1 or 2 GPUs, as NeMo-RL's
# small examples use) runs on part of an H100 node, the 8-GPU machine those examples name
# ("1n8g"). NOT IN THE RECIPE.
DEFAULT_NODE = {4: "GB200", 8: "B200"}
FALLBACK_NODE = "H100"
SCHEMAS = ("super-v3", "main")
UNKNOWN = "unknown to the typed schema"


@attrs.frozen(kw_only=True)
class ImportedRecipe:
    """A stage plus the keys its typed schema does not hold, by key path, kept verbatim."""

    stage: Stage
    untyped_keys: Mapping[str, Any] = attrs.field(factory=dict)


@attrs.frozen
class Imported:
    source: str  # the Python module
    warnings: tuple[Issue, ...]
    schema: str
    framework: Any
    # Keys the schema requires that the YAML omits: the compiled config has them too.
    added: tuple[str, ...] = ()


@attrs.frozen
class Loaded:
    """A YAML as NeMo-RL reads it, ``${oc.env:...}`` kept, and its ``${...}`` by key."""

    resolved: dict[str, Any]
    interpolated: dict[str, str]


@attrs.frozen
class Fit:
    """A config read into one schema: the typed config, what went to the escape hatch, and
    the keys the schema requires that the YAML omits (derived, or a fixed default)."""

    config: Any
    untyped: dict[str, tuple[Any, str]]  # key path -> (value, why it is not typed)
    added: tuple[str, ...] = ()


def import_yaml(
    path: Path,
    *,
    node: str | None = None,
    name: str = "",
    schema: str = "auto",
    upstream: Upstream | None = None,
) -> Imported:
    """``path`` as a recipe module; with ``upstream`` (the pinned file it is), as a typed base:
    its values only, as one config object, every key typed."""
    from recipekit.importers.module_writer import ModuleWriter
    from recipekit.importers.yaml_comments import chain_source
    from recipekit.nemo_rl.algorithms import algorithm_of, frameworks_for
    from recipekit.nemo_rl.layout import gym_nodes

    source_text = chain_source(path)
    loaded = load_keeping_env(path, source_text.expressions)
    resolved = loaded.resolved
    if schema not in ("auto", *SCHEMAS):
        raise RecipeError([Issue("--schema", f"no schema {schema!r}", hint="auto, super-v3, main")])
    try:
        algorithm_of(resolved)
    except RecipeError as exc:
        raise RecipeError(exc.issues, context=str(path)) from None
    fits: dict[str, tuple[Any, Fit]] = {}
    failures: dict[str, RecipeError] = {}
    for candidate in SCHEMAS if schema == "auto" else (schema,):
        try:
            fits[candidate] = _fit_strictest(frameworks_for(candidate, resolved), resolved)
        except RecipeError as exc:
            failures[candidate] = exc
    if not fits:
        first = next(iter(failures))
        raise RecipeError(
            failures[first].issues, context=f"{path}: does not fit NeMo-RL {first}'s schema"
        )
    # Fewest untyped keys; SCHEMAS' order breaks a tie.
    chosen = min(fits, key=lambda s: len(fits[s][1].untyped))
    framework, fitted = fits[chosen]
    hardware, node_name = _hardware(resolved, node, gym_nodes(fitted.config))
    config, derived = _as_derived(fitted.config, hardware, resolved, loaded.interpolated, framework)
    warnings = tuple(
        Issue(key, why, **({} if isinstance(value, (dict, list)) else {"value": value}))
        for key, (value, why) in fitted.untyped.items()
    ) + tuple(
        Issue(key, f"the YAML omits it and NeMo-RL {chosen}'s schema requires it: compile adds it")
        for key in fitted.added
    )
    if upstream is not None:
        if fitted.untyped:
            raise RecipeError(
                [
                    Issue(key, f"a typed base types every key: {why}")
                    for key, (_, why) in fitted.untyped.items()
                ],
                context=f"{path}: NeMo-RL {chosen}'s schema",
            )
        writer = ModuleWriter(resolved=resolved, comments={}, computed={}, added=fitted.added)
        source = writer.base_module(upstream=upstream, config=config, schema=chosen)
        return Imported(source, warnings, chosen, framework, fitted.added)
    writer = ModuleWriter(
        resolved=resolved,
        comments=source_text.comments,
        computed={k: v for k, v in loaded.interpolated.items() if k not in derived},
        added=fitted.added,
    )
    source = writer.module(
        source=path,
        header=source_text.header,
        stage_name=name or path.stem,
        node_name=node_name,
        hardware=hardware,
        config=config,
        untyped=fitted.untyped,
        framework=framework,
        schema=chosen,
    )
    return Imported(source, warnings, chosen, framework, fitted.added)


# --- reading the YAML -----------------------------------------------------------------------


def load_keeping_env(path: Path, expressions: Mapping[str, str]) -> Loaded:
    """``path`` merged and resolved as NeMo-RL does, but ``${oc.env:VAR}`` left as written:
    the run's environment, not this machine's, decides it. ``expressions`` are the ``${...}``
    the YAML text computes its values with, by key."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    from recipekit.nemo_rl.run_env import ENV_REFERENCE
    from recipekit.nemo_rl.yaml_loader import (
        DEEP_INTERPOLATION,
        read_merged,
        register_resolvers,
        resolve_error,
    )

    register_resolvers()
    merged = read_merged(path)
    interpolated = {
        key: expr for key, expr in expressions.items() if "${" in ENV_REFERENCE.sub("", expr)
    }
    if any(ENV_REFERENCE.search(text) for text in expressions.values()):
        # OmegaConf reads "\${...}" as the literal text "${...}".
        raw = OmegaConf.to_container(merged, resolve=False)
        merged = OmegaConf.create(_escape_env(raw))
    try:
        resolved = OmegaConf.to_container(merged, resolve=True)
    except RecursionError:
        raise RecipeError([Issue(str(path), DEEP_INTERPOLATION)]) from None
    except OmegaConfBaseException as exc:
        raise resolve_error(exc, path, merged) from None
    assert isinstance(resolved, dict)
    return Loaded({str(k): _env_references(v) for k, v in resolved.items()}, interpolated)


def _env_references(data: Any) -> Any:
    """``data`` with each string whose only ``${...}`` are ``${oc.env:VAR}`` references made an
    ``Interpolation``, as ``from_env`` writes them: a section takes those and refuses any other
    ``${...}`` (``recipekit.interpolation``)."""
    from recipekit.interpolation import OPENS, Interpolation
    from recipekit.nemo_rl.run_env import ENV_REFERENCE

    if isinstance(data, dict):
        return {k: _env_references(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_env_references(v) for v in data]
    if isinstance(data, str) and OPENS in data and OPENS not in ENV_REFERENCE.sub("", data):
        return Interpolation(data)
    return data


def _escape_env(data: Any) -> Any:
    from recipekit.nemo_rl.run_env import ENV_REFERENCE

    if isinstance(data, dict):
        return {k: _escape_env(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_escape_env(v) for v in data]
    if isinstance(data, str):
        return ENV_REFERENCE.sub(lambda m: "\\" + m.group(0), data)
    return data


# --- fitting the config into a schema -------------------------------------------------------


def _fit_strictest(frameworks: tuple[Any, ...], resolved: dict[str, Any]) -> tuple[Any, Fit]:
    """The first framework whose config type leaves no more keys untyped than a later (wider)
    one: the Super recipes' own schema where the YAML fits it as well."""
    best: tuple[Any, Fit] | None = None
    failure: RecipeError | None = None
    for framework in frameworks:
        try:
            fitted = fit(tree_copy(resolved), framework.config_type)
        except RecipeError as exc:
            failure = failure or exc
            continue
        if best is None or len(fitted.untyped) < len(best[1].untyped):
            best = (framework, fitted)
    if best is None:
        assert failure is not None
        raise failure
    return best


def fit(data: dict[str, Any], config_type: type) -> Fit:
    """``data`` as ``config_type``, the keys it cannot hold moved to the escape hatch.

    An unknown key moves alone. A rejected value moves with the smallest enclosing key that
    the schema lets be absent (an optional key or an entry of a mapping of sections); when
    there is none (a required key all the way up), the config does not fit this schema.
    """
    untyped: dict[str, tuple[Any, str]] = {
        where: (_pop(data, where), f"{UNKNOWN} ({close})" if close else UNKNOWN)
        for where, close in unknown_keys(data, config_type)
    }
    while True:
        config: Any
        try:
            config = from_dict(data, config_type)
        except RecipeError as exc:
            moved = False
            for issue in exc.issues:
                where: str | None
                if any(_within(issue.path, key) for key in untyped):
                    continue  # moved with a key this round: its value is no longer here
                if issue.message == "unknown key":
                    where, why = issue.path, UNKNOWN
                else:
                    where = _absentable(config_type, data, issue.path)
                    why = _rejected(issue, where)
                if where is None or where in untyped or not _present(data, where):
                    continue
                untyped[where] = (_pop(data, where), why)
                _absorb(untyped, where)
                moved = True
            if not moved:
                raise
            continue
        added: list[str] = []
        return Fit(_absent_as_unset(config, data, "", added), untyped, tuple(added))


def unknown_keys(data: Any, tp: Any, path: str = "") -> list[tuple[str, str]]:
    """The keys in ``data`` that the sections of ``tp`` do not declare, in document order, each
    with a "did you mean" where a declared key is close ("" where none is)."""
    from recipekit.convert import union_members

    members = union_members(tp)
    found: list[tuple[str, str]] = []
    if isinstance(data, dict):
        sections = [m for m in members if isinstance(m, type) and attrs.has(m)]
        if sections:
            cls = max(sections, key=lambda c: sum(field_of(c, str(k)) is not None for k in data))
            fields = attrs.fields_dict(cls)
            for key, value in data.items():
                name = field_of(cls, str(key))
                where = f"{path}.{key}" if path else str(key)
                if name is None:
                    close = did_you_mean(str(key), key_names(cls))
                    found.append((where, close if close.startswith("did you mean") else ""))
                else:
                    found += unknown_keys(value, fields[name].type, where)
            return found
        for member in members:
            if get_origin(member) is dict and get_args(member):
                for key, value in data.items():
                    found += unknown_keys(value, get_args(member)[1], f"{path}.{key}")
                return found
    elif isinstance(data, list):
        for member in members:
            if get_origin(member) is tuple and get_args(member):
                for index, value in enumerate(data):
                    found += unknown_keys(value, get_args(member)[0], f"{path}[{index}]")
                return found
    return found


def _may_be_absent(tp: Any) -> bool:
    from recipekit.convert import union_members

    return any(UNSET in get_args(m) for m in union_members(tp))


def _absent_as_unset(value: Any, data: Any, path: str, added: list[str]) -> Any:
    """``value`` with the derived keys the YAML omits left out, as NeMo-RL leaves them, where
    the schema lets them be absent; keys the schema adds anyway (derived, or a fixed default)
    are listed in ``added``."""
    if attrs.has(type(value)) and isinstance(data, dict):
        changes = {}
        for field in attrs.fields(type(value)):
            key = key_of(type(value), field.name)
            item = getattr(value, field.name)
            where = f"{path}.{key}" if path else key
            if key not in data:
                if item is DERIVED and _may_be_absent(field.type):
                    changes[field.name] = UNSET
                elif item is not UNSET:
                    added.append(where)  # derived, or the schema's fixed default
                continue
            new = _absent_as_unset(item, data[key], where, added)
            if new is not item:
                changes[field.name] = new
        return attrs.evolve(value, **changes) if changes else value
    if isinstance(value, dict) and isinstance(data, dict):
        items = {
            k: _absent_as_unset(v, data.get(k), f"{path}.{k}", added) for k, v in value.items()
        }
        return items if any(items[k] is not value[k] for k in value) else value
    if isinstance(value, tuple) and isinstance(data, list) and len(data) == len(value):
        parts = tuple(
            _absent_as_unset(v, d, f"{path}[{i}]", added)
            for i, (v, d) in enumerate(zip(value, data, strict=True))
        )
        return parts if any(a is not b for a, b in zip(parts, value, strict=True)) else value
    return value


def _rejected(issue: Issue, where: str | None) -> str:
    inner = issue.path[len(where) :].lstrip(".") if where else issue.path
    detail = attrs.evolve(issue, path=inner).render() if inner else issue.message
    if not inner and issue.hint:
        detail += f" ({issue.hint})"
    return f"the typed schema rejects it: {detail}"


def _within(path: str, key: str) -> bool:
    return path == key or path.startswith((key + ".", key + "["))


def _absorb(untyped: dict[str, tuple[Any, str]], where: str) -> None:
    """Put keys moved out of ``where`` earlier back into it: it moves whole now, and its reason
    keeps theirs (a misspelt key inside a section the schema rejects is still named)."""
    value, why = untyped[where]
    for key in [k for k in untyped if k != where and _within(k, where)]:
        inner = key[len(where) :].lstrip(".")
        moved, moved_why = untyped.pop(key)
        put_at(value, inner, moved)
        why += f"; {inner}: {moved_why}"
    untyped[where] = (value, why)


def _absentable(config_type: type, data: Any, path: str) -> str | None:
    """The deepest key on ``path`` (itself included) that ``config_type`` lets be absent and
    that ``data`` has."""
    parts = parts_of(path)
    found: str | None = None
    types: list[Any] = [config_type]
    for depth, part in enumerate(parts):
        step = [_child_type(t, part) for t in types]
        children = [s for s in step if s is not None]
        if not children:
            break
        here = parts[: depth + 1]
        if any(absent_ok for _, absent_ok in children) and _present(data, path_of(here)):
            found = path_of(here)
        types = [tp for tp, _ in children]
    return found


def _child_type(tp: Any, part: str | int) -> tuple[Any, bool] | None:
    """The type of ``part`` inside a value of type ``tp``, and whether it may be absent."""
    from recipekit.convert import union_members

    for member in union_members(tp):
        if isinstance(part, int):
            if get_origin(member) is tuple and get_args(member):
                return get_args(member)[0], False
            continue
        if isinstance(member, type) and attrs.has(member):
            name = field_of(member, part)
            if name is not None:
                field = attrs.fields_dict(member)[name]
                return field.type, field.default is UNSET
        elif get_origin(member) is dict and get_args(member):
            item = get_args(member)[1]
            if any(isinstance(m, type) and attrs.has(m) for m in union_members(item)):
                return item, True
    return None


def _present(data: Any, path: str) -> bool:
    for part in parts_of(path):
        if isinstance(part, int):
            if not isinstance(data, list) or part >= len(data):
                return False
        elif not isinstance(data, dict) or part not in data:
            return False
        data = data[part]
    return True


def _pop(data: Any, path: str) -> Any:
    *head, last = parts_of(path)
    for part in head:
        data = data[part]
    return data.pop(last)


# --- choosing the hardware, marking derivations ------------------------------------------------


def _hardware(resolved: dict[str, Any], node: str | None, gym: int) -> tuple[Hardware, str]:
    """The stage's nodes: NeMo-RL's cluster, and the ``gym`` judge nodes main allocates beside
    it (nemo_rl.layout.gym_nodes)."""
    cluster = resolved.get("cluster") or {}
    gpus = cluster.get("gpus_per_node")
    if node is not None and node not in NODES:
        raise RecipeError([Issue("--node", f"no node type {node!r}", hint=", ".join(NODES))])
    node_name = node or DEFAULT_NODE.get(gpus if isinstance(gpus, int) else 0, FALLBACK_NODE)
    nodes = cluster.get("num_nodes")
    count = (nodes if isinstance(nodes, int) else 1) + gym
    return Hardware(NODES[node_name], num_nodes=count), node_name


def _as_derived(
    config: Any,
    hardware: Hardware,
    resolved: dict[str, Any],
    interpolated: dict[str, str],
    framework: Any,
) -> tuple[Any, set[str]]:
    """Interpolated keys our derivations reproduce become DERIVED again."""
    from recipekit.derivation import lookup

    done: set[str] = set()
    for rule in framework.rules:
        if rule.target not in interpolated:
            continue
        inputs = [lookup(config, hardware, s) for s in rule.sources]
        value = resolved_at(resolved, rule.target)
        if value is None and not rule.nullable:
            continue  # the derivation does not follow its source to null
        try:
            same = _same(rule.compute(*inputs), value)
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


def _same(a: Any, b: Any) -> bool:
    # An int where the YAML had a float is a different config for NeMo-RL.
    return type(a) is type(b) and a == b


# --- compiling --------------------------------------------------------------------------------


def compile_object(obj: Any) -> tuple[dict[str, Any], list[Issue]]:
    """The framework config of a Stage (or an ImportedRecipe), and the warnings to print.

    The config must be of the type the stage's framework reads: a section of another NeMo-RL
    version (or another algorithm) is an error naming what was expected.
    """
    from recipekit.plan import config_type_issue, resolve_run_inputs, underived_keys

    untyped: Mapping[str, Any] = {}
    if isinstance(obj, ImportedRecipe):
        obj, untyped = obj.stage, obj.untyped_keys
    if not isinstance(obj, Stage):
        raise RecipeError([Issue("recipe", f"is a {type(obj).__name__}, not a Stage")])
    framework = obj.framework
    mismatch = config_type_issue(obj)
    if mismatch is not None:
        raise RecipeError([mismatch], context=f"{obj.name}: cannot compile")
    config, _ = framework.derive(resolve_run_inputs(obj)[0], obj.hardware)
    errors = underived_keys(config)
    if errors:
        raise RecipeError(errors, context=f"{obj.name}: cannot compile")
    rendered = framework.render(config)
    warnings = []
    for key, value in untyped.items():
        put_at(rendered, key, tree_copy(value))
        warnings.append(Issue(key, "not in the typed schema: passed through verbatim"))
    return rendered, warnings


def tree_copy(data: Any) -> Any:
    """A copy of plain config data (mappings and lists copied, leaves shared: they are
    immutable)."""
    if isinstance(data, dict):
        return {k: tree_copy(v) for k, v in data.items()}
    if isinstance(data, list):
        return [tree_copy(v) for v in data]
    return data


def put_at(data: dict[str, Any], key: str, value: Any) -> None:
    """Set ``key`` (``a.b[0].c``) in plain config data, making the mappings on the way."""
    *head, last = parts_of(key)
    node: Any = data
    for part in head:
        if isinstance(part, int):
            node = node[part]
        else:
            node = node.setdefault(part, {})
    node[last] = value


def dumps(config: dict[str, Any]) -> str:
    return json.dumps(config, indent=2)
