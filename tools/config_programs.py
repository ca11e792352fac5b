"""A pinned config class's validation, as programs ``recipekit.upstream.replay`` runs at plan
time: shared by the generators of Megatron-Core's and vLLM's config-class checks.

For a class, the program is what runs when it is built: its ``__post_init__`` (a base's run in
place of ``super().__post_init__()``), then each pydantic ``@model_validator(mode="after")``
method, a method of the class it calls as ``self.name()`` run in place
(``tools/guard_reader.program``). Each guard and warning in it is located: its ``file:line``,
its rule-catalogue anchor, whether a catalogued check other than the generic ones mirrors it
(the plan then evaluates it once), and whether any config can make the replay evaluate it
(``live``: every branch on its way decidable and every name it reads with a value).
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path
from typing import Any

import attrs

from recipekit import rule_catalogue
from recipekit.upstream import anchors, conditions
from recipekit.upstream.classes import UpstreamSource
from recipekit.upstream.replay import described, located
from tools.guard_reader import BUILTIN_NAMES, EVERYTHING, Step, is_super_call, pinned_base, program

POST_INIT = "__post_init__"


def module_file(module: str) -> str:
    return module.replace(".", "/") + ".py"


def source_of(root: Path) -> UpstreamSource:
    """Every module under ``root`` (a pinned reference folder), by its dotted name."""
    return UpstreamSource(
        {
            str(p.relative_to(root).with_suffix("")).replace("/", "."): p.read_text()
            for p in root.rglob("*.py")
        }
    )


@attrs.frozen
class Pinned:
    """One pinned source's config classes: where its files are, the catalogue that lists its
    rules, and the generic checks that evaluate the rules no other check mirrors."""

    root: Path
    catalogue: str
    generic: tuple[str, ...]
    # The catalogue's source label of the pin, where the catalogue lists several pins' rules.
    label: str = ""

    def entries(self) -> list[rule_catalogue.RuleEntry]:
        """The catalogued rules of this pin."""
        found = rule_catalogue.load(self.catalogue)
        return [e for e in found if not self.label or e.source == self.label]

    def mirrored(self) -> set[tuple[str, str]]:
        """(file, anchor) of each rule a catalogued check other than the generic ones mirrors."""
        entries = self.entries()
        return {(e.file, e.anchor) for e in entries if e.check and e.check not in self.generic}


def _methods(source: UpstreamSource, qualified: str) -> dict[str, tuple[str, ast.FunctionDef]]:
    """Each method ``qualified`` has, its own or a pinned base's: name -> (owner, method)."""
    found: dict[str, tuple[str, ast.FunctionDef]] = {}
    owner: str | None = qualified
    while owner is not None:
        for item in source.nodes[owner].body:
            if isinstance(item, ast.FunctionDef):
                found.setdefault(item.name, (owner, item))
        owner = pinned_base(source, owner)
    return found


def _after_validators(methods: dict[str, tuple[str, ast.FunctionDef]]) -> list[str]:
    """The pydantic ``@model_validator(mode="after")`` methods among ``methods``, in order."""
    return [
        name
        for name, (_, fn) in methods.items()
        if any(
            isinstance(d, ast.Call)
            and ast.unparse(d.func).endswith("model_validator")
            and any(k.arg == "mode" and ast.unparse(k.value) == "'after'" for k in d.keywords)
            for d in fn.decorator_list
        )
    ]


def class_program(
    source: UpstreamSource,
    pinned: Pinned,
    qualified: str,
    fields: frozenset[str],
    nested: frozenset[str] | None = None,
) -> list[Step]:
    """What runs when ``qualified`` is built, as one located program (see the module);
    ``nested`` (a pydantic model's): its fields that hold a model, whose attributes the
    program reads (``tools/guard_reader.evaluable``)."""
    methods = _methods(source, qualified)
    mirrored = pinned.mirrored()
    entries = [POST_INIT] if POST_INIT in methods else []
    entries += [v for v in _after_validators(methods) if v not in entries]
    steps: list[Step] = []
    for name in entries:
        steps.append(
            ["call", _method_program(source, pinned, qualified, name, fields, mirrored, nested)]
        )
    return steps


def _method_program(
    source: UpstreamSource,
    pinned: Pinned,
    qualified: str,
    name: str,
    fields: frozenset[str],
    mirrored: set[tuple[str, str]],
    nested: frozenset[str] | None = None,
    seen: frozenset[str] = frozenset(),
) -> list[Step]:
    """The method ``name`` as ``qualified`` has it, located in its owner's file."""
    methods = _methods(source, qualified)
    owner, fn = methods[name]
    base = pinned_base(source, owner)
    seen = seen | {f"{owner}.{name}"}

    def inline(call: ast.Call) -> list[Step] | None:
        # super().<name>() runs the base's; self.<m>() a method of the class, once per chain.
        if base is not None and is_super_call(call, name) and name in _methods(source, base):
            return _method_program(source, pinned, base, name, fields, mirrored, nested, seen)
        func = call.func
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id == "self"
            and not call.args
            and not call.keywords
            and func.attr in methods
            and f"{methods[func.attr][0]}.{func.attr}" not in seen
        ):
            return _method_program(
                source, pinned, qualified, func.attr, fields, mirrored, nested, seen
            )
        return None

    file = module_file(owner.split(":")[0])
    steps = program(fn, fields, inline, nested)
    return _located(steps, file, _rule_sites(pinned.root / file), mirrored)


@functools.cache
def _rule_sites(path: Path) -> list[anchors.RuleSite]:
    """The rule sites of a pinned file, read once however many of its methods are programs."""
    return anchors.rule_sites(path.read_text())


def _located(
    steps: list[Step], file: str, sites: list[anchors.RuleSite], mirrored: set[tuple[str, str]]
) -> list[Step]:
    out: list[Step] = []
    for step in steps:
        if step[0] in ("guard", "warn"):
            line = step[3] if step[0] == "guard" else step[1]
            site = anchors.site_at(sites, int(line))  # type: ignore[call-overload]
            anchor = site.anchor if site is not None else ""
            where = f"{file}:{line}"
            located = (
                [*step[:3], where, step[4]] if step[0] == "guard" else ["warn", where, step[2]]
            )
            out.append([*located, anchor, (file, anchor) in mirrored])
        elif step[0] == "if":
            then, orelse = (_located(s, file, sites, mirrored) for s in step[2:4])  # type: ignore[arg-type]
            out.append([*step[:2], then, orelse, *step[4:]])
        else:
            out.append(step)
    return out


class _Known:
    """The names that may have a value at a point of a program: the fields (a config may give
    any), and what the program assigns from what the replay evaluates, unless forgotten since."""

    def __init__(self, names: set[str]) -> None:
        self.names = names

    def copy(self) -> _Known:
        return _Known(set(self.names))

    def reads_unknown(self, text: str | None) -> bool:
        """Whether ``text`` (None: not evaluable) reads a name that has no value."""
        if text is None:
            return True
        if text in self.names:  # a place of a returned tuple (``_r0[2]``) that holds a value
            return False
        return any(n not in self.names and n not in BUILTIN_NAMES for n in conditions.names(text))

    def forget(self, names: list[str]) -> None:
        self.names = set() if EVERYTHING in names else self.names - set(names)


def live(steps: list[Step], fields: set[str]) -> list[Step]:
    """``steps`` with each guard and warning marked (a last item) with whether any config can
    make the replay evaluate it."""
    _live(steps, _Known(set(fields)))
    return steps


def _live(steps: list[Step], known: _Known, reached: bool = True) -> _Known:
    for step in steps:
        kind = step[0]
        if kind == "set":
            known.forget([step[1]])  # type: ignore[list-item]
            if not known.reads_unknown(step[2]):  # type: ignore[arg-type]
                known.names.add(step[1])  # type: ignore[arg-type]
        elif kind == "forget":
            known.forget(step[1])  # type: ignore[arg-type]
        elif kind == "if":
            decidable = reached and not known.reads_unknown(step[1])  # type: ignore[arg-type]
            then = _live(step[2], known.copy(), decidable)  # type: ignore[arg-type]
            orelse = _live(step[3], known.copy(), decidable)  # type: ignore[arg-type]
            if decidable:
                known = _Known(then.names & orelse.names)
            else:
                known.forget(step[4])  # type: ignore[arg-type]
                # A branch that may return leaves the rest of the function undecided.
                reached = reached and not step[5]
        elif kind == "guard":
            step.append(reached and not known.reads_unknown(step[1]))  # type: ignore[arg-type]
        elif kind == "warn":
            step.append(reached)
        elif kind == "call":
            known = _live(step[1], known, reached)  # type: ignore[arg-type]
    return known


def catalogue_gaps(
    tables: dict[str, dict[str, Any]], pinned: Pinned, reasons: tuple[str, ...] = ()
) -> list[str]:
    """Where the catalogue and the programs disagree: a guard or warning the replay evaluates
    (live, mirrored by no other check) whose entry names none of the generic checks (nor one of
    ``reasons`` why no stage reaches it), and an entry naming a generic check that the replay
    does not evaluate."""
    entries = {(e.file, e.anchor): e for e in pinned.entries()}
    evaluated, gaps = set(), []
    for table in tables.values():
        for step in located(table["program"]):
            where, _, mirrored = described(step)
            if mirrored or not step[-1]:
                continue
            entry = entries.get((where.split(":")[0], step[-3]))
            if entry is None or not (entry.check in pinned.generic or entry.reason in reasons):
                gaps.append(
                    f"{where}: evaluated, but catalogued {entry.id if entry else 'nowhere'}"
                )
            else:
                evaluated.add(entry.id)
    gaps += [
        f"{e.id}: names a generic check the replay does not evaluate"
        for e in entries.values()
        if e.check in pinned.generic and e.id not in evaluated
    ]
    return gaps
