"""Keys NeMo-RL reads without a default once another key turns a feature on (issue 40).

``generated/key_needs.json`` (``tools/generate_key_needs.py``, read from the pinned sources) holds
each such read: the sections it may apply to, the keys it needs there, the condition it stands
under, and where it is. A plan whose rendered config makes the condition true and lacks a needed
key gets a warning naming the key, the condition and the upstream line: a KeyError there when that
code runs (``logger.tensorboard_enabled: true`` without a ``logger.tensorboard`` section fails in
NeMo-RL's ``Logger.__init__``). A warning, not a refusal: the read's module or function may not
run for this stage, which the table does not know.

A condition that reads a key the config lacks is not taken as true: NeMo-RL would fail on that
read first, or the key's own guard (``"k" in cfg and ...``) keeps the read from running.

The table's ``every_run`` reads (``tools/every_run.py``) stand under no condition, in functions
every run of its entry point runs (``grpo.py``'s ``setup``, ``CheckpointManager.__init__``): a
stage of that entry point whose config lacks one is refused, since NeMo-RL stops with a KeyError
before it trains.
"""

from __future__ import annotations

import functools
import json
import operator
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from recipekit.convert import to_dict
from recipekit.errors import Issue
from recipekit.generated_tables import sources
from recipekit.nemo_rl.checks.context import Check, CheckContext
from recipekit.nemo_rl.rule_lines import VERSIONS

TABLE = Path(__file__).parent.parent / "generated" / "key_needs.json"
_MISSING = object()
_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "is": operator.is_,
    "is not": operator.is_not,
    ">": operator.gt,
    ">=": operator.ge,
    "<": operator.lt,
    "<=": operator.le,
    "in": lambda a, b: a in b,
    "not in": lambda a, b: a not in b,
}


class _Unknown(Exception):
    """The condition reads a key the config lacks, or compares values that do not compare."""


@functools.cache
def pairs(label: str) -> tuple[dict[str, Any], ...]:
    found = sources(TABLE)
    return tuple(found[label]["pairs"]) if label in found else ()


def _at(section: Any, path: list[str]) -> Any:
    for key in path:
        if not isinstance(section, Mapping) or key not in section:
            return _MISSING
        section = section[key]
    return section


def _holder(section: Any, path: list[str]) -> tuple[Mapping[str, Any], str]:
    """The mapping that holds ``path``'s last key, and that key; _Unknown where there is none."""
    *outer, key = path
    holder = _at(section, outer)
    if not isinstance(holder, Mapping):
        raise _Unknown
    return holder, key


def _value(section: Any, spec: Mapping[str, Any]) -> Any:
    if "const" in spec:
        return spec["const"]
    if "get" in spec:
        holder, key = _holder(section, spec["get"])
        return holder.get(key, spec["default"])
    found = _at(section, spec["path"])
    if found is _MISSING:
        raise _Unknown
    return found


def holds(section: Any, when: Mapping[str, Any]) -> bool:
    """Whether ``when`` (the generator's JSON) is true of ``section``; _Unknown where it reads
    a key the section lacks."""
    if "not" in when:
        return not holds(section, when["not"])
    if "and" in when:
        return all(holds(section, w) for w in when["and"])
    if "or" in when:
        return any(holds(section, w) for w in when["or"])
    if "has" in when:
        holder, key = _holder(section, when["has"])
        return key in holder
    if "truthy" in when:
        return bool(_value(section, when["truthy"]))
    left, right = _value(section, when["left"]), _value(section, when["right"])
    try:
        return bool(_COMPARE[when["cmp"]](left, right))
    except TypeError:
        raise _Unknown from None


def _shown(when: Mapping[str, Any], prefix: str) -> str:
    """The condition as a reader writes it, with full key paths."""

    def key(path: list[str]) -> str:
        return ".".join([prefix, *path] if prefix else path)

    def value(spec: Mapping[str, Any]) -> str:
        if "const" in spec:
            return json.dumps(spec["const"])
        return key(spec["get"] if "get" in spec else spec["path"])

    if "not" in when:
        inner = when["not"]
        if "has" in inner:
            return f"{key(inner['has'])} is absent"
        return f"not ({_shown(inner, prefix)})"
    if "and" in when or "or" in when:
        op = "and" if "and" in when else "or"
        return f" {op} ".join(_shown(w, prefix) for w in when[op])
    if "has" in when:
        return f"{key(when['has'])} is set"
    if "truthy" in when:
        return value(when["truthy"])
    return f"{value(when['left'])} {when['cmp']} {value(when['right'])}"


def missing_keys(config: Mapping[str, Any], label: str) -> Iterator[Issue]:
    """A warning for each key of the rendered ``config`` that a pair of ``label`` needs and the
    config lacks, where the pair's condition holds."""
    return missing(config, pairs(label), label)


def missing(
    config: Mapping[str, Any], found: Iterable[Mapping[str, Any]], label: str
) -> Iterator[Issue]:
    """``missing_keys`` for the pairs ``found`` (of the pinned source ``label``)."""
    seen: set[str] = set()
    for pair in found:
        for at in pair["at"]:
            section = _at(config, at)
            if not isinstance(section, Mapping):
                continue
            prefix = ".".join(at)
            try:
                if not holds(section, pair["when"]):
                    continue
            except _Unknown:
                continue
            holder: Any = section
            for depth, key in enumerate(pair["needs"], 1):
                if not isinstance(holder, Mapping):
                    break
                if key not in holder:
                    path = ".".join([*at, *pair["needs"][:depth]])
                    if path not in seen:
                        seen.add(path)
                        yield Issue(
                            path,
                            f"is absent, and NeMo-RL reads it without a default where "
                            f"{_shown(pair['when'], prefix)} ({pair['scope']}, {pair['file']}:"
                            f"{pair['line']} @ {VERSIONS[label]}): a KeyError if that "
                            "code runs for this stage",
                            hint=f"set {path}, or change what turns it on",
                        )
                    break
                holder = holder[key]


@functools.cache
def every_run(label: str) -> dict[str, tuple[dict[str, Any], ...]]:
    """What every run of each of the label's runners reads without a default, by runner."""
    found = sources(TABLE).get(label, {}).get("every_run", {})
    return {entry: tuple(reads) for entry, reads in found.items()}


def unread_keys(config: Mapping[str, Any], label: str, entry_point: str) -> Iterator[Issue]:
    """An error for each key of the rendered ``config`` that every run of ``entry_point``
    reads without a default and the config lacks (none for a runner the table has not read)."""
    seen: set[str] = set()
    for read in every_run(label).get(entry_point, ()):  # by file and line: the first fails
        section = _at(config, read["at"])
        [key] = read["needs"]
        path = ".".join([*read["at"], key])
        if not isinstance(section, Mapping) or key in section or path in seen:
            continue
        seen.add(path)
        yield Issue(
            path,
            f"is absent, and every run of {entry_point} reads it without a default "
            f"({read['scope']}, {read['file']}:{read['line']} @ {VERSIONS[label]}): NeMo-RL "
            "stops with a KeyError before it trains",
            hint=f"set {path}",
        )


# The last typed config rendered and its rendering: both checks of a plan read the same frozen
# config, which is rendered once for them.
_LAST_RENDERED: list[tuple[Any, dict[str, Any] | None]] = []


def rendered_config(config: Any) -> dict[str, Any] | None:
    if _LAST_RENDERED and _LAST_RENDERED[0][0] is config:
        return _LAST_RENDERED[0][1]
    try:
        found = to_dict(config)
    except ValueError:  # a value left underived, which the plan refuses (underived_keys)
        found = None
    rendered = found if isinstance(found, dict) else None
    _LAST_RENDERED[:] = [(config, rendered)]
    return rendered


def unread_in(config: Any, version: str, entry_point: str) -> list[Issue]:
    """``unread_keys`` of a typed config of the NeMo-RL ``version`` (``super-v3.5-posttraining@
    5d63149a``), as NeMo-RL's entry points other than GRPO's check it."""
    rendered = rendered_config(config)
    label = f"nemo-rl/{version.split('@')[0]}"
    return [] if rendered is None else list(unread_keys(rendered, label, entry_point))


def every_run_check(label: str) -> Check:
    """The error check of one pinned NeMo-RL source: keys its entry point always reads."""

    def keys_every_run_reads_are_set(ctx: CheckContext) -> Iterator[Issue]:
        rendered = rendered_config(ctx.config)
        if rendered is not None:
            yield from unread_keys(rendered, label, ctx.entry_point)

    return keys_every_run_reads_are_set


def key_needs_check(label: str) -> Check:
    """The warning check of one pinned NeMo-RL source (``nemo-rl/super-v3``, ...)."""

    def keys_a_feature_needs_are_set(ctx: CheckContext) -> Iterator[Issue]:
        rendered = rendered_config(ctx.config)
        if rendered is not None:
            yield from missing_keys(rendered, label)

    return keys_a_feature_needs_are_set
