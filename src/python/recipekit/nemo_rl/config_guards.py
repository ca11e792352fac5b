"""NeMo-RL's pydantic config classes, checked on the config a stage renders as pydantic builds
them: their required fields, and their own validators, replayed.

Each runner of super-v3.5-posttraining builds its master config with ``MasterConfig(**config)``,
and pydantic builds every model the config nests with it, running each one's
``@model_validator(mode="after")`` methods (``AsyncPPOConfig``'s, the single controller's
``AsyncRLConfig`` and its blocks', ...). Some sections NeMo-RL validates on its own later (GRPO's
setup builds ``DynamoConfig`` from ``policy.generation`` with ``backend: dynamo``): the table's
``boundaries``. ``generated/config_guards.json`` (``tools/generate_nemo_rl_guards.py``) holds
each model's validators as programs, its defaults, required fields and nested models.

The check walks the rendered config from the master config's class down the classes the
declared table (``recipekit.upstream.declared``) names for each mapping, and each boundary's
section from its model, and replays each model's program on its values: what the config gives,
else the model's default (a nested model's own defaults where it is left out). A value only the
job resolves (an interpolation), or one NeMo-RL writes before a boundary validates, has none, so
a check that reads it is not evaluated, and a required key it writes is not asked for.
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs

from recipekit import checking
from recipekit.errors import Issue, join_path
from recipekit.nemo_rl import SUPER35_TYPES, runs_super35
from recipekit.nemo_rl.checks.key_needs import rendered_config
from recipekit.upstream import conditions
from recipekit.upstream.declared import members, table
from recipekit.upstream.replay import Reached, constant_defaults, described, programs, replay

TABLE = Path(__file__).parent / "generated" / "config_guards.json"
AT = f"@ {SUPER35_TYPES.split('/')[1]}"
# What a model's program reads as the keys it takes without declaring them (pydantic's).
MODEL_EXTRA = "model_extra"
# A value NeMo-RL writes before a boundary validates it: unknown to the replay.
_WRITTEN = "${written by NeMo-RL}"


def tables() -> dict[str, dict[str, Any]]:
    """Qualified class -> its defaults, required fields, nested models and program."""
    return programs(TABLE)


@functools.cache
def boundaries() -> tuple[dict[str, Any], ...]:
    """The models NeMo-RL validates a section with on its own (``generated/config_guards``)."""
    (source,) = json.loads(TABLE.read_text(encoding="utf-8"))["sources"].values()
    return tuple(source["boundaries"])


def _opaque(value: Any) -> bool:
    """Whether only the job can tell the value: it holds an interpolation."""
    if isinstance(value, list | tuple):
        return any(_opaque(v) for v in value)
    return isinstance(value, str) and "${" in value


def model_values(qualified: str, given: Mapping[str, Any] | None) -> conditions.Model:
    """The values pydantic builds the model ``qualified`` with from ``given``, as far as the
    table tells: each given value (a nested model's as its own values), else the default; and
    ``model_extra``, the given keys it does not declare."""
    entry = tables()[qualified]
    values = conditions.Model(constant_defaults(TABLE, qualified))
    given = given or {}
    for field, held in entry["nested"].items():
        default = entry["defaults"].get(field) or ""
        if held in tables() and field not in given and default == f"{held.split(':')[1]}()":
            values[field] = model_values(held, None)
    extra = {}
    for key, value in given.items():
        held = entry["nested"].get(key)
        if _opaque(value):
            values.pop(key, None)
        elif key not in entry["defaults"]:
            extra[key] = value
        elif held in tables() and isinstance(value, dict):
            values[key] = model_values(held, value)
        else:
            values[key] = value
    if not any(_opaque(v) for k, v in given.items() if k not in entry["defaults"]):
        values[MODEL_EXTRA] = extra
    return values


@attrs.frozen
class Found:
    """What a model refuses: a check its program reached (``reached``), or a required key the
    config leaves out (``missing``), at the model's key path ``path``; ``when``: where NeMo-RL
    builds the model."""

    path: str
    model: str
    when: str
    reached: Reached | None = None
    missing: str = ""


# Where NeMo-RL builds the master config's models.
WHEN_LOADED = "when the config loads"


def reached(
    rendered: Mapping[str, Any],
    top: str,
    *,
    written: frozenset[str] = frozenset(),
    path: str = "",
    when: str = WHEN_LOADED,
) -> Iterator[Found]:
    """Each refusal of the models a config built from ``rendered`` as the class ``top``
    validates, where no hand-written rule mirrors the check; ``written``: the key paths
    (under ``rendered``) NeMo-RL writes before it validates, whose absence is not refused."""
    yield from _walk(rendered, top, path, written, "", when)


def _walk(
    value: Mapping[str, Any],
    qualified: str,
    path: str,
    written: frozenset[str],
    under: str,
    when: str,
) -> Iterator[Found]:
    entry = tables().get(qualified)
    if entry is not None:
        for key in entry["required"]:
            at = join_path(under, key)
            if key not in value and not any(w == at or w.startswith(at + ".") for w in written):
                yield Found(path, qualified, when, missing=key)
        if entry["program"]:
            for found in replay(entry["program"], dict(model_values(qualified, value))):
                if not described(found.step)[2]:
                    yield Found(path, qualified, when, found)
        nested = entry["nested"]
    else:
        declared = table(SUPER35_TYPES).classes.get(qualified)
        keys = declared.keys if declared is not None else {}
        nested = {k: s.nested[0] for k, s in keys.items() if len(s.nested) == 1}
    for key, held in value.items():
        model = nested.get(str(key))
        if isinstance(held, dict) and model is not None:
            at = join_path(under, str(key))
            yield from _walk(held, model, join_path(path, str(key)), written, at, when)


def _issue(found: Found, given: Mapping[str, Any]) -> Issue:
    """The refusal at the key pydantic names, or the first key the config sets that a failing
    check's own test reads (the last operand of its condition: the conditions on its way come
    first), else the last key it sets that the condition reads, else (the condition reads what
    the method made of the values) the model's section."""
    name = found.model.split(":")[1]
    if found.missing:
        return Issue(
            join_path(found.path, found.missing),
            f"required key is missing: NeMo-RL builds {name} ({tables()[found.model]['file']} "
            f"{AT}) {found.when}",
        )
    assert found.reached is not None
    where, shown, _ = described(found.reached.step)
    own = [c for c in conditions.read(conditions.last_conjunct(shown)) if _set(given, c)]
    read = [c for c in conditions.read(shown) if _set(given, c)]
    chain = own[0] if own else read[-1] if read else ""
    return Issue(
        join_path(found.path, chain) or name,
        f"NeMo-RL refuses it {found.when}: {name} raises {found.reached.step[2]} "
        f"where `{shown}` ({where} {AT})",
        value=_given(given, chain) if chain else None,
        hint=f"given: {conditions.given(shown, found.reached.values)}",
    )


_ABSENT = object()


def _given(given: Mapping[str, Any], chain: str) -> Any:
    """The value the config sets at the dotted ``chain``, read as the model reads it (a key it
    takes without declaring it through ``model_extra``); _ABSENT where it sets none there (or
    sets a whole mapping)."""
    value: Any = given
    for part in chain.split("."):
        if part == MODEL_EXTRA:
            continue
        value = value.get(part, _ABSENT) if isinstance(value, dict) else _ABSENT
    return _ABSENT if isinstance(value, dict) else value


def _set(given: Mapping[str, Any], chain: str) -> bool:
    return _given(given, chain) is not _ABSENT


def _section(rendered: Mapping[str, Any], path: str) -> Any:
    value: Any = rendered
    for part in path.split(".") if path else ():
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _written_over(section: dict[str, Any], paths: list[str]) -> dict[str, Any]:
    """A copy of ``section`` whose values at ``paths`` (where their mapping is there) are ones
    only the job knows."""
    section = copy.deepcopy(section)
    for path in paths:
        *parents, leaf = path.split(".")
        owner: Any = section
        for part in parents:
            owner = owner.get(part) if isinstance(owner, dict) else None
        if isinstance(owner, dict):
            owner[leaf] = _WRITTEN
    return section


def refusals(rendered: Mapping[str, Any], top: str) -> Iterator[Issue]:
    """The issues of the models a Super 3.5 runner builds from ``rendered`` (``top``: its
    master config's class), and of each boundary whose section the config selects."""
    found = [(f, rendered) for f in reached(rendered, top)]
    for boundary in boundaries():
        section = _section(rendered, boundary["path"])
        if isinstance(section, dict) and section.get(boundary["key"]) == boundary["value"]:
            prepared = _written_over(section, boundary["written_before"])
            found += [
                (f, rendered)
                for f in reached(
                    prepared,
                    boundary["model"],
                    written=frozenset(boundary["written_before"]),
                    path=boundary["path"],
                    when=_at(boundary),
                )
            ]
    for each, whole in found:
        yield _issue(each, _section(whole, each.path) or {})


def _at(boundary: Mapping[str, str]) -> str:
    """Where NeMo-RL validates a boundary: ``in grpo.py's setup (backend: dynamo)``."""
    module, _, function = boundary["by"].partition(":")
    selected = f"{boundary['key']}: {boundary['value']}"
    return f"in {module.rsplit('.', 1)[1]}.py's {function} ({selected})"


def config_validators_hold(subject: Any) -> Iterator[Issue]:
    """The pydantic models a Super 3.5 runner builds from the config (``MasterConfig(**config)``
    and the boundaries NeMo-RL validates on its own), checked as pydantic builds them: a GRPO
    check (``subject`` a check context) and one of the other entry points (``subject`` the
    config)."""
    config = subject.config if isinstance(subject, checking.CheckContext) else subject
    upstream = getattr(type(config), "upstream", None)
    if not runs_super35(config) or upstream is None:
        return
    rendered = rendered_config(config)
    if rendered is not None:
        yield from refusals(rendered, members(upstream)[0].qualified)
