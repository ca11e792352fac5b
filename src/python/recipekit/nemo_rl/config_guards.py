"""NeMo-RL's pydantic config classes' own checks, replayed on the config a stage renders.

Each runner of super-v3.5-posttraining builds its master config with ``MasterConfig(**config)``,
and pydantic builds every model the config nests with it, running each one's
``@model_validator(mode="after")`` methods (``AsyncPPOConfig``'s, the single controller's
``AsyncRLConfig`` and its blocks', ...). ``generated/config_guards.json``
(``tools/generate_nemo_rl_guards.py``) holds those methods as programs, with each model's
defaults and the models it nests. The check walks the rendered config from the master config's
class down the classes the declared table (``recipekit.upstream.declared``) names for each
mapping, and replays each model's program on its values: what the config gives, else the
model's default (a nested model's own defaults where it is left out). A value only the job
resolves (an interpolation) has none, so a check that reads it is not evaluated.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from recipekit import checking
from recipekit.errors import Issue, join_path
from recipekit.nemo_rl import SUPER35_TYPES, runs_super35
from recipekit.nemo_rl.checks.key_needs import rendered_config
from recipekit.upstream import conditions
from recipekit.upstream.declared import members, table
from recipekit.upstream.replay import Reached, constant_defaults, described, programs, replay

TABLE = Path(__file__).parent / "generated" / "config_guards.json"
AT = f"@ {SUPER35_TYPES.split('/')[1]}"


def tables() -> dict[str, dict[str, Any]]:
    """Qualified class -> its defaults, nested models and program."""
    return programs(TABLE)


def _opaque(value: Any) -> bool:
    """Whether only the job can tell the value: it holds an interpolation."""
    if isinstance(value, list | tuple):
        return any(_opaque(v) for v in value)
    return isinstance(value, str) and "${" in value


def model_values(qualified: str, given: Mapping[str, Any] | None) -> conditions.Model:
    """The values pydantic builds the model ``qualified`` with from ``given``, as far as the
    table tells: each given value (a nested model's as its own values), else the default."""
    entry = tables()[qualified]
    values = conditions.Model(constant_defaults(TABLE, qualified))
    given = given or {}
    for field, held in entry["nested"].items():
        default = entry["defaults"].get(field) or ""
        if held in tables() and field not in given and default == f"{held.split(':')[1]}()":
            values[field] = model_values(held, None)
    for key, value in given.items():
        held = entry["nested"].get(key)
        if _opaque(value):
            values.pop(key, None)
        elif held in tables() and isinstance(value, dict):
            values[key] = model_values(held, value)
        else:
            values[key] = value
    return values


def reached(rendered: Mapping[str, Any], top: str) -> Iterator[tuple[str, str, Reached]]:
    """(the class's key path, the class, what the replay reached) for each model a config
    built from ``rendered`` as the class ``top`` validates, where no hand-written rule mirrors
    the check."""
    yield from _walk(rendered, top, "")


def _walk(
    value: Mapping[str, Any], qualified: str, path: str
) -> Iterator[tuple[str, str, Reached]]:
    entry = tables().get(qualified)
    if entry is not None and entry["program"]:
        for found in replay(entry["program"], dict(model_values(qualified, value))):
            if not described(found.step)[2]:
                yield path, qualified, found
    declared = table(SUPER35_TYPES).classes.get(qualified)
    if declared is None:
        return
    for key, held in value.items():
        spec = declared.keys.get(str(key))
        if isinstance(held, dict) and spec is not None and len(spec.nested) == 1:
            yield from _walk(held, spec.nested[0], join_path(path, str(key)))


def _issue(path: str, qualified: str, found: Reached, given: Mapping[str, Any]) -> Issue | None:
    """The refusal at the first key the config sets that the failing test itself reads (the
    last operand of the condition: the conditions on its way come first), else at the last key
    it sets that the condition reads; None where it reads none: the defaults alone fail, which
    is upstream's to fix."""
    where, shown, _ = described(found.step)
    own = [
        c
        for c in conditions.read(conditions.last_conjunct(shown))
        if _given(given, c) is not _ABSENT
    ]
    read = [c for c in conditions.read(shown) if _given(given, c) is not _ABSENT]
    if not (own or read):
        return None
    chain = own[0] if own else read[-1]
    value = _given(given, chain)
    return Issue(
        join_path(path, chain),
        f"NeMo-RL refuses the config when it loads: {qualified.split(':')[1]} raises "
        f"{found.step[2]} where `{shown}` ({where} {AT})",
        value=value,
        hint=f"given: {conditions.given(shown, found.values)}",
    )


def _given(given: Mapping[str, Any], chain: str) -> Any:
    """The value the config sets at the dotted ``chain``; _ABSENT where it sets none there (or
    sets a whole mapping)."""
    value: Any = given
    for part in chain.split("."):
        value = value.get(part, _ABSENT) if isinstance(value, dict) else _ABSENT
    return _ABSENT if isinstance(value, dict) else value


_ABSENT = object()


def config_validators_hold(subject: Any) -> Iterator[Issue]:
    """The after-validators of the pydantic models a Super 3.5 runner's ``MasterConfig(**config)``
    builds (``generated/config_guards.json``), replayed on the rendered config: a GRPO check
    (``subject`` a check context) and one of the other entry points (``subject`` the config)."""
    config = subject.config if isinstance(subject, checking.CheckContext) else subject
    upstream = getattr(type(config), "upstream", None)
    if not runs_super35(config) or upstream is None:
        return
    rendered = rendered_config(config)
    if rendered is None:
        return
    top = members(upstream)[0].qualified
    for path, qualified, found in reached(rendered, top):
        section = rendered
        for part in path.split(".") if path else ():
            section = section[part]
        issue = _issue(path, qualified, found, section)
        if issue is not None:
            yield issue
