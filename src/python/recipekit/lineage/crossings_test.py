"""Crossings are counted from real ``dot -Tjson`` layouts of small graphs whose count is known."""

import json
import subprocess

from recipekit.lineage.crossings import edge_crossings, polyline_crossings


def _layout(dot: str) -> object:
    return json.loads(
        subprocess.run(
            ["dot", "-Tjson"], input=dot, text=True, capture_output=True, check=True
        ).stdout
    )


def test_crossed_straight_segments_count_once() -> None:
    assert polyline_crossings([(0, 0), (10, 10)], [(0, 10), (10, 0)]) == 1
    assert polyline_crossings([(0, 0), (10, 0)], [(0, 5), (10, 5)]) == 0


def test_a_forced_crossing_is_counted_and_a_shared_node_is_not() -> None:
    # Node order fixed by `ordering=out` and pos-less ranks: a1 -> b2 and a2 -> b1 must cross.
    crossed = """digraph { ordering=out; {rank=same; a1; a2;} {rank=same; b1; b2;}
      a1 -> b1 [style=invis]; a2 -> b2 [style=invis]; a1 -> b2; a2 -> b1; }"""
    assert edge_crossings(_layout(crossed)) == 1
    fan = "digraph { a -> b; a -> c; a -> d; }"
    assert edge_crossings(_layout(fan)) == 0
