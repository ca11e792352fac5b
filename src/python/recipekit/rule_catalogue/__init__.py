"""The run-time rules of the frameworks recipekit compiles for, as data (issue 24).

One TOML file per framework beside this module, or a few split by topic (``nemo-rl.toml`` and
``nemo-rl.generation.toml``, ``vllm.toml``,
``nemo-evaluator.toml``, ``megatron-core.toml``, ``megatron-bridge.toml``). Each ``[[rule]]``
names one upstream ``assert``/``raise``/warning (or a call whose keywords a config value gives:
a duplicate or unknown keyword is a TypeError) at a pinned file and line, or
(``source = "issue"``) a rule no single upstream line states, from an upstream thread. It is
either mirrored by a plan-time check (``check``, a dotted name) or says why it cannot be checked
before the job starts (``unchecked``).

Only tests and tools load the catalogue: the plan path never imports this package.
"""

from __future__ import annotations

import tomllib
from importlib import resources
from typing import Any

import attrs

from recipekit.errors import Issue, RecipeError, did_you_mean

FRAMEWORKS = ("nemo-rl", "vllm", "nemo-evaluator", "megatron-core", "megatron-bridge")
# "keyword": a call's keyword arguments, where a duplicate or unknown one is a TypeError (the
# cited line is the call that spreads them with **).
KINDS = ("assert", "raise", "warning", "keyword")
PHASES = ("config-load", "setup", "worker-start", "rollout", "training", "checkpoint-load")
# A rule from an upstream thread rather than one line of upstream code.
ISSUE_SOURCE = "issue"
ISSUE_PREFIX = "recipekit."


def _non_empty(instance: object, attribute: attrs.Attribute[Any], value: str) -> None:
    if not value.strip():
        raise ValueError(f"{attribute.name} is empty")


@attrs.frozen
class RuleEntry:
    """One catalogued rule; ``framework`` is the file it was read from."""

    framework: str = attrs.field(validator=attrs.validators.in_(FRAMEWORKS))
    id: str = attrs.field(validator=_non_empty)
    source: str = attrs.field(validator=_non_empty)
    kind: str = attrs.field(validator=attrs.validators.in_(KINDS))
    phase: str = attrs.field(validator=attrs.validators.in_(PHASES))
    keys: tuple[str, ...] = attrs.field(converter=tuple)
    condition: str = attrs.field(validator=_non_empty)
    commit: str = ""
    file: str = ""
    line: int = attrs.field(default=0, validator=attrs.validators.ge(0))
    # The upstream issue or pull-request thread a "source = issue" rule comes from.
    thread: str = ""
    check: str = ""
    unchecked: str = ""

    def __attrs_post_init__(self) -> None:
        if bool(self.check) == bool(self.unchecked):
            raise ValueError("needs exactly one of check and unchecked")
        if self.from_issue:
            if not self.id.startswith(ISSUE_PREFIX) or not self.thread:
                raise ValueError(
                    f"an issue rule's id starts with {ISSUE_PREFIX!r} and names a thread"
                )
        else:
            if not self.id.startswith(self.framework + "."):
                raise ValueError(f"id must start with {self.framework + '.'!r}")
            if not (self.commit and self.file and self.line):
                raise ValueError("an upstream rule gives commit, file and line")
        if "\n" in self.condition:
            raise ValueError("condition is one line")

    @property
    def from_issue(self) -> bool:
        return self.source == ISSUE_SOURCE

    @property
    def mirrored(self) -> bool:
        return bool(self.check)


_FIELDS = {a.name for a in attrs.fields(RuleEntry)} - {"framework"}


def _entry(framework: str, file: str, index: int, raw: dict[str, Any]) -> RuleEntry:
    where = f"{file} rule {index + 1}" + (f" ({raw['id']})" if "id" in raw else "")
    unknown = sorted(set(raw) - _FIELDS)
    if unknown:
        hint = did_you_mean(unknown[0], sorted(_FIELDS))
        raise RecipeError([Issue(unknown[0], "not a rule field", hint=hint)], context=where)
    try:
        return RuleEntry(framework=framework, **raw)
    except (TypeError, ValueError) as exc:
        raise RecipeError([Issue("", str(exc))], context=where) from None


def _files(framework: str) -> list[str]:
    """A framework's catalogue: ``<framework>.toml`` and its topic parts,
    ``<framework>.<topic>.toml`` (a long catalogue split by topic, e.g.
    ``nemo-rl.generation.toml``), in name order."""
    names = [entry.name for entry in resources.files(__name__).iterdir()]
    return sorted(
        name
        for name in names
        if name == f"{framework}.toml"
        or (name.startswith(f"{framework}.") and name.endswith(".toml") and name.count(".") == 2)
    )


def present() -> tuple[str, ...]:
    """The frameworks with at least one catalogue file."""
    return tuple(name for name in FRAMEWORKS if _files(name))


def load(framework: str | None = None) -> tuple[RuleEntry, ...]:
    """Every rule of one framework's file, or of every file present; ids are unique."""
    names = present() if framework is None else (framework,)
    entries: list[RuleEntry] = []
    for name in names:
        for file in _files(name):
            text = resources.files(__name__).joinpath(file).read_text(encoding="utf-8")
            rules = tomllib.loads(text).get("rule", [])
            entries += [_entry(name, file, i, raw) for i, raw in enumerate(rules)]
    seen: set[str] = set()
    twice = [e.id for e in entries if e.id in seen or seen.add(e.id)]  # type: ignore[func-returns-value]
    if twice:
        raise RecipeError([Issue(i, "catalogued twice") for i in twice], context="rule catalogue")
    return tuple(entries)


__all__ = ["FRAMEWORKS", "KINDS", "PHASES", "RuleEntry", "load", "present"]
