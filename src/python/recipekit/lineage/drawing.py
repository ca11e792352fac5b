"""The stage graph of a pipeline as SVG: stages, artifacts, selected steps, blocked stages.

Hand-written SVG text from the standard library, no layout engine, top to bottom: layers by
depth (an artifact one layer below its producer, a stage one below its latest input; a source
artifact just above its first reader), each layer ordered by the mean position of what feeds
it. The same
pipeline always gives the same bytes.

Every node is a ``<g>`` with ``id="stage:NAME"`` or ``id="artifact:NAME"``, a ``class`` saying
what it is (``stage``, ``stage blocked``, ``conversion``, ``artifact``, ``artifact imported``,
``input external``), and a ``<title>`` (the blocked reason, the import command), so tests and
browsers can read it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from xml.sax.saxutils import escape, quoteattr

import attrs

from recipekit.lineage.graph import Pipeline
from recipekit.lineage.refs import ArtifactRef, ExternalInput

BOX_WIDTH = 320  # the longest Super 3.5 artifact name is 48 characters
COLUMN_WIDTH = BOX_WIDTH + 24
BOX_HEIGHT = 34
ROW_HEIGHT = BOX_HEIGHT + 30
MARGIN = 24
HEADER = 40

_STYLE = """
  text { font-family: DejaVu Sans, Helvetica, Arial, sans-serif; font-size: 11px; fill: #222; }
  .stage rect { fill: #e8f5e9; stroke: #2e7d32; stroke-width: 1.5; }
  .conversion rect { fill: #f5f5f5; stroke: #616161; stroke-width: 1.2; }
  .blocked rect { fill: #ffebee; stroke: #c62828; stroke-width: 2; stroke-dasharray: 6 3; }
  .blocked .mark { fill: #c62828; font-weight: bold; font-size: 9px; }
  .artifact rect { fill: #e3f2fd; stroke: #1565c0; stroke-width: 1.2; }
  .imported rect { fill: #fffde7; stroke: #f9a825; }
  .external rect { fill: #fafafa; stroke: #9e9e9e; stroke-dasharray: 3 3; }
  .release rect { stroke: #6a1b9a; stroke-width: 3; }
  .sub { font-size: 9px; fill: #555; }
  .edge { fill: none; stroke: #777; stroke-width: 1; }
  .selected { stroke: #6a1b9a; stroke-width: 2; }
  .step { font-size: 9px; fill: #6a1b9a; font-weight: bold; }
"""


@attrs.frozen
class _Node:
    id: str
    label: str
    kind: str  # the class attribute
    sub: str = ""  # a second, smaller line
    title: str = ""


@attrs.frozen
class _Edge:
    source: str
    target: str
    label: str = ""  # "step 120", "v3"
    selected: bool = False


def _graph(pipeline: Pipeline) -> tuple[dict[str, _Node], list[_Edge]]:
    nodes: dict[str, _Node] = {}
    edges: list[_Edge] = []
    imported = pipeline.imported()
    steps = pipeline.selected_steps()
    release = pipeline.release
    for name in pipeline.artifacts():
        kinds = ["artifact"]
        notes = []
        if name in imported:
            kinds.append("imported")
            notes.append("importable")
        if name in steps:
            notes.append("selected: " + ", ".join(f"step {s}" for s in steps[name]))
        if release is not None and name == release.name:
            kinds.append("release")
            notes.append(f"release: step {release.step}" if release.step is not None else "release")
        nodes[f"artifact:{name}"] = _Node(
            f"artifact:{name}", name, " ".join(kinds), "; ".join(notes), imported.get(name, "")
        )
    conversions = {c.stage for c in pipeline.conversions}
    for step in pipeline.steps():
        kind = "conversion" if step.stage in conversions else "stage"
        if step.blocked:
            kind += " blocked"
        sub = step.command
        node_id = f"stage:{step.stage}"
        nodes[node_id] = _Node(node_id, step.stage, kind, sub, step.blocked)
        for role, source in step.inputs.items():
            if isinstance(source, ArtifactRef):
                label = f"step {source.step}" if source.step is not None else ""
                if source.version is not None:
                    label = source.selector
                selected = source.step is not None
                edges.append(_Edge(f"artifact:{source.name}", node_id, label, selected))
            else:
                ext = _external(step.stage, role, source)
                nodes[ext.id] = ext
                edges.append(_Edge(ext.id, node_id))
        if step.output is not None:
            edges.append(_Edge(node_id, f"artifact:{step.output}"))
        elif step.output_note:
            result = _Node(f"result:{step.stage}", step.output_note, "result external")
            nodes[result.id] = result
            edges.append(_Edge(node_id, result.id))
    return nodes, edges


def _external(stage: str, role: str, source: ExternalInput) -> _Node:
    sub = f"${source.env_var}" if source.env_var else ""
    return _Node(f"input:{stage}.{role}", source.description, "input external", sub)


def _columns(nodes: dict[str, _Node], edges: list[_Edge]) -> dict[str, int]:
    preds: dict[str, list[str]] = {n: [] for n in nodes}
    succs: dict[str, list[str]] = {n: [] for n in nodes}
    for e in edges:
        preds[e.target].append(e.source)
        succs[e.source].append(e.target)
    column: dict[str, int] = {}

    def depth(node: str) -> int:
        if node not in column:
            column[node] = 1 + max((depth(p) for p in preds[node]), default=-1)
        return column[node]

    for node in nodes:
        depth(node)
    # A source (imported data, an environment path) sits just before its first reader, not in
    # column 0 with every other source.
    for node in nodes:
        if not preds[node] and succs[node]:
            column[node] = max(0, min(column[s] for s in succs[node]) - 1)
    return column


def _rows(nodes: dict[str, _Node], edges: list[_Edge], column: dict[str, int]) -> dict[str, int]:
    preds: dict[str, list[str]] = {n: [] for n in nodes}
    for e in edges:
        preds[e.target].append(e.source)
    order = list(nodes)  # declaration order breaks ties
    rank = {n: i for i, n in enumerate(order)}
    row: dict[str, float] = {}
    for col in range(max(column.values(), default=-1) + 1):
        members = [n for n in order if column[n] == col]

        def key(node: str) -> tuple[float, int]:
            placed = [row[p] for p in preds[node] if p in row]
            return (sum(placed) / len(placed) if placed else rank[node], rank[node])

        for i, node in enumerate(sorted(members, key=key)):
            row[node] = i
    return {n: int(r) for n, r in row.items()}


def _box(node: _Node, x: int, y: int) -> list[str]:
    out = [f"<g id={quoteattr(node.id)} class={quoteattr(node.kind)}>"]
    if node.title:
        out.append(f"<title>{escape(node.title)}</title>")
    out.append(f'<rect x="{x}" y="{y}" width="{BOX_WIDTH}" height="{BOX_HEIGHT}" rx="5"/>')
    text_y = y + (14 if node.sub else 21)
    out.append(f'<text x="{x + 8}" y="{text_y}">{escape(node.label)}</text>')
    if node.sub:
        out.append(f'<text class="sub" x="{x + 8}" y="{y + 27}">{escape(node.sub)}</text>')
    if "blocked" in node.kind.split():
        out.append(f'<text class="mark" x="{x + BOX_WIDTH - 56}" y="{y + 14}">BLOCKED</text>')
    out.append("</g>")
    return out


def draw_svg(pipeline: Pipeline, *, title: str = "") -> str:
    """The pipeline's stage graph as an SVG document."""
    nodes, edges = _graph(pipeline)
    column = _columns(nodes, edges)
    row = _rows(nodes, edges, column)
    # ``column`` is the depth (drawn as a layer, top to bottom), ``row`` the place in the layer.
    width = MARGIN * 2 + (max(row.values()) + 1) * COLUMN_WIDTH - (COLUMN_WIDTH - BOX_WIDTH)
    height = HEADER + MARGIN * 2 + (max(column.values()) + 1) * ROW_HEIGHT

    def at(node: str) -> tuple[int, int]:
        return MARGIN + row[node] * COLUMN_WIDTH, HEADER + MARGIN + column[node] * ROW_HEIGHT

    heading = title or f"{pipeline.name}: artifact lineage"
    lines = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}">',
        f"<style>{_STYLE}</style>",
        f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
        f'<text x="{MARGIN}" y="{MARGIN + 8}" style="font-size:15px;font-weight:bold">'
        f"{escape(heading)}</text>",
        f'<text class="sub" x="{MARGIN}" y="{MARGIN + 24}">green: stage; red dashed: blocked; '
        "blue: artifact; yellow: importable; purple: selected step / release</text>",
    ]
    lines += _edges(edges, at)
    for node_id in sorted(nodes, key=lambda n: (column[n], row[n])):
        lines += _box(nodes[node_id], *at(node_id))
    lines.append("</svg>")
    return "\n".join(lines) + "\n"


def _edges(edges: Iterable[_Edge], at: Callable[[str], tuple[int, int]]) -> list[str]:
    out = ['<g id="edges">']
    for e in edges:
        sx, sy = at(e.source)
        tx, ty = at(e.target)
        x1, y1 = sx + BOX_WIDTH // 2, sy + BOX_HEIGHT
        x2, y2 = tx + BOX_WIDTH // 2, ty
        bend = max(12, (y2 - y1) // 2)
        css = "edge selected" if e.selected else "edge"
        data = f'data-source={quoteattr(e.source)} data-target={quoteattr(e.target)}'
        out.append(
            f'<path class="{css}" {data} '
            f'd="M{x1},{y1} C{x1},{y1 + bend} {x2},{y2 - bend} {x2},{y2}"/>'
        )
        if e.label:
            out.append(f'<text class="step" x="{x2 + 4}" y="{y2 - 4}">{escape(e.label)}</text>')
    out.append("</g>")
    return out
