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

import ast
import functools
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from recipekit.convert import rendered
from recipekit.errors import Issue
from recipekit.generated_tables import sources
from recipekit.nemo_rl.checks.context import Check, CheckContext
from recipekit.nemo_rl.rule_lines import VERSIONS
from recipekit.upstream import conditions

TABLE = Path(__file__).parent.parent / "generated" / "key_needs.json"
_MISSING = object()
# What a pair's condition calls the section it reads (tools/generate_key_needs.SECTION).
SECTION = "section"


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


def holds(section: Any, when: str) -> bool | None:
    """Whether the condition ``when`` is true of ``section``, as Python evaluates it; None where
    it reads a key the section lacks or compares what does not compare."""
    return conditions.holds(when, {SECTION: section})


class _Shown(ast.NodeTransformer):
    """A condition as a reader writes it: each read of the section as its key path."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix

    def path(self, node: ast.expr) -> str | None:
        if isinstance(node, ast.Name) and node.id == SECTION:
            return self.prefix
        link = conditions.key_link(node)
        head = self.path(link[0]) if link is not None else None
        return None if head is None or link is None else ".".join(filter(None, (head, link[1])))

    def visit_Compare(self, node: ast.Compare) -> ast.expr:
        member = isinstance(node.ops[0], ast.In | ast.NotIn)
        if member and isinstance(node.left, ast.Constant):
            holder = self.path(node.comparators[0])
            if holder is not None:
                state = "set" if isinstance(node.ops[0], ast.In) else "absent"
                return ast.Name(f"{holder}.{node.left.value!s} is {state}".lstrip("."))
        self.generic_visit(node)
        return node

    def visit(self, node: ast.AST) -> ast.AST:
        found = self.path(node) if isinstance(node, ast.expr) else None
        return ast.Name(found) if found is not None else super().visit(node)


def _shown(when: str, prefix: str) -> str:
    """The condition with full key paths (``logger.swanlab_enabled``)."""
    return ast.unparse(_Shown(prefix).visit(ast.parse(when, mode="eval")))


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
            if not holds(section, pair["when"]):
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


def unread_in(config: Any, version: str, entry_point: str) -> list[Issue]:
    """``unread_keys`` of a typed config of the NeMo-RL ``version`` (``super-v3.5-posttraining@
    5d63149a``), as NeMo-RL's entry points other than GRPO's check it."""
    values = rendered(config)
    label = f"nemo-rl/{version.split('@')[0]}"
    return [] if values is None else list(unread_keys(values, label, entry_point))


def every_run_check(label: str) -> Check:
    """The error check of one pinned NeMo-RL source: keys its entry point always reads."""

    def keys_every_run_reads_are_set(ctx: CheckContext) -> Iterator[Issue]:
        values = rendered(ctx.config)
        if values is not None:
            yield from unread_keys(values, label, ctx.entry_point)

    return keys_every_run_reads_are_set


def key_needs_check(label: str) -> Check:
    """The warning check of one pinned NeMo-RL source (``nemo-rl/super-v3``, ...)."""

    def keys_a_feature_needs_are_set(ctx: CheckContext) -> Iterator[Issue]:
        values = rendered(ctx.config)
        if values is not None:
            yield from missing_keys(values, label)

    return keys_a_feature_needs_are_set
