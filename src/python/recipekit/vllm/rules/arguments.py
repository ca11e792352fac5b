"""The arguments a user gives the engine, against what vLLM 0.25.1 declares (read from the
wheel by ``tools/generate_vllm_kwargs.py``: ``generated/engine_args_0_25_1.py``): each is an
argument of the engine class the framework builds, of its declared type and within its
pydantic bounds, and a mapping for one of vLLM's ``@config`` classes holds only that class's
fields."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from recipekit.errors import Issue, did_you_mean
from recipekit.upstream.values import OPAQUE, expected_type, plain
from recipekit.vllm.engine import EngineStart, engine_of
from recipekit.vllm.rules import AT

_BOUNDS = {"gt": ">", "ge": ">=", "lt": "<", "le": "<="}
ARG_UTILS = "vllm/engine/arg_utils.py"
LLM = "vllm/entrypoints/llm.py"

# (type, bounds, where the type is declared, where the bounds are)
Argument = tuple[str, dict[str, float], str, str]


def engine_arguments(asynchronous: bool) -> tuple[str, dict[str, Argument]]:
    """The engine class a framework builds (``AsyncEngineArgs``, or ``vllm.LLM`` which hands
    EngineArgs on) and each argument it takes."""
    # The table is imported where a user gives an argument: most plans give none.
    from recipekit.vllm.generated import engine_args_0_25_1 as declared

    fields = dict(declared.ENGINE_ARGS) | (declared.ASYNC_ENGINE_ARGS if asynchronous else {})
    found = {k: (t, b, f"{ARG_UTILS}:{line}", at) for k, (t, b, line, at) in fields.items()}
    if asynchronous:
        return f"AsyncEngineArgs ({ARG_UTILS})", found
    for key, (text, line) in declared.LLM_PARAMETERS.items():
        # LLM's own annotation, and EngineArgs' bounds where it hands the value on.
        bounds, at = found[key][1::2] if key in found else ({}, "")
        found[key] = (text, bounds, f"{LLM}:{line}", at)
    found |= {k: ("Any", {}, f"{LLM}:{line}", "") for k, line in declared.LLM_DROPPED.items()}
    return f"vllm.LLM ({LLM}) or EngineArgs ({ARG_UTILS})", found


def _outside(value: Any, bounds: dict[str, float]) -> str:
    """The bounds ``value`` breaks, as text ("" when it keeps them or is no number)."""
    if not isinstance(value, int | float) or isinstance(value, bool) or not bounds:
        return ""
    ok = {
        "gt": value > bounds.get("gt", float("-inf")),
        "ge": value >= bounds.get("ge", float("-inf")),
        "lt": value < bounds.get("lt", float("inf")),
        "le": value <= bounds.get("le", float("inf")),
    }
    if all(ok.values()):
        return ""
    return " and ".join(f"{_BOUNDS[b]} {bounds[b]:g}" for b in _BOUNDS if b in bounds)


def _typed(
    key: str, raw: Any, text: str, bounds: dict[str, float], at: tuple[str, str]
) -> Iterator[Issue]:
    """A value of the declared type ``text`` (declared at ``at[0]``) and within ``bounds``
    (at ``at[1]``)."""
    value = plain(raw)
    if expected := expected_type(value, text):
        yield Issue(key, f"vLLM takes {expected} ({at[0]} {AT})", value=raw)
    elif value is not OPAQUE and (broken := _outside(value, bounds)):
        yield Issue(key, f"vLLM refuses it: must be {broken} ({at[1]} {AT})", value=raw)


def given_arguments_are_engine_arguments(ctx: Any) -> Iterator[Issue]:
    """vllm/engine/arg_utils.py (EngineArgs, AsyncEngineArgs), vllm/entrypoints/llm.py
    (LLM.__init__), vllm/config/*.py (pydantic Field bounds): each argument the user gives is one
    of the engine the framework builds, of the declared type and within the declared bounds.
    One the framework passes itself is a duplicate, for the framework's own rule."""
    engine = engine_of(ctx)
    if engine is None or not engine.given:
        return
    name, arguments = engine_arguments(engine.asynchronous)
    for key, raw in engine.given.items():
        if key in engine.passed:
            continue
        if key not in arguments:
            yield Issue(
                engine.key(key),
                f"not an argument of {name} {AT}: a TypeError when the engine starts",
                hint=did_you_mean(key, arguments, what="arguments"),
            )
            continue
        text, bounds, declared_at, bounded_at = arguments[key]
        yield from _typed(engine.key(key), raw, text, bounds, (declared_at, bounded_at))


def _config_mapping(engine: EngineStart, key: str, raw: dict[str, Any]) -> Iterator[Issue]:
    from recipekit.vllm.generated.engine_args_0_25_1 import NESTED_CONFIGS

    nested = NESTED_CONFIGS.get(key)
    if nested is None:
        return
    fields, where = nested["fields"], f"{nested['class']}, {nested['file']}"
    for sub, sub_raw in raw.items():
        if sub in engine.taken_out.get(key, ()):
            continue
        path = engine.key(f"{key}.{sub}")
        if sub not in fields:
            if not nested["extra"]:
                yield Issue(
                    path,
                    f"not a field of {where} {AT}, which forbids extra fields: pydantic "
                    "refuses it when the engine starts",
                    hint=did_you_mean(str(sub), fields, what="fields"),
                )
            continue
        text, bounds, line = fields[sub]
        at = f"{nested['file'].split(':')[0]}:{line}"
        yield from _typed(path, sub_raw, text, bounds, (at, at))


def given_config_mappings_hold_their_fields(ctx: Any) -> Iterator[Issue]:
    """vllm/config/utils.py, ``config``: an engine argument typed as one of vLLM's ``@config``
    classes (compilation_config, kv_transfer_config, ...) turns a mapping into that class, a
    pydantic dataclass that forbids extra fields: each key must be a field, of its declared type
    and within its bounds, or the engine does not start."""
    engine = engine_of(ctx)
    if engine is None:
        return
    for key, raw in engine.given.items():
        if isinstance(raw, dict):
            yield from _config_mapping(engine, key, raw)
