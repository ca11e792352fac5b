"""A pinned runner's own checks, replayed on a rendered config: what its ``main`` and the
functions it calls (the algorithm's ``setup`` and its helpers) assert, raise or warn about,
from where it builds its master config on (``tools/function_programs.py`` writes them as
programs; ``recipekit.upstream.replay`` runs them).

The replay starts holding the master config's values as the framework builds them
(``recipekit.upstream.models.PinnedModels.values``: each model's defaults under what the config
gives), follows what the functions write into the config and the names they give its
sections, and forgets what code it does not follow may change. A check it reaches that fails,
a key it reads that the config lacks (a KeyError) and a None it orders or computes with (a
TypeError) are refused at the config key they read: a section's key path travels with the
section (``conditions.Tracked``), so ``grpo_config.val_period`` is ``grpo.val_period``, and a
name set from a key's value keeps that key (``conditions.ORIGINS``).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from recipekit.errors import Issue
from recipekit.upstream import conditions
from recipekit.upstream.models import value_at
from recipekit.upstream.replay import Reached, described, pinned_source, replay

# What the program of a runner's main calls the master config's values
# (``tools/function_programs.MASTER``).
MASTER = "__master__"


class PinnedRunners(NamedTuple):
    """The runner programs of one generated table (``path``); ``framework`` and ``at`` say
    whose they are in a message (``NeMo-RL``, ``@ super-v3.5-posttraining``)."""

    path: Path
    framework: str
    at: str

    def mains(self) -> dict[str, str]:
        """Runner file -> the qualified name of what it runs as a script."""
        found: dict[str, str] = _table(self.path)[0]["runners"]
        return found

    def programs(self) -> Mapping[str, list[Any]]:
        """Qualified function -> its program."""
        return _programs(self.path)

    def reached(self, runner: str, master: Mapping[str, Any]) -> list[Reached]:
        """Each failing check and issued warning of ``runner``'s main (none for a runner the
        table does not hold) on the master config's values ``master``, each once, where no
        hand-written rule mirrors it."""
        main = self.mains().get(runner)
        if main is None:
            return []
        programs = self.programs()
        # A copy: what the functions write stays in the replay.
        values = {MASTER: conditions.tracked(master)}
        seen: set[tuple[str, str]] = set()
        out = []
        for found in replay(programs[main], values, programs):
            where, shown, mirrored = described(found.step)
            # A missing key once, where it is first read.
            seen_as = ("", shown) if found.step[:2] == ["fails", "KeyError"] else (where, shown)
            if not mirrored and seen_as not in seen:
                seen.add(seen_as)
                out.append(found)
        return out

    def issues(
        self,
        runner: str,
        reached: list[Reached],
        given: Mapping[str, Any],
        kind: str,
        missing_elsewhere: frozenset[str] = frozenset(),
    ) -> Iterator[Issue]:
        """The refusals (``kind`` "guard") or warnings ("warn") among what the replay of
        ``runner`` ``reached`` on a config whose rendered keys are ``given``; a missing key is
        refused, but for those another check refuses (``missing_elsewhere``)."""
        for found in reached:
            if found.step[0] == kind:
                yield self._issue(runner, found, given)
            elif found.step[0] == "fails" and kind == "guard":
                if found.step[2] not in missing_elsewhere:
                    yield self._fails(runner, found)

    def _fails(self, runner: str, found: Reached) -> Issue:
        """A read of a key the config lacks (a KeyError), a None where the function orders or
        computes with it, or a keyword the config hands a call that the function hands it too
        (a TypeError), at the key."""
        where, what, _ = described(found.step)
        at = f"({where} {self.at}, run by {runner})"
        if found.step[1] == "KeyError":
            return Issue(
                what,
                f"required key is missing: {self.framework} reads it without a default, a "
                f"KeyError {at}",
            )
        if found.step[1] == "DuplicateKeyword":
            return Issue(
                what,
                f"{self.framework} hands this keyword on itself as well: a call given it twice, "
                f"a TypeError {at}",
                hint="leave it to the framework, or set the key it derives the value from",
            )
        key = conditions.keyed(what, found.values)
        return Issue(
            key or runner,
            f"{self.framework} orders or computes with `{what}`, which is None here: a TypeError "
            f"{at}",
            hint="set it",
            **({"value": None} if key else {}),
        )

    def _issue(self, runner: str, found: Reached, given: Mapping[str, Any]) -> Issue:
        """At the first key the check's own test reads (the last operand of its condition),
        else the first key on its way the config sets, else any key it reads, else the
        runner."""
        where, shown, _ = described(found.step)
        scope = found.step[-3].partition("#")[0] or "main"
        # The test as the replay evaluated it (a call's result, ``not _r0``, is the key the
        # function returned: ``replay._Return.origin``), else as written.
        tested = found.step[1] if found.step[0] == "guard" and found.step[1] else ""
        own = conditions.keys_read(tested, found.values) if tested else []
        own = own or conditions.keys_read(conditions.last_conjunct(shown), found.values)
        every = conditions.keys_read(shown, found.values)
        # The failing test's own key (set or missing); else a key on its way the config sets.
        key = next(iter(own), "") or next((k for k in every if _at(given, k) is not _ABSENT), "")
        key = key or next(iter(every), "")
        raised = f"raises {found.step[2]}" if found.step[0] == "guard" else "warns"
        value = _at(given, key)
        return Issue(
            key or runner,
            f"{self.framework}'s {scope} {raised} where `{shown}` ({where} {self.at}, "
            f"run by {runner})",
            hint=_given(shown, found.values) or "",
            **({"value": value} if value is not _ABSENT and not isinstance(value, dict) else {}),
        )


_ABSENT = object()


def _given(condition: str, values: Mapping[str, Any]) -> str | None:
    """The values ``condition`` read that are no mapping, each by its config key where it is
    one (``policy.generation.val_top_k=5, val_sampling_overridden=True``)."""
    shown = []
    for chain in conditions.read(condition, True):
        if chain.startswith("_r") and chain[2:].isdigit():
            continue  # a call's result, held under a name of the replay's own
        known, value = conditions.evaluated(chain, values)
        if known and not isinstance(value, dict | type):
            shown.append(f"{conditions.keyed(chain, values) or chain}={value!r}")
    return f"given: {', '.join(shown)}" if shown else None


def _at(given: Mapping[str, Any], key: str) -> Any:
    """The value the config sets at the dotted ``key`` (a section too); _ABSENT where none."""
    return value_at(given, key.split("."), _ABSENT)


@functools.cache
def _programs(path: Path) -> Mapping[str, list[Any]]:
    return _LazyPrograms(_table(path)[1])


class _LazyPrograms(Mapping[str, list[Any]]):
    """Each function's program, decoded from its line of the table when a replay first
    invokes it: a plan replays one runner, which reaches a part of the table's functions."""

    def __init__(self, lines: dict[str, str]) -> None:
        self.lines = lines
        self.decoded: dict[str, list[Any]] = {}

    def __getitem__(self, name: str) -> list[Any]:
        found = self.decoded.get(name)
        if found is None:
            found = self.decoded[name] = json.loads(self.lines[name])["program"]
        return found

    def __contains__(self, name: object) -> bool:
        return name in self.lines

    def __iter__(self) -> Iterator[str]:
        return iter(self.lines)

    def __len__(self) -> int:
        return len(self.lines)


# How the generator writes a table (generated_modules.json_table, one function a line): the
# functions' block opens with this line and closes with the next line at its own indent.
_FUNCTIONS = '   "functions": {'
_FUNCTION = '    "'


@functools.cache
def _table(path: Path) -> tuple[dict[str, Any], dict[str, str]]:
    """The pinned source's entry without its functions, and each function's line, undecoded
    (decoding every program took most of a plan's replay)."""
    lines = path.read_text(encoding="utf-8").split("\n")
    try:
        start = lines.index(_FUNCTIONS)
        end = next(i for i in range(start + 1, len(lines)) if not lines[i].startswith(_FUNCTION))
    except (ValueError, StopIteration):  # another layout: read it whole
        entry = pinned_source(path)
        functions = {n: json.dumps(e) for n, e in entry["functions"].items()}
        return entry, functions
    functions = {}
    for line in lines[start + 1 : end]:
        key, _, value = line.strip().partition(": ")
        functions[json.loads(key)] = value.removesuffix(",")
    rest = "\n".join([*lines[: start + 1], *lines[end:]])
    (entry,) = json.loads(rest)["sources"].values()
    return entry, functions
