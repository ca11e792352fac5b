"""One streaming pass over a JSONL file, whatever its format (issue 43): every line parsed and
checked by the format's rules, lengths measured on the way, memory bounded by the data's
variety, never by its size.

A format says three things of a parsed row (:class:`RowFormat`): the first reason its pinned
reader would fail on it, the group it counts under (a Gym row's agent, a conversation's roles),
and the texts whose lengths matter (a prompt; a conversation; a preference pair's two sides,
of which the longer counts). The pass keeps one count per distinct length (:class:`Lengths`),
so ten million rows cost what ten thousand do; percentiles and the longest rows are exact.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol

import attrs

from recipekit.errors import Issue, RecipeError

# The longest rows kept exactly in the statistics: the plan counts those over a limit exactly
# up to this many, and from the percentiles beyond.
LONGEST_KEPT = 1000
# Texts tokenized per call: the Rust tokenizer parallelises a batch over its threads.
TOKEN_BATCH = 2048
# Distinct groups kept while reading (rows per agent, per role sequence): past this many the
# rarest are folded into one count, so a file of unique groups cannot grow without bound.
GROUPS_KEPT = 10_000


class Tokenizer(Protocol):
    """What is used of a ``tokenizers.Tokenizer``."""

    def encode_batch(
        self, input: Sequence[Any], is_pretokenized: bool = ..., add_special_tokens: bool = ...
    ) -> list[Any]: ...


@attrs.frozen
class Refusal:
    line: int
    field: str
    rule: str


@attrs.frozen
class Measured:
    """What one accepted row adds to the statistics."""

    group: str
    texts: tuple[str, ...]


class RowFormat(Protocol):
    """A row format's rules, as its pinned reader reads a parsed line."""

    @property
    def name(self) -> str: ...

    @property
    def groups_key(self) -> str:
        """The statistics' name for rows per group ("agents", "roles")."""
        ...

    @property
    def length_key(self) -> str:
        """The statistics' name for the measured text ("prompt", "conversation")."""
        ...

    @property
    def measured(self) -> str:
        """What the lengths count, said in the statistics."""
        ...

    def line_rule(self) -> tuple[str, str]:
        """(the rule every line keeps, where the reader parses it) for a line that is no JSON."""
        ...

    def refusal(self, row: Any, folder: Path) -> Refusal | None: ...

    def measure(self, row: Any) -> Measured: ...


@attrs.define
class Lengths:
    """Lengths as counts per distinct value: exact percentiles and longest, bounded memory."""

    counts: Counter[int] = attrs.field(factory=Counter)

    @classmethod
    def of(cls, values: Iterable[int]) -> Lengths:
        return cls(Counter(values))

    def add(self, value: int) -> None:
        self.counts[value] += 1

    def summary(self) -> dict[str, Any]:
        """max, p50/p90/p99, every percentile (for the plan's counts) and the longest exactly."""
        n = sum(self.counts.values())
        if not n:
            return {"max": 0, "p50": 0, "p90": 0, "p99": 0, "percentiles": [], "longest": []}
        ordered = sorted(self.counts.items())
        # The value at each rank the percentiles ask for, walking the counts once.
        ranks = sorted({min(n - 1, int(p / 100 * n)) for p in range(101)})
        at_rank: dict[int, int] = {}
        seen, wanted = 0, iter(ranks)
        rank = next(wanted, None)
        for value, count in ordered:
            seen += count
            while rank is not None and rank < seen:
                at_rank[rank] = value
                rank = next(wanted, None)

        def at(q: float) -> int:
            return at_rank[min(n - 1, int(q * n))]

        longest: list[int] = []
        for value, count in reversed(ordered):
            longest += [value] * min(count, LONGEST_KEPT - len(longest))
            if len(longest) >= LONGEST_KEPT:
                break
        return {
            "max": ordered[-1][0],
            "p50": at(0.50),
            "p90": at(0.90),
            "p99": at(0.99),
            "percentiles": [at(p / 100) for p in range(101)],
            "longest": longest,
        }


def json_type(value: Any) -> str:
    """A value's type as JSON names it (what the user wrote), for a refusal's text."""
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}
    if value is None:
        return "null"
    if isinstance(value, int | float) and not isinstance(value, bool):
        return "a number"
    return names.get(type(value), type(value).__name__)


def summary(lengths: Iterable[int]) -> dict[str, Any]:
    """The statistics of ``lengths`` as the manifest records them."""
    return Lengths.of(lengths).summary()


@attrs.define
class _Scan:
    """What one pass over a file gathers."""

    rows: int = 0
    groups: Counter[str] = attrs.field(factory=Counter)
    folded: int = 0  # rows whose group was folded away (GROUPS_KEPT)
    chars: Lengths = attrs.field(factory=Lengths)
    tokens: Lengths = attrs.field(factory=Lengths)
    pending: list[str] = attrs.field(factory=list)
    sides: list[int] = attrs.field(factory=list)  # texts per pending row
    first: Refusal | None = None
    refused: int = 0

    def count(self, group: str) -> None:
        self.groups[group] += 1
        if len(self.groups) > GROUPS_KEPT:
            kept = dict(self.groups.most_common(GROUPS_KEPT // 2))
            self.folded += sum(self.groups.values()) - sum(kept.values())
            self.groups = Counter(kept)


def check_file(
    path: Path,
    rules: RowFormat,
    *,
    tokenizer: Tokenizer | None = None,
    tokenizer_id: str = "",
    bar: Any = None,
    shown: str | None = None,
) -> dict[str, Any]:
    """Read ``path`` whole; its statistics, or a RecipeError (one line) naming the first row the
    pinned reader would fail on and how many others would be refused. ``bar``: a progress
    Tracker told the bytes read."""
    scan = _Scan()
    name = shown or str(path)
    folder = path.parent
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if bar is not None:
                bar.advance(len(raw))
            problem = _line(raw, rules, folder, scan, tokenizer)
            if problem is not None:
                scan.refused += 1
                if scan.first is None:
                    scan.first = attrs.evolve(problem, line=number)
    if scan.first is None and scan.rows == 0:
        scan.first = Refusal(0, "", "holds no rows: the stage would have no data")
        scan.refused = 1
    if scan.first is not None:
        raise RecipeError([refusal_issue(name, scan.first, scan.refused - 1)])
    if tokenizer is not None and scan.pending:
        _flush(scan, tokenizer)
    groups: dict[str, Any] = dict(sorted(scan.groups.items()))
    stats: dict[str, Any] = {
        "format": rules.name,
        "rows": scan.rows,
        rules.groups_key: groups,
        f"{rules.length_key}_chars": scan.chars.summary(),
    }
    if scan.folded:
        stats[f"{rules.groups_key}_folded"] = scan.folded
    if tokenizer is not None:
        stats[f"{rules.length_key}_tokens"] = {
            **scan.tokens.summary(),
            "tokenizer": tokenizer_id,
            "counts": rules.measured,
        }
    return stats


def refusal_issue(name: str, refusal: Refusal, others: int) -> Issue:
    where = f"{name}:{refusal.line}" if refusal.line else name
    field = f"{refusal.field}: " if refusal.field else ""
    more = f" (and {others} more line{'s' if others != 1 else ''} refused)" if others else ""
    return Issue(where, f"{field}{refusal.rule}{more}", hint="nothing was registered")


def _line(
    raw: bytes, rules: RowFormat, folder: Path, scan: _Scan, tokenizer: Tokenizer | None
) -> Refusal | None:
    try:
        row = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        why = "a blank line" if not raw.strip() else f"not JSON ({str(exc).split(':')[0]})"
        rule, site = rules.line_rule()
        return Refusal(0, "", f"{why}: {rule} ({site})")
    try:
        problem = rules.refusal(row, folder)
    except RecursionError:
        problem = Refusal(0, "", "nested too deeply to check")
    if problem is not None:
        return problem
    if scan.first is not None:
        return None  # refused already: only the count of other bad lines matters now
    measured = rules.measure(row)
    scan.rows += 1
    scan.count(measured.group)
    scan.chars.add(max(len(text) for text in measured.texts))
    if tokenizer is not None:
        scan.pending += measured.texts
        scan.sides.append(len(measured.texts))
        if len(scan.pending) >= TOKEN_BATCH:
            _flush(scan, tokenizer)
    return None


def _flush(scan: _Scan, tokenizer: Tokenizer) -> None:
    # encode_batch_fast (tokenizers >= 0.20) skips the character offsets no length needs.
    encode = getattr(tokenizer, "encode_batch_fast", tokenizer.encode_batch)
    lengths = [len(e.ids) for e in encode(scan.pending, add_special_tokens=False)]
    start = 0
    for sides in scan.sides:
        scan.tokens.add(max(lengths[start : start + sides]))
        start += sides
    scan.pending.clear()
    scan.sides.clear()
