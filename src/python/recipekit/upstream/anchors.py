"""Where an upstream rule stands, named so that the name survives the file moving around it.

A *rule site* is a statement that can stop a run or warn about a config: an ``assert``, a
``raise``, a warning (``warnings.warn``, ``logger.warning``, Megatron-Core's
``log_single_rank``, Megatron-Bridge's ``print_rank_0("WARNING ...")``, NeMo-RL's
``print("[WARN] ...")``), or a call that spreads a config's mapping as keywords (``**kwargs``:
a duplicate or unknown keyword is a TypeError).

Its *anchor* is ``<scope>#<fingerprint>``: the dotted name of the function or class that holds
it (``<module>`` at the top level) and 12 hex digits of the SHA-256 of its normalised text
(``ast.unparse``: formatting, comments and line numbers do not count). A second identical
statement in the same scope takes ``~2``, a third ``~3``. The line is looked up from the
anchor in the pinned source; an upgrade keeps every anchor whose statement only moved and lists
the rest for review (``compare``).
"""

from __future__ import annotations

import ast
import hashlib
from collections import Counter
from collections.abc import Sequence

import attrs

KINDS = ("assert", "raise", "warning", "keyword")
TOP_LEVEL = "<module>"
FINGERPRINT_DIGITS = 12


@attrs.frozen
class RuleSite:
    line: int
    kind: str
    scope: str
    text: str
    # 1 for the first statement of this text in its scope, 2 for the second, ...
    ordinal: int = 1
    # The test of the innermost ``if`` around it ("" at none; ``not (...)`` in an else): a
    # raise's condition. Not part of the anchor, so that a changed condition reads as changed
    # rather than as one rule gone and another come.
    condition: str = ""

    @property
    def fingerprint(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()[:FINGERPRINT_DIGITS]

    @property
    def shown(self) -> str:
        """The statement with the condition it stands under, as a reviewer reads it."""
        return f"if {self.condition}: {self.text}" if self.condition else self.text

    @property
    def anchor(self) -> str:
        repeat = f"~{self.ordinal}" if self.ordinal > 1 else ""
        return f"{self.scope}#{self.fingerprint}{repeat}"


def anchor_scope(anchor: str) -> str:
    return anchor.rsplit("#", 1)[0]


def _warns(function: str) -> bool:
    # warnings.warn, logger.warning / logging.warn, and Megatron-Core's
    # log_single_rank(logger, logging.WARNING, ...).
    return "warn" in function or function == "log_single_rank"


def _kind(node: ast.AST) -> str | None:
    if isinstance(node, ast.Assert):
        return "assert"
    if isinstance(node, ast.Raise):
        return "raise"
    if not isinstance(node, ast.Call):
        return None
    if any(keyword.arg is None for keyword in node.keywords):
        return "keyword"
    function = ast.unparse(node.func)
    if _warns(function.rsplit(".", 1)[-1]):
        return "warning"
    text = ast.unparse(node)
    if function.endswith("print_rank_0") and "warning" in text.lower():
        return "warning"
    if function == "print" and "WARN" in text:
        return "warning"
    return None


class _Collector(ast.NodeVisitor):
    def __init__(self) -> None:
        self.scope: list[str] = []
        self.conditions: list[str] = []
        self.found: list[tuple[int, str, str, str, str]] = []

    def _scoped(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        # Decorators and defaults belong to the enclosing scope, as Python evaluates them.
        for decorator in node.decorator_list:
            self.visit(decorator)
        self.scope.append(node.name)
        outer, self.conditions = self.conditions, []
        for child in node.body:
            self.visit(child)
        self.conditions = outer
        self.scope.pop()

    def visit_If(self, node: ast.If) -> None:  # noqa: N802 (ast.NodeVisitor's naming)
        self.visit(node.test)
        test = " ".join(ast.unparse(node.test).split())
        for body, condition in ((node.body, test), (node.orelse, f"not ({test})")):
            self.conditions.append(condition)
            for child in body:
                self.visit(child)
            self.conditions.pop()

    visit_FunctionDef = _scoped  # noqa: N815 (ast.NodeVisitor's naming)
    visit_AsyncFunctionDef = _scoped  # noqa: N815
    visit_ClassDef = _scoped  # noqa: N815

    def generic_visit(self, node: ast.AST) -> None:
        kind = _kind(node)
        if kind is not None:
            lineno = getattr(node, "lineno", 0)
            scope = ".".join(self.scope) or TOP_LEVEL
            text = " ".join(ast.unparse(node).split())
            condition = self.conditions[-1] if self.conditions else ""
            self.found.append((lineno, kind, scope, text, condition))
        super().generic_visit(node)


def rule_sites(source: str) -> list[RuleSite]:
    """Every rule site of a Python module's text, in source order."""
    collector = _Collector()
    collector.visit(ast.parse(source))
    seen: Counter[tuple[str, str]] = Counter()
    sites = []
    for line, kind, scope, text, condition in sorted(collector.found, key=lambda f: f[0]):
        seen[(scope, text)] += 1
        sites.append(RuleSite(line, kind, scope, text, seen[(scope, text)], condition))
    return sites


def site_at(sites: Sequence[RuleSite], line: int) -> RuleSite | None:
    """The rule site that starts on ``line`` (the outermost one where several do)."""
    return next((site for site in sites if site.line == line), None)


def locate(sites: Sequence[RuleSite], anchor: str) -> RuleSite | None:
    return next((site for site in sites if site.anchor == anchor), None)


@attrs.frozen
class Moved:
    anchor: str
    old: RuleSite
    new: RuleSite


@attrs.frozen
class Changed:
    """The statement stands under another ``if``, or it is gone from its scope and the scope
    holds a new one of the same kind where it stood: its condition or message changed (a
    reviewer decides)."""

    anchor: str
    old: RuleSite
    new: RuleSite


@attrs.frozen
class Vanished:
    anchor: str
    old: RuleSite


@attrs.frozen
class Comparison:
    moved: tuple[Moved, ...]
    unmoved: tuple[str, ...]
    changed: tuple[Changed, ...]
    vanished: tuple[Vanished, ...]
    # Rule sites of the new text that no old anchor accounts for.
    new: tuple[RuleSite, ...]


def compare(old: Sequence[RuleSite], new: Sequence[RuleSite], anchors: Sequence[str]) -> Comparison:
    """How each anchor of ``old`` fares in ``new``: found (moved or not), changed, vanished.

    A statement counts as changed when its scope still exists in ``new`` and holds a rule site
    of the same kind that matches no old statement, nearest to the old one's place among the
    scope's sites; otherwise it vanished.
    """
    new_by_anchor = {site.anchor: site for site in new}
    old_by_anchor = {site.anchor: site for site in old}
    old_anchors = set(old_by_anchor)
    unclaimed = [site for site in new if site.anchor not in old_anchors]
    moved: list[Moved] = []
    unmoved: list[str] = []
    changed: list[Changed] = []
    vanished: list[Vanished] = []
    for anchor in anchors:
        before = old_by_anchor.get(anchor)
        after = new_by_anchor.get(anchor)
        if before is None:
            continue  # not an anchor of the old text: the caller reports it
        if after is not None and after.condition != before.condition:
            changed.append(Changed(anchor, before, after))
            unclaimed = [s for s in unclaimed if s is not after]
            continue
        if after is not None:
            if after.line == before.line:
                unmoved.append(anchor)
            else:
                moved.append(Moved(anchor, before, after))
            continue
        candidate = _successor(before, old, unclaimed)
        if candidate is None:
            vanished.append(Vanished(anchor, before))
        else:
            unclaimed.remove(candidate)
            changed.append(Changed(anchor, before, candidate))
    return Comparison(
        tuple(moved), tuple(unmoved), tuple(changed), tuple(vanished), tuple(unclaimed)
    )


def _successor(
    before: RuleSite, old: Sequence[RuleSite], unclaimed: Sequence[RuleSite]
) -> RuleSite | None:
    candidates = [s for s in unclaimed if s.scope == before.scope and s.kind == before.kind]
    if not candidates:
        return None
    # Its place among its scope's sites of that kind, before and after.
    peers = [s for s in old if s.scope == before.scope and s.kind == before.kind]
    place = peers.index(before) / max(len(peers), 1)
    return min(candidates, key=lambda s: abs(candidates.index(s) / len(candidates) - place))
