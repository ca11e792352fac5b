"""The run-time rules of the frameworks recipekit compiles for, as data (issue 24).

One TOML file per framework beside this module, or a few split by topic (``nemo-rl.toml`` and
``nemo-rl.generation.toml``, ``vllm.toml``,
``nemo-evaluator.toml``, ``megatron-core.toml``, ``megatron-bridge.toml``). Each ``[[rule]]``
names one upstream ``assert``/``raise``/warning (or a call whose keywords a config value gives:
a duplicate or unknown keyword is a TypeError) by its source label, file and *anchor*
(``recipekit.upstream.anchors``: the enclosing scope and a fingerprint of the statement's text,
which survives the file moving around it), or (``source = "issue"``) a rule no single upstream
line states, from an upstream thread. It is either mirrored by a plan-time check (``check``, a
dotted name) or says why it cannot be checked before the job starts: a ``reason`` from
``REASONS`` and a ``detail``.

Neither the commit nor the line is written here: the commit is the manifest's
(``3rdparty/reference/manifest.toml``, ``source_commit``), and the line is where the anchor
stands in the pinned file (``locate_line``), so that moving a pin touches one place.

Only tests and tools load the catalogue: the plan path never imports this package.
"""

from __future__ import annotations

import functools
import os
import re
import tomllib
from importlib import resources
from pathlib import Path
from typing import Any

import attrs

from recipekit.errors import Issue, RecipeError, did_you_mean
from recipekit.upstream import anchors

FRAMEWORKS = ("nemo-rl", "vllm", "nemo-evaluator", "megatron-core", "megatron-bridge")
# "keyword": a call's keyword arguments, where a duplicate or unknown one is a TypeError (the
# anchored statement is the call that spreads them with **).
KINDS = anchors.KINDS
PHASES = ("config-load", "setup", "worker-start", "rollout", "training", "checkpoint-load")
# Why an unmirrored rule cannot be checked at plan time; ``detail`` says what exactly.
REASONS = (
    "needs-job",  # it reads what exists only in the running job (environment, packages, metrics)
    "needs-data",  # it reads the data or a checkpoint's files, on the cluster's storage
    "needs-gpu",  # the GPU the job starts on decides it
    "unreachable",  # no recipekit stage reaches it from its entry points (the detail says why)
    # A user can reach it (a --set of what it reads) and the plan does not check it yet: an
    # open gap, named as one (the detail says what reaches it).
    "not-mirrored",
)
# A rule from an upstream thread rather than one line of upstream code.
ISSUE_SOURCE = "issue"
ISSUE_PREFIX = "recipekit."
MANIFEST = Path("3rdparty/reference/manifest.toml")
# A number as a whole id segment, or ending one ("...assert-912"): an upstream line number.
_LINE_IN_ID = re.compile(r"(^|-)\d+$")


def _non_empty(instance: object, attribute: attrs.Attribute[Any], value: str) -> None:
    if not value.strip():
        raise ValueError(f"{attribute.name} is empty")


def _no_line_number(instance: object, attribute: attrs.Attribute[Any], value: str) -> None:
    numbered = [segment for segment in value.split(".") if _LINE_IN_ID.search(segment)]
    if numbered:
        raise ValueError(
            f"id segment {numbered[0]!r} ends in a number: an id names the rule, not its line"
        )


@attrs.frozen
class RuleEntry:
    """One catalogued rule; ``framework`` is the file it was read from."""

    framework: str = attrs.field(validator=attrs.validators.in_(FRAMEWORKS))
    id: str = attrs.field(validator=[_non_empty, _no_line_number])
    source: str = attrs.field(validator=_non_empty)
    kind: str = attrs.field(validator=attrs.validators.in_(KINDS))
    phase: str = attrs.field(validator=attrs.validators.in_(PHASES))
    keys: tuple[str, ...] = attrs.field(converter=tuple)
    condition: str = attrs.field(validator=_non_empty)
    file: str = ""
    # "<scope>#<fingerprint>[~N]" of the statement in the pinned file (recipekit.upstream.anchors).
    anchor: str = ""
    # The upstream issue or pull-request thread a "source = issue" rule comes from.
    thread: str = ""
    check: str = ""
    reason: str = attrs.field(default="", validator=attrs.validators.in_(("", *REASONS)))
    detail: str = ""

    def __attrs_post_init__(self) -> None:
        if bool(self.check) == bool(self.reason):
            raise ValueError("needs exactly one of check and reason")
        if bool(self.reason) != bool(self.detail.strip()):
            raise ValueError("a reason comes with its detail, and a detail with its reason")
        if self.from_issue:
            if not self.id.startswith(ISSUE_PREFIX) or not self.thread:
                raise ValueError(
                    f"an issue rule's id starts with {ISSUE_PREFIX!r} and names a thread"
                )
        else:
            if not self.id.startswith(self.framework + "."):
                raise ValueError(f"id must start with {self.framework + '.'!r}")
            if not (self.file and self.anchor):
                raise ValueError("an upstream rule gives file and anchor")
            if "#" not in self.anchor:
                raise ValueError(f"anchor {self.anchor!r} is not <scope>#<fingerprint>")
        if "\n" in self.condition:
            raise ValueError("condition is one line")

    @property
    def from_issue(self) -> bool:
        return self.source == ISSUE_SOURCE

    @property
    def mirrored(self) -> bool:
        return bool(self.check)

    @property
    def commit(self) -> str:
        """The pinned commit (a wheel's version) of the source, from the manifest."""
        return "" if self.from_issue else source_commit(self.source)


# --- where the pinned sources are -------------------------------------------------------------


def checkout() -> Path:
    """The repository root: ``$RECIPEKIT_CHECKOUT`` (as the tests set it), else the folder
    above this package or the working directory that holds the manifest."""
    configured = os.environ.get("RECIPEKIT_CHECKOUT", "")
    if configured:
        return Path(configured)
    for start in (Path(__file__).resolve(), Path.cwd()):
        for folder in start.parents if start.is_file() else (start, *start.parents):
            if (folder / MANIFEST).is_file():
                return folder
    raise RecipeError([Issue(str(MANIFEST), "not found above this package or the working folder")])


def reference_dir() -> Path:
    """Where tools/fetch-reference put the pinned files (``$RECIPEKIT_REFERENCE_DIR``)."""
    configured = os.environ.get("RECIPEKIT_REFERENCE_DIR", "")
    return Path(configured) if configured else checkout() / ".reference"


@functools.cache
def _manifest() -> dict[str, Any]:
    return tomllib.loads((checkout() / MANIFEST).read_text(encoding="utf-8"))


def source_commit(label: str) -> str:
    """The commit the manifest pins ``label`` at; for a wheel (``megatron-core/0.19.2``), its
    version."""
    manifest = _manifest()
    if label in manifest["sources"]:
        return str(manifest["sources"][label]["commit"])
    if label in manifest.get("wheels", {}):
        return label.split("/", 1)[1]
    raise RecipeError(
        [Issue(label, "not a source or wheel of the manifest")], context=str(MANIFEST)
    )


@functools.cache
def _sites(path: Path) -> tuple[anchors.RuleSite, ...]:
    return tuple(anchors.rule_sites(path.read_text(encoding="utf-8")))


def pinned_file(entry: RuleEntry, reference: Path | None = None) -> Path:
    return (reference or reference_dir()) / entry.source / entry.file


def site_of(entry: RuleEntry, reference: Path | None = None) -> anchors.RuleSite | None:
    """The rule site the entry's anchor names in the pinned file; None for an issue rule, a
    file not fetched here, or an anchor the file does not hold."""
    if entry.from_issue:
        return None
    path = pinned_file(entry, reference)
    if not path.is_file():
        return None
    return anchors.locate(_sites(path), entry.anchor)


def locate_line(entry: RuleEntry, reference: Path | None = None) -> int | None:
    """The entry's line in the pinned file (see ``site_of``)."""
    site = site_of(entry, reference)
    return site.line if site else None


# --- loading ----------------------------------------------------------------------------------


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


__all__ = [
    "FRAMEWORKS",
    "KINDS",
    "PHASES",
    "REASONS",
    "RuleEntry",
    "load",
    "locate_line",
    "present",
    "site_of",
    "source_commit",
]
