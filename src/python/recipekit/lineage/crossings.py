"""Edge crossings of a Graphviz layout, counted from ``dot -Tjson``'s coordinates.

Each edge's ``pos`` is a B-spline (``[s,X,Y] [e,X,Y] P0 P1 P2 P3 ...``, piecewise cubic Bézier
control points); each piece is sampled into a polyline and every proper intersection of two
edges that share no end node is one crossing. Edges meeting at a node (a stage's inputs) touch
there by design and are not counted; invisible edges (the phases' order) are not drawn.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import combinations
from typing import Any

Point = tuple[float, float]
SAMPLES_PER_PIECE = 12


def _control_points(pos: str) -> list[Point]:
    points = []
    for word in pos.split():
        if word.startswith(("e,", "s,")):
            continue  # the arrow's tip and the start point are not on the spline
        x, y = word.split(",")
        points.append((float(x), float(y)))
    return points


def _bezier(p0: Point, p1: Point, p2: Point, p3: Point, t: float) -> Point:
    u = 1 - t
    a, b, c, d = u**3, 3 * u * u * t, 3 * u * t * t, t**3
    return (
        a * p0[0] + b * p1[0] + c * p2[0] + d * p3[0],
        a * p0[1] + b * p1[1] + c * p2[1] + d * p3[1],
    )


def polyline(pos: str) -> list[Point]:
    """The spline of an edge's ``pos`` as a polyline."""
    control = _control_points(pos)
    line = control[:1]
    for start in range(0, len(control) - 3, 3):
        p0, p1, p2, p3 = control[start : start + 4]
        line += [
            _bezier(p0, p1, p2, p3, i / SAMPLES_PER_PIECE) for i in range(1, SAMPLES_PER_PIECE + 1)
        ]
    return line


def _orientation(a: Point, b: Point, c: Point) -> float:
    return (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])


def _segments_cross(a: Point, b: Point, c: Point, d: Point) -> bool:
    """Proper crossing: each segment's ends strictly on both sides of the other's line."""
    d1, d2 = _orientation(c, d, a), _orientation(c, d, b)
    d3, d4 = _orientation(a, b, c), _orientation(a, b, d)
    return d1 * d2 < 0 and d3 * d4 < 0


def _boxes_meet(p: Sequence[Point], q: Sequence[Point]) -> bool:
    return not (
        max(x for x, _ in p) < min(x for x, _ in q)
        or max(x for x, _ in q) < min(x for x, _ in p)
        or max(y for _, y in p) < min(y for _, y in q)
        or max(y for _, y in q) < min(y for _, y in p)
    )


def polyline_crossings(p: Sequence[Point], q: Sequence[Point]) -> int:
    if not _boxes_meet(p, q):
        return 0
    count = 0
    for a, b in zip(p, p[1:], strict=False):
        for c, d in zip(q, q[1:], strict=False):
            count += _segments_cross(a, b, c, d)
    return count


def drawn_edges(layout: Any) -> Iterable[tuple[int, int, list[Point]]]:
    """(tail, head, polyline) of every visible edge of a ``dot -Tjson`` layout."""
    for edge in layout.get("edges", []):
        if "invis" in edge.get("style", "") or "pos" not in edge:
            continue
        yield edge["tail"], edge["head"], polyline(edge["pos"])


def edge_crossings(layout: Any) -> int:
    """How many times two visible edges with no end node in common cross."""
    edges = list(drawn_edges(layout))
    return sum(
        polyline_crossings(p, q)
        for (t1, h1, p), (t2, h2, q) in combinations(edges, 2)
        if not {t1, h1} & {t2, h2}
    )
