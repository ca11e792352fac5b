"""A pinned source's pydantic config models, checked on a rendered config as pydantic builds
them: their required fields, and their own validators, replayed (``recipekit.upstream.replay``).

A framework that builds its config as a pydantic model (NeMo-RL's ``MasterConfig(**config)``)
has pydantic build every model the config nests, running each one's
``@model_validator(mode="after")`` methods; some sections it validates on its own later, with a
model outside that tree (a boundary: the section at a key path, where one of its keys selects
it). A generated table (``tools/generate_nemo_rl_guards.py`` writes NeMo-RL's) holds each model's
validators as programs, its defaults, required fields and nested models, and the boundaries.

``PinnedModels`` walks the rendered config from the master config's class down the classes the
declared table (``recipekit.upstream.declared``) names for each mapping, and each boundary's
section from its model, and replays each model's program on its values: what the config gives,
else the model's default (a nested model's own defaults where it is left out). A value only the
job resolves (an interpolation), or one the framework writes before a boundary validates, has
none, so a check that reads it is not evaluated, and a required key it writes is not asked for.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from recipekit.errors import Issue, join_path
from recipekit.upstream import conditions
from recipekit.upstream.declared import table
from recipekit.upstream.replay import (
    Reached,
    constant_defaults,
    described,
    pinned_source,
    programs,
    replay,
)
from recipekit.upstream.values import OPAQUE, plain

# What a model's program reads as the keys it takes without declaring them (pydantic's).
MODEL_EXTRA = "model_extra"
# A value the framework writes before a boundary validates it: unknown to the replay.
_WRITTEN = "${written by the framework}"
# Where the framework builds the master config's models.
WHEN_LOADED = "when the config loads"


class Found(NamedTuple):
    """What a model refuses: a check its program reached (``reached``), or a required key the
    config leaves out (``missing``), at the model's key path ``path``; ``when``: where the
    framework builds the model. (A named tuple: attrs would compile its methods at every plan's
    start-up.)"""

    path: str
    model: str
    when: str
    reached: Reached | None = None
    missing: str = ""


class PinnedModels(NamedTuple):
    """The models of one generated table (``path``), whose nesting the declared table of the
    pinned source ``label`` tells; ``framework`` and ``at`` say whose they are in a message
    (``NeMo-RL``, ``@ super-v3.5-posttraining``)."""

    path: Path
    label: str
    framework: str
    at: str

    def classes(self) -> dict[str, dict[str, Any]]:
        """Qualified class -> its defaults, required fields, nested models and program."""
        return programs(self.path)

    def boundaries(self) -> tuple[dict[str, Any], ...]:
        """The models the framework validates a section with on its own."""
        return tuple(pinned_source(self.path)["boundaries"])

    def values(self, qualified: str, given: Mapping[str, Any] | None) -> conditions.Model:
        """The values pydantic builds the model ``qualified`` with from ``given``, as far as
        the table tells: each given value (a nested model's as its own values), else the
        default; and ``model_extra``, the given keys it does not declare. A value only the job
        knows has none (in a mapping: ``_known``)."""
        entry = self.classes()[qualified]
        values = conditions.Model(constant_defaults(self.path, qualified))
        given = given or {}
        for field, held in entry["nested"].items():
            default = entry["defaults"].get(field) or ""
            if held in self.classes() and field not in given and default == _made(held):
                values[field] = self.values(held, None)
        extra = {}
        for key, value in given.items():
            held = entry["nested"].get(key)
            if key not in entry["defaults"]:
                extra[key] = value
            elif _opaque(value):
                values.pop(key, None)
            elif held in self.classes() and isinstance(value, dict):
                values[key] = self.values(held, value)
            else:
                values[key] = _known(value)
        values[MODEL_EXTRA] = _known(extra)
        return values

    def reached(
        self,
        rendered: Mapping[str, Any],
        top: str,
        *,
        written: frozenset[str] = frozenset(),
        path: str = "",
        when: str = WHEN_LOADED,
    ) -> Iterator[Found]:
        """Each refusal of the models a config built from ``rendered`` as the class ``top``
        validates, where no hand-written rule mirrors the check; ``written``: the key paths
        (under ``rendered``) the framework writes before it validates, whose absence is not
        refused."""
        yield from self._walk(rendered, top, path, written, "", when)

    def _walk(
        self,
        value: Mapping[str, Any],
        qualified: str,
        path: str,
        written: frozenset[str],
        under: str,
        when: str,
    ) -> Iterator[Found]:
        entry = self.classes().get(qualified)
        if entry is not None:
            for key in entry["required"]:
                at = join_path(under, key)
                if key not in value and not any(w == at or w.startswith(f"{at}.") for w in written):
                    yield Found(path, qualified, when, missing=key)
            if entry["program"]:
                for found in replay(entry["program"], dict(self.values(qualified, value))):
                    if not described(found.step)[2]:
                        yield Found(path, qualified, when, found)
            nested = entry["nested"]
        else:
            declared = table(self.label).classes.get(qualified)
            keys = declared.keys if declared is not None else {}
            nested = {k: s.nested[0] for k, s in keys.items() if len(s.nested) == 1}
        for key, held in value.items():
            model = nested.get(str(key))
            if isinstance(held, dict) and model is not None:
                at = join_path(under, str(key))
                yield from self._walk(held, model, join_path(path, str(key)), written, at, when)

    def refusals(self, rendered: Mapping[str, Any], top: str) -> Iterator[Issue]:
        """The issues of the models the framework builds from ``rendered`` (``top``: its
        master config's class), and of each boundary whose section the config selects."""
        found = list(self.reached(rendered, top))
        for boundary in self.boundaries():
            section = _section(rendered, boundary["path"])
            if isinstance(section, dict) and section.get(boundary["key"]) == boundary["value"]:
                found += self.reached(
                    _written_over(section, boundary["written_before"]),
                    boundary["model"],
                    written=frozenset(boundary["written_before"]),
                    path=boundary["path"],
                    when=_at(boundary),
                )
        for each in found:
            yield self._issue(each, _section(rendered, each.path) or {})

    def _issue(self, found: Found, given: Mapping[str, Any]) -> Issue:
        """The refusal at the key pydantic names, or the first key the config sets that a
        failing check's own test reads (the last operand of its condition: the conditions on
        its way come first), else the last key it sets that the condition reads, else (the
        condition reads what the method made of the values) the model's section."""
        name = found.model.split(":")[1]
        if found.missing:
            return Issue(
                join_path(found.path, found.missing),
                f"required key is missing: {self.framework} builds {name} "
                f"({self.classes()[found.model]['file']} {self.at}) {found.when}",
            )
        assert found.reached is not None
        where, shown, _ = described(found.reached.step)
        own = [c for c in conditions.read(conditions.last_conjunct(shown)) if _set(given, c)]
        read = [c for c in conditions.read(shown) if _set(given, c)]
        chain = own[0] if own else read[-1] if read else ""
        # A value only where a key the config sets is named: the section has none to show.
        shown_value = {"value": _given(given, chain)} if chain else {}
        return Issue(
            join_path(found.path, chain) or name,
            f"{self.framework} refuses it {found.when}: {name} raises {found.reached.step[2]} "
            f"where `{shown}` ({where} {self.at})",
            hint=f"given: {conditions.given(shown, found.reached.values)}",
            **shown_value,
        )


def _made(qualified: str) -> str:
    """A default that builds the model ``qualified`` (``Field(default_factory=X)``)."""
    return f"{qualified.split(':')[1]}()"


def _opaque(value: Any) -> bool:
    """Whether only the job can tell a value that is no mapping (``upstream.values.plain``: it
    holds an interpolation); a mapping's own values are looked at one by one."""
    return not isinstance(value, dict) and plain(value) is OPAQUE


def _known(value: Any) -> Any:
    """``value`` as the replay reads it: a mapping that holds a value only the job knows
    (``_opaque``) is a ``conditions.Partial``, whose other keys read as they are."""
    if not isinstance(value, dict):
        return value
    unknown = [k for k, v in value.items() if _opaque(v)]
    known = {k: _known(v) for k, v in value.items() if k not in unknown}
    return conditions.Partial(known, unknown) if unknown else known


_ABSENT = object()


def value_at(mapping: Any, parts: Iterable[str], absent: Any = None) -> Any:
    """The value at the keys ``parts`` under ``mapping``; ``absent`` where one is not there."""
    value = mapping
    for part in parts:
        if not isinstance(value, dict) or part not in value:
            return absent
        value = value[part]
    return value


def _given(given: Mapping[str, Any], chain: str) -> Any:
    """The value the config sets at the dotted ``chain``, read as the model reads it (a key it
    takes without declaring it through ``model_extra``); _ABSENT where it sets none there (or
    sets a whole mapping)."""
    parts = [part for part in chain.split(".") if part != MODEL_EXTRA]
    value = value_at(given, parts, _ABSENT)
    return _ABSENT if isinstance(value, dict) else value


def _set(given: Mapping[str, Any], chain: str) -> bool:
    return _given(given, chain) is not _ABSENT


def _section(rendered: Mapping[str, Any], path: str) -> Any:
    return value_at(rendered, path.split(".") if path else ())


def _written_over(section: dict[str, Any], paths: list[str]) -> dict[str, Any]:
    """A copy of ``section`` whose values at ``paths`` (where their mapping is there) are ones
    only the job knows."""
    section = copy.deepcopy(section)
    for path in paths:
        *parents, leaf = path.split(".")
        owner = value_at(section, parents)
        if isinstance(owner, dict):
            owner[leaf] = _WRITTEN
    return section


def _at(boundary: Mapping[str, str]) -> str:
    """Where the framework validates a boundary: ``in grpo.py's setup (backend: dynamo)``."""
    module, _, function = boundary["by"].partition(":")
    selected = f"{boundary['key']}: {boundary['value']}"
    return f"in {module.rsplit('.', 1)[1]}.py's {function} ({selected})"
