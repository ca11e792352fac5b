"""The streaming pass keeps one count per distinct length: its statistics are those of sorting
every length, exactly, and its memory does not grow with the rows."""

from __future__ import annotations

import heapq

from hypothesis import given
from hypothesis import strategies as st

from recipekit.datacheck.scan import GROUPS_KEPT, LONGEST_KEPT, Lengths, _Scan


def _sorted_summary(values: list[int]) -> dict[str, object]:
    """The statistics computed the plain way: every length sorted."""
    ordered = sorted(values)
    n = len(ordered)

    def at(q: float) -> int:
        return ordered[min(n - 1, int(q * n))]

    return {
        "max": ordered[-1],
        "p50": at(0.50),
        "p90": at(0.90),
        "p99": at(0.99),
        "percentiles": [at(p / 100) for p in range(101)],
        "longest": heapq.nlargest(LONGEST_KEPT, ordered),
    }


@given(st.lists(st.integers(min_value=0, max_value=5000), min_size=1, max_size=3000))
def test_counts_give_the_statistics_sorting_gives(values: list[int]) -> None:
    assert Lengths.of(values).summary() == _sorted_summary(values)


def test_a_million_rows_of_few_lengths_keep_few_counts() -> None:
    values = [row % 4096 for row in range(1_000_000)]
    lengths = Lengths()
    for value in values:
        lengths.add(value)
    assert len(lengths.counts) == 4096
    assert lengths.summary() == _sorted_summary(values)


def test_groups_past_the_bound_are_folded_and_counted() -> None:
    scan = _Scan()
    for row in range(GROUPS_KEPT * 3):
        scan.count(f"agent-{row}")
    assert len(scan.groups) <= GROUPS_KEPT
    assert sum(scan.groups.values()) + scan.folded == GROUPS_KEPT * 3
