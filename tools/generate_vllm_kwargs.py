#!/usr/bin/env python3
"""Write the tables ``policy.generation.vllm_kwargs`` is checked against, read from the pinned
upstream sources (``.reference/``, filled by ``tools/fetch-reference``):

- ``recipekit/vllm/generated/engine_args_0_25_1.py``: vLLM 0.25.1's ``EngineArgs`` and
  ``AsyncEngineArgs`` fields, each with its type and the pydantic ``Field`` bounds of the config
  class field it stands for (its default names it: ``CacheConfig.gpu_memory_utilization``,
  ``get_field(KernelConfig, ...)``, or ``create_engine_config`` passes it on as
  ``XConfig(name=self.name)``), and ``LLM.__init__``'s own parameters;
- ``recipekit/vllm/generated/nemo_rl_workers.py``: how each pinned NeMo-RL's vLLM worker spreads
  ``vllm_kwargs``: the keywords it passes itself in the same call (a duplicate is a TypeError),
  the setting each reads, and the keys it writes into the arguments itself (the user's value
  replaced).

    PYTHONPATH=src/python:. python3 tools/generate_vllm_kwargs.py           # rewrites them
    PYTHONPATH=src/python:. python3 tools/generate_vllm_kwargs.py --check   # exit 1 if stale

``recipekit/vllm/generated_test.py`` regenerates them and fails on any difference. The plan
imports the modules, never ``.reference/``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from recipekit.upstream.annotations import ANY, type_text
from recipekit.upstream.classes import UpstreamSource
from recipekit.upstream.conditions import keyed_call
from tools.generated_modules import (
    CHECKOUT,
    pins,
    python_dict,
    python_header,
    reference_dir,
    write_or_check,
)

PACKAGE = CHECKOUT / "src/python/recipekit"
TOOL = "tools/generate_vllm_kwargs.py"

VLLM = "vllm/0.25.1-wheel"
ARG_UTILS = "vllm/engine/arg_utils.py"
LLM_PY = "vllm/entrypoints/llm.py"
ENGINE_ARGS = "vllm.engine.arg_utils:EngineArgs"
ASYNC_ENGINE_ARGS = "vllm.engine.arg_utils:AsyncEngineArgs"
NEMO_RL = ("nemo-rl/super-v3", "nemo-rl/super-v3.5-posttraining")
WORKER_PY = "nemo_rl/models/generation/vllm/vllm_worker.py"
ASYNC_WORKER_PY = "nemo_rl/models/generation/vllm/vllm_worker_async.py"
# The worker's own config (self.cfg) is the generation section.
CFG_ROOT = "self.cfg"
CFG_KEY = "policy.generation"

OUTPUTS = {
    "vllm": PACKAGE / "vllm/generated/engine_args_0_25_1.py",
    "workers": PACKAGE / "vllm/generated/nemo_rl_workers.py",
}


# --- vLLM -------------------------------------------------------------------------------------


def _default_field(default: str, module: str, source: UpstreamSource) -> tuple[str, str] | None:
    """The config class field an EngineArgs default names (``CacheConfig.x`` or
    ``get_field(CacheConfig, "x")``), as (``module:Class``, field)."""
    try:
        node = ast.parse(default, mode="eval").body
    except SyntaxError:
        return None
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        owner, name = node.value.id, node.attr
    elif (
        isinstance(node, ast.Call)
        and ast.unparse(node.func) == "get_field"
        and len(node.args) == 2
        and isinstance(node.args[0], ast.Name)
        and isinstance(node.args[1], ast.Constant)
    ):
        owner, name = node.args[0].id, str(node.args[1].value)
    else:
        return None
    qualified = source.resolve(module, owner)
    return (qualified, name) if qualified else None


def handed_to_configs(source: UpstreamSource) -> dict[str, tuple[dict[str, str], set[str]]]:
    """What EngineArgs' methods hand each config class they build (``XConfig(f=...)``): by
    ``module:Class``, field -> argument for each field given ``self.<argument>`` as it is, and
    the fields given anything else."""
    module = ENGINE_ARGS.partition(":")[0]
    found: dict[str, tuple[dict[str, str], set[str]]] = {}
    for node in ast.walk(source.nodes[ENGINE_ARGS]):
        if not isinstance(node, ast.Call):
            continue
        qualified = source.resolve(module, ast.unparse(node.func))
        if qualified is None or source.config_class(qualified) is None:
            continue
        as_is, computed = found.setdefault(qualified, ({}, set()))
        for kw in node.keywords:
            value = kw.value
            if kw.arg is None:
                continue
            if isinstance(value, ast.Attribute) and ast.unparse(value.value) == "self":
                as_is[kw.arg] = value.attr
            else:
                computed.add(kw.arg)
    return found


def _passed_on(source: UpstreamSource) -> dict[str, tuple[str, str]]:
    """EngineArgs fields its methods hand to a config class as ``XConfig(kw=self.name)``: each
    name's (``module:Class``, field), where one class takes it."""
    found: dict[str, set[tuple[str, str]]] = {}
    for qualified, (as_is, _) in handed_to_configs(source).items():
        for field, attr in as_is.items():
            found.setdefault(attr, set()).add((qualified, field))
    return {attr: next(iter(targets)) for attr, targets in found.items() if len(targets) == 1}


def _where(source: UpstreamSource, target: tuple[str, str] | None) -> Any:
    """The config field ``target`` names: its bounds, whether it defaults to None, its file:line."""
    if target is None:
        return None
    cls = source.config_class(target[0])
    field = cls.fields.get(target[1]) if cls is not None else None
    if field is None:
        return None
    path = field.module.replace(".", "/") + ".py"
    return dict(field.bounds), field.default == "None", f"{path}:{field.line}"


def _with_none(text: str) -> str:
    return text if text == ANY or "None" in text.split(" | ") else f"{text} | None"


def engine_fields(source: UpstreamSource, qualified: str) -> dict[str, tuple[Any, ...]]:
    """Each init field of ``qualified``: (type text, bounds, line in arg_utils.py, where the
    bounds are declared). A field whose default, or whose config field's default, is None also
    takes None."""
    cls = source.config_class(qualified)
    assert cls is not None, qualified
    passed_on = _passed_on(source)
    out: dict[str, tuple[Any, ...]] = {}
    for name, field in cls.fields.items():
        if not getattr(field, "init", True):
            continue
        text = type_text(field.annotation, field.module, source)
        target = _default_field(field.default, field.module, source) or passed_on.get(name)
        declared = _where(source, target)
        bounds, none_default, where = declared if declared else ({}, False, "")
        if field.default == "None" or none_default:
            text = _with_none(text)
        out[name] = (text, bounds, field.line, where if bounds else "")
    return out


def nested_configs(source: UpstreamSource, qualified: str) -> dict[str, dict[str, Any]]:
    """EngineArgs fields typed as one of vLLM's ``@config`` classes (pydantic dataclasses that
    forbid extra fields, vllm/config/utils.py): a mapping given for one becomes that class, so
    each of its keys must be a field of it, of the field's type. Each such engine field ->
    {"class": name, "file": path:line, "extra": whether it takes keys it does not declare,
    "fields": {name: (type text, bounds, line)}}."""
    cls = source.config_class(qualified)
    assert cls is not None, qualified
    out: dict[str, dict[str, Any]] = {}
    for name, field in cls.fields.items():
        if not getattr(field, "init", True):
            continue
        try:
            annotation = ast.parse(field.annotation, mode="eval").body
        except SyntaxError:
            continue
        targets = {
            resolved
            for sub in ast.walk(annotation)
            if isinstance(sub, ast.Name)
            and (resolved := source.resolve(field.module, sub.id)) is not None
            and _is_vllm_config(source, resolved)
        }
        if len(targets) != 1:
            continue
        target = targets.pop()
        config = source.config_class(target)
        assert config is not None
        node = source.nodes[target]
        fields = {
            key: (
                _with_none(type_text(f.annotation, f.module, source))
                if f.default == "None"
                else type_text(f.annotation, f.module, source),
                dict(f.bounds),
                f.line,
            )
            for key, f in config.fields.items()
            if getattr(f, "init", True)
        }
        out[name] = {
            "class": config.name,
            "file": f"{target.split(':')[0].replace('.', '/')}.py:{node.lineno}",
            "extra": config.allows_extra,
            "fields": fields,
        }
    return out


def _is_vllm_config(source: UpstreamSource, qualified: str) -> bool:
    node = source.nodes.get(qualified)
    return (
        node is not None
        and source.config_class(qualified) is not None
        and any(ast.unparse(d).split("(")[0] == "config" for d in node.decorator_list)
    )


def _function(tree: ast.Module, cls: str, name: str) -> ast.FunctionDef:
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == cls:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == name:
                    return item
    raise KeyError(f"{cls}.{name}")


def _init_parameters(
    source: UpstreamSource, module: str, cls: str
) -> tuple[ast.FunctionDef, dict[str, tuple[str, int]]]:
    """``cls.__init__`` in ``module``, and its parameters after ``self``: name -> (type text,
    line)."""
    init = _function(source.trees[module], cls, "__init__")
    params: dict[str, tuple[str, int]] = {}
    for arg in [*init.args.args[1:], *init.args.kwonlyargs]:
        annotation = ast.unparse(arg.annotation) if arg.annotation else ANY
        params[arg.arg] = (type_text(annotation, module, source), arg.lineno)
    return init, params


def llm_parameters(source: UpstreamSource) -> tuple[dict[str, tuple[str, int]], dict[str, int]]:
    """``LLM.__init__``'s own parameters (type text, line), and the keys it pops from its
    ``**kwargs`` before they reach EngineArgs (accepted and dropped), by line."""
    init, params = _init_parameters(source, "vllm.entrypoints.llm", "LLM")
    rest = init.args.kwarg.arg if init.args.kwarg else ""
    dropped = {}
    for node in ast.walk(init):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "pop"
            and ast.unparse(node.func.value) == rest
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            dropped[str(node.args[0].value)] = node.lineno
    return params, dropped


SERVING_CHAT_PY = "vllm/entrypoints/openai/chat_completion/serving.py"


def serving_chat_parameters(source: UpstreamSource) -> dict[str, tuple[str, int]]:
    """``OpenAIServingChat.__init__``'s parameters (type text, line): what the HTTP server's
    chat endpoint is built with."""
    return _init_parameters(
        source, "vllm.entrypoints.openai.chat_completion.serving", "OpenAIServingChat"
    )[1]


# --- NeMo-RL's workers -------------------------------------------------------------------------


class _Worker:
    """One worker module: its functions, and each class's methods and ``self.x = ...``."""

    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
        self.methods: dict[str, list[ast.FunctionDef]] = {}
        self.attributes: dict[str, list[ast.expr]] = {}
        for node in tree.body:
            if not isinstance(node, ast.ClassDef):
                continue
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    self.methods.setdefault(item.name, []).append(item)
            for sub in ast.walk(node):
                if isinstance(sub, ast.Assign):
                    for target in sub.targets:
                        if (
                            isinstance(target, ast.Attribute)
                            and ast.unparse(target.value) == "self"
                        ):
                            self.attributes.setdefault(target.attr, []).append(sub.value)

    def spread_call(self) -> tuple[ast.FunctionDef, ast.Call, str, str] | None:
        """The call that spreads ``**vllm_kwargs``: its function, the call, the spread name,
        the name its result is assigned to."""
        for fn in (f for fs in self.methods.values() for f in fs):
            for node in ast.walk(fn):
                if not isinstance(node, ast.Assign) or not isinstance(node.value, ast.Call):
                    continue
                for kw in node.value.keywords:
                    if kw.arg is None and ast.unparse(kw.value) == "vllm_kwargs":
                        target = ast.unparse(node.targets[0])
                        return fn, node.value, "vllm_kwargs", target
        return None


def _locals(fn: ast.FunctionDef) -> dict[str, list[ast.expr]]:
    out: dict[str, list[ast.expr]] = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    out.setdefault(target.id, []).append(node.value)
    return out


def _chain(node: ast.expr, roots: dict[str, tuple[str, ...]]) -> tuple[str, ...] | None:
    """The setting ``node`` reads: ``root["a"]["b"]`` or ``root["a"].get("b")``."""
    text = ast.unparse(node)
    if text in roots:
        return roots[text]
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        head = _chain(node.value, roots)
        return None if head is None else (*head, str(node.slice.value))
    if (call := keyed_call(node)) is not None:
        head = _chain(call[0], roots)
        return None if head is None else (*head, str(call[1]))
    return None


def _settings(
    expr: ast.expr,
    worker: _Worker,
    local: dict[str, list[ast.expr]],
    roots: dict[str, tuple[str, ...]],
    depth: int = 0,
) -> Iterator[tuple[str, ...]]:
    """Every setting of the worker's config ``expr`` is computed from, following local names,
    ``self.x`` attributes and module functions' parameters a few steps."""
    if depth > 4:
        return
    for node in ast.walk(expr):
        found = _chain(node, roots)  # type: ignore[arg-type]
        if found is not None:
            yield found
        elif isinstance(node, ast.Name) and node.id in local:
            for value in local[node.id]:
                yield from _settings(value, worker, local, roots, depth + 1)
        elif (
            isinstance(node, ast.Attribute)
            and ast.unparse(node.value) == "self"
            and node.attr in worker.attributes
        ):
            for value in worker.attributes[node.attr]:
                yield from _settings(value, worker, local, roots, depth + 1)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in worker.functions
        ):
            fn = worker.functions[node.func.id]
            inner = {}
            for param, arg in zip(fn.args.args, node.args, strict=False):
                paths = list(_settings(arg, worker, local, roots, depth + 1))
                if paths:
                    inner[param.arg] = max(paths, key=len)
            if inner:
                yield from _settings(fn, worker, _locals(fn), inner, depth + 1)  # type: ignore[arg-type]


def _setting(expr: ast.expr, worker: _Worker, fn: ast.FunctionDef) -> str:
    """The most specific setting ``expr`` reads, as a recipekit key ("" for none)."""
    paths = list(_settings(expr, worker, _locals(fn), {CFG_ROOT: ()}))
    paths = [p for p in paths if p]
    if not paths:
        return ""
    best = max(paths, key=len)
    return ".".join((CFG_KEY, *best))


def _as_is(expr: ast.expr, worker: _Worker, fn: ast.FunctionDef, depth: int = 0) -> bool:
    """Whether ``expr`` is a setting's value as it is: the chain itself, or a local name or
    ``self`` attribute assigned once, from such a value."""
    if _chain(expr, {CFG_ROOT: ()}):
        return True
    if isinstance(expr, ast.Name):
        values = _locals(fn).get(expr.id, [])
    elif isinstance(expr, ast.Attribute) and ast.unparse(expr.value) == "self":
        values = worker.attributes.get(expr.attr, [])
    else:
        return False
    return depth < 4 and len(values) == 1 and _as_is(values[0], worker, fn, depth + 1)


def _parents(fn: ast.FunctionDef) -> dict[ast.AST, ast.AST]:
    return {child: parent for parent in ast.walk(fn) for child in ast.iter_child_nodes(parent)}


def _always(body: list[ast.stmt], target: str, key: str) -> bool:
    """Whether every path through ``body`` assigns ``target[key]``."""
    for stmt in body:
        if isinstance(stmt, ast.Assign) and any(_is_item(t, target, key) for t in stmt.targets):
            return True
        if (
            isinstance(stmt, ast.If)
            and _always(stmt.body, target, key)
            and _always(stmt.orelse, target, key)
        ):
            return True
    return False


def _is_item(node: ast.expr, target: str, key: str | None = None) -> bool:
    """Whether ``node`` is ``target["key"]`` (any string key when None; any dict when
    ``target`` is "")."""
    return (
        isinstance(node, ast.Subscript)
        and (not target or ast.unparse(node.value) == target)
        and isinstance(node.slice, ast.Constant)
        and isinstance(node.slice.value, str)
        and (key is None or node.slice.value == key)
    )


def _reads(expr: ast.AST, names: set[str], key: str, local: dict[str, list[ast.expr]]) -> bool:
    """Whether ``expr`` reads the item ``key`` of the dicts ``names`` (``d["k"]``,
    ``d.get("k")``, ``"k" in d``), directly or through a local name assigned from one."""
    for node in ast.walk(expr):
        if _is_item(node, "", key) and ast.unparse(node.value) in names:  # type: ignore[arg-type, attr-defined]
            return True
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and ast.unparse(node.func.value) in names
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and node.args[0].value == key
        ):
            return True
        if (
            isinstance(node, ast.Compare)
            and isinstance(node.left, ast.Constant)
            and node.left.value == key
            and any(ast.unparse(c) in names for c in node.comparators)
        ):
            return True
        if isinstance(node, ast.Name) and any(
            _reads(value, names, key, {}) for value in local.get(node.id, [])
        ):
            return True
    return False


def _replaced(
    worker: _Worker,
    fn: ast.FunctionDef,
    target: str,
    names: set[str],
    file: str,
    after: int = 0,
) -> dict[str, tuple[str, str, str, int]]:
    """Keys ``fn`` writes into ``target`` itself (after line ``after``): each key's condition
    ("" when every path writes it), the setting the condition reads, file and line. A write
    that reads the key's own value from ``names`` (the dicts holding the user's) normalises
    the user's value, as in
    ``if not isinstance(kw.get("k"), dict): kw["k"] = {}``, and is left out."""
    local = _locals(fn)
    parents = _parents(fn)
    out: dict[str, tuple[str, str, str, int]] = {}
    for node in ast.walk(fn):
        if not isinstance(node, ast.Assign) or node.lineno <= after:
            continue
        for item in node.targets:
            if not _is_item(item, target):
                continue
            key = item.slice.value  # type: ignore[attr-defined]
            tests: list[ast.expr] = []
            child: ast.AST = node
            while child in parents and child is not fn:
                parent = parents[child]
                if isinstance(parent, ast.If):
                    tests.insert(
                        0,
                        parent.test
                        if child in parent.body
                        else ast.UnaryOp(ast.Not(), parent.test),
                    )
                child = parent
            if any(_reads(e, names, key, local) for e in (node.value, *tests)):
                continue
            always = _always(fn.body, target, key)
            condition = "" if always else " and ".join(ast.unparse(e) for e in tests)
            reads = "" if always else _setting(ast.Tuple(tests), worker, fn)
            if key not in out or (out[key][0] and not condition):
                out[key] = (condition, reads, file, node.lineno)
    return out


def worker_calls(root: Path) -> dict[str, Any]:
    """How a NeMo-RL checkout's vLLM workers build the engine's arguments."""
    sync = _Worker(ast.parse((root / WORKER_PY).read_text()))
    asynchronous = _Worker(ast.parse((root / ASYNC_WORKER_PY).read_text()))
    found = sync.spread_call()
    assert found is not None, f"{root / WORKER_PY}: no call spreads **vllm_kwargs"
    fn, call, spread, result = found
    passed = {
        kw.arg: (_setting(kw.value, sync, fn), kw.value.lineno)
        for kw in call.keywords
        if kw.arg is not None
    }
    names = {spread, result}
    replaced = {
        k: (*v, "")
        for k, v in (
            _replaced(sync, fn, result, names, WORKER_PY, call.end_lineno or 0)
            | _replaced(sync, fn, spread, names, WORKER_PY)
        ).items()
    }
    # The methods the result is handed to (self._create_engine(llm_kwargs)), in either worker:
    # the sync engine's start or the async one's.
    handed = {
        ast.unparse(node.func).removeprefix("self.")
        for node in ast.walk(fn)
        if isinstance(node, ast.Call)
        and ast.unparse(node.func).startswith("self.")
        and any(ast.unparse(a) == result for a in node.args)
    }
    popped: dict[str, dict[str, tuple[str, int, str]]] = {}
    for worker, file, engine in (
        (sync, WORKER_PY, "sync"),
        (asynchronous, ASYNC_WORKER_PY, "async"),
    ):
        for name in sorted(handed):
            for method in worker.methods.get(name, []):
                if len(method.args.args) < 2:
                    continue
                param = method.args.args[1].arg
                for key, value in _replaced(worker, method, param, {param}, file).items():
                    replaced.setdefault(key, (*value, engine))
                for field, key, line in _nested_pops(method, param):
                    popped.setdefault(field, {})[key] = (file, line, engine)
    return {
        "file": WORKER_PY,
        "line": call.lineno,
        "passed": passed,
        "as_is": sorted(
            kw.arg
            for kw in call.keywords
            if kw.arg is not None and passed[kw.arg][0] and _as_is(kw.value, sync, fn)
        ),
        "replaced": replaced,
        "popped": popped,
        "serving_chat": serving_chat(root),
    }


SERVING_SETTING = "http_server_serving_chat_kwargs"


def serving_chat(root: Path) -> dict[str, Any]:
    """How the async worker builds its HTTP server's chat endpoint from
    ``vllm_cfg.http_server_serving_chat_kwargs``: the name the settings are merged into, the
    keys it writes over them itself (``.update(dict(k=...))``: the user's value replaced) and
    the keys it takes out before the call (``.pop("k")``: accepted, not passed on)."""
    worker = _Worker(ast.parse((root / ASYNC_WORKER_PY).read_text()))
    for fn in (f for fs in worker.methods.values() for f in fs):
        for node in ast.walk(fn):
            if (
                isinstance(node, ast.Assign)
                and SERVING_SETTING in ast.unparse(node.value)
                and isinstance(node.targets[0], ast.Name)
            ):
                merged, line = node.targets[0].id, node.lineno
                break
        else:
            continue
        replaced: dict[str, int] = {}
        popped: dict[str, int] = {}
        for node in ast.walk(fn):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
                continue
            if ast.unparse(node.func.value) != merged:
                continue
            if node.func.attr == "update" and node.args and isinstance(node.args[0], ast.Call):
                replaced |= {k.arg: k.lineno for k in node.args[0].keywords if k.arg}
            if node.func.attr == "pop" and node.args and isinstance(node.args[0], ast.Constant):
                popped[str(node.args[0].value)] = node.lineno
        return {
            "file": ASYNC_WORKER_PY,
            "line": line,
            "replaced": replaced,
            "popped": popped,
        }
    raise AssertionError(f"{root / ASYNC_WORKER_PY}: nothing reads {SERVING_SETTING}")


def _nested_pops(fn: ast.FunctionDef, param: str) -> list[tuple[str, str, int]]:
    """Keys the worker takes out of a mapping it reads from the engine's arguments before the
    engine sees it (``cc = dict(llm_kwargs["compilation_config"])``, then ``cc.pop("key")``):
    (the argument, the key, the line)."""
    copies: dict[str, str] = {}
    for node in ast.walk(fn):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
            continue
        target, value = node.targets[0], node.value
        if isinstance(value, ast.Call) and ast.unparse(value.func) == "dict" and value.args:
            value = value.args[0]
        if (
            isinstance(target, ast.Name)
            and isinstance(value, ast.Subscript)
            and ast.unparse(value.value) == param
            and isinstance(value.slice, ast.Constant)
            and isinstance(value.slice.value, str)
        ):
            copies[target.id] = value.slice.value
    return [
        (copies[node.func.value.id], str(node.args[0].value), node.lineno)
        for node in ast.walk(fn)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "pop"
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id in copies
        and node.args
        and isinstance(node.args[0], ast.Constant)
    ]


# --- the modules --------------------------------------------------------------------------------


def generate(reference: Path | None = None) -> dict[str, str]:
    """Each output's path (under the checkout) and its text."""
    reference = reference or reference_dir()
    pinned = pins()
    source = UpstreamSource.from_tree(reference / VLLM / "vllm")
    engine = engine_fields(source, ENGINE_ARGS)
    async_only = {
        k: v for k, v in engine_fields(source, ASYNC_ENGINE_ARGS).items() if k not in engine
    }
    params, dropped = llm_parameters(source)
    vllm_text = python_header(
        TOOL,
        [VLLM],
        pinned,
        [ARG_UTILS, LLM_PY, SERVING_CHAT_PY, "vllm/config/*.py"],
        "vLLM 0.25.1's engine arguments. Each type is the annotation's text\n"
        '(recipekit.upstream.annotations.type_text; "Any" where the source cannot tell, so that\n'
        "no check refuses what vLLM takes), with None where the default is None; the bounds\n"
        "are the pydantic Field(gt=, ge=, lt=, le=) of the config class field the argument\n"
        "stands for, declared where the last item says.",
    )
    field = "dict[str, tuple[str, dict[str, float], int, str]]"
    vllm_text += "\n" + python_dict(
        "ENGINE_ARGS",
        f"EngineArgs' fields ({ARG_UTILS}): name -> (type, bounds, line, bounds' file:line)",
        field,
        engine,
    )
    vllm_text += "\n" + python_dict(
        "ASYNC_ENGINE_ARGS",
        "AsyncEngineArgs' own fields (it takes EngineArgs' too)",
        field,
        async_only,
    )
    vllm_text += "\n" + python_dict(
        "NESTED_CONFIGS",
        "EngineArgs fields typed as a vLLM @config class (a pydantic dataclass that forbids "
        "extra keys, vllm/config/utils.py): a mapping given becomes the class. name -> its "
        "class, file:line, whether it takes undeclared keys, and its fields: name -> (type, "
        "bounds, line)",
        "dict[str, dict[str, Any]]",
        nested_configs(source, ENGINE_ARGS),
    )
    vllm_text += "\n" + python_dict(
        "LLM_PARAMETERS",
        f"LLM.__init__'s own parameters ({LLM_PY}; the rest of its **kwargs go to "
        "EngineArgs): name -> (type, line)",
        "dict[str, tuple[str, int]]",
        params,
    )
    vllm_text += "\n" + python_dict(
        "SERVING_CHAT_PARAMETERS",
        f"OpenAIServingChat.__init__'s parameters ({SERVING_CHAT_PY}), the chat endpoint "
        "of the HTTP server NeMo-RL's async worker starts: name -> (type, line)",
        "dict[str, tuple[str, int]]",
        serving_chat_parameters(source),
    )
    vllm_text += "\n" + python_dict(
        "LLM_DROPPED",
        "Keys LLM.__init__ pops from its **kwargs (accepted, deprecated and ignored) -> line",
        "dict[str, int]",
        dropped,
    )

    workers = {label.split("/", 1)[1]: worker_calls(reference / label) for label in NEMO_RL}
    workers_text = python_header(
        TOOL,
        list(NEMO_RL),
        pinned,
        [WORKER_PY, ASYNC_WORKER_PY],
        "How each pinned NeMo-RL's vLLM worker spreads policy.generation.vllm_kwargs into the\n"
        "engine's arguments (vllm.LLM(**llm_kwargs) in the sync worker, AsyncEngineArgs in the\n"
        "async one), by branch:\n"
        "- line: the call that spreads **vllm_kwargs;\n"
        "- passed: the keywords the call gives itself (a duplicate is a TypeError) -> (the\n"
        '  setting the value is read from, "" for none; line);\n'
        "- as_is: the passed keywords whose value is their setting's, as it is;\n"
        '- replaced: keys NeMo-RL writes into the arguments itself -> (the condition, "" for\n'
        '  always; the setting it reads, "" for none; file; line; "sync" or "async" where only\n'
        "  that engine's start writes it, \"\" for both). Writes that read the key's own value\n"
        "  (normalising it) are left out.\n"
        "- popped: keys the worker takes out of a mapping argument before the engine builds its\n"
        '  config class from it -> argument -> key -> (file, line, "sync" or "async").\n'
        "- serving_chat: how the async worker builds its HTTP server's chat endpoint from\n"
        "  vllm_cfg.http_server_serving_chat_kwargs: file, line of the merge, the keys it writes\n"
        "  over (replaced) and takes out first (popped) -> line.",
    )
    workers_text += "\n" + python_dict(
        "WORKERS", "branch -> what its worker does", "dict[str, dict[str, Any]]", workers
    )
    workers_text = workers_text.replace(
        "# ruff: noqa: E501\n", "# ruff: noqa: E501\n\nfrom typing import Any\n", 1
    )
    vllm_text = vllm_text.replace(
        "# ruff: noqa: E501\n", "# ruff: noqa: E501\n\nfrom typing import Any\n", 1
    )
    return {
        str(OUTPUTS["vllm"].relative_to(CHECKOUT)): vllm_text,
        str(OUTPUTS["workers"].relative_to(CHECKOUT)): workers_text,
    }


def main() -> int:
    return write_or_check(generate(), TOOL, __doc__)


if __name__ == "__main__":
    raise SystemExit(main())
