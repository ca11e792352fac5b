"""The stage graph of a pipeline, laid out by Graphviz's ``dot``: stages, artifacts, status.

The graph is written as DOT text and laid out by the ``dot`` program (Debian's ``graphviz``),
top to bottom, each of the pipeline's phases (pretrain, SFT, RL trunk, teachers, MOPD, export,
eval) a labelled band. Imported data that one stage alone reads is folded into that stage's box,
as are inputs from outside the store (an environment path) and a result that is not an artifact:
only what links stages is drawn as its own node. Selected steps are purple edges labelled with
the step; blocked stages are red and dashed; with a status, each stage is filled by its state
and shows its job, elapsed time, saved step and store version.

Every node of the SVG is a ``<g>`` with ``id="stage:NAME"`` or ``id="artifact:NAME"`` and a
``class`` saying what it is (``node stage``, ``node stage blocked``, ``node conversion``, ``node
artifact imported``, ``node stage state-running``...); a folded artifact is a ``<text>`` of its
consumer's box. Edges are ``<g class="edge [selected]">``. The same input always gives the
same bytes.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Mapping
from typing import Any
from xml.sax.saxutils import escape

import attrs

from recipekit.errors import Issue, RecipeError
from recipekit.lineage.graph import Pipeline, StageLineage
from recipekit.lineage.refs import ArtifactRef, ExternalInput
from recipekit.lineage.status import StageState, StageStatus

FONT = "DejaVu Sans"
NAME_POINTS = 16  # readable at the drawing's natural size, without zooming
DETAIL_POINTS = 12
SELECTED = "#6a1b9a"

# (fill, border, border style) of a stage by state; the legend lists them in this order.
STATE_STYLE: dict[StageState, tuple[str, str, str]] = {
    StageState.UP_TO_DATE: ("#b2dfdb", "#00695c", "solid"),
    StageState.QUEUED: ("#fff59d", "#f9a825", "solid"),
    StageState.RUNNING: ("#90caf9", "#1565c0", "bold"),
    StageState.DONE: ("#a5d6a7", "#2e7d32", "solid"),
    StageState.FAILED: ("#ef9a9a", "#b71c1c", "bold"),
    StageState.REQUEUED: ("#ffcc80", "#e65100", "bold"),
    StageState.BLOCKED: ("#eeeeee", "#c62828", "dashed"),
    StageState.SKIPPED: ("#fafafa", "#9e9e9e", "dotted"),
}
_STAGE = ("#e8f5e9", "#2e7d32", "solid")
_BLOCKED = ("#ffebee", "#c62828", "dashed")
_CONVERSION = ("#f5f5f5", "#616161", "solid")
_ARTIFACT = ("#e3f2fd", "#1565c0", "solid")
_IMPORTED = ("#fffde7", "#f9a825", "solid")

INSTALL_HINT = "install Debian's graphviz (tools/install-system-deps does)"


@attrs.frozen
class _Node:
    id: str
    name: str
    kind: str  # the SVG class, beside Graphviz's own "node"
    lines: tuple[str, ...] = ()  # smaller lines under the name
    tooltip: str = ""
    style: tuple[str, str, str] = _STAGE
    phase: str = ""


@attrs.frozen
class _Edge:
    id: str
    source: str
    target: str
    label: str = ""
    selected: bool = False


def folded_artifacts(pipeline: Pipeline) -> dict[str, str]:
    """Imported artifacts that no stage publishes and one stage alone reads -> that stage: the
    drawing shows them inside the reader's box rather than as a node of their own."""
    produced = set(pipeline.producers())
    readers: dict[str, list[str]] = {}
    for step in pipeline.steps():
        for ref in step.artifact_inputs().values():
            readers.setdefault(ref.name, []).append(step.stage)
    return {
        name: readers[name][0]
        for name in pipeline.imported()
        if name not in produced and len(readers.get(name, ())) == 1
    }


def _graph(
    pipeline: Pipeline, status: Mapping[str, StageStatus] | None
) -> tuple[list[_Node], list[_Edge]]:
    folded = folded_artifacts(pipeline)
    imported = pipeline.imported()
    selected = pipeline.selected_steps()
    release = pipeline.release
    phase_of = pipeline.phase_of()
    producers = pipeline.producers()
    nodes: list[_Node] = []
    edges: list[_Edge] = []
    for step in pipeline.steps():
        nodes.append(_stage_node(pipeline, step, folded, phase_of, status))
        for role, source in step.artifact_inputs().items():
            if source.name in folded:
                continue
            label = source.selector if source.version is not None else ""
            if source.step is not None:
                label = f"step {source.step}"
            edges.append(
                _Edge(
                    f"edge:{role}:artifact:{source.name}->stage:{step.stage}",
                    f"artifact:{source.name}",
                    f"stage:{step.stage}",
                    label,
                    selected=source.step is not None,
                )
            )
        if step.output is not None:
            edges.append(
                _Edge(
                    f"edge:output:stage:{step.stage}->artifact:{step.output}",
                    f"stage:{step.stage}",
                    f"artifact:{step.output}",
                )
            )
    for name in pipeline.artifacts():
        if name in folded:
            continue
        kinds, lines = ["artifact"], []
        style = _ARTIFACT
        if name in imported:
            kinds.append("imported")
            lines.append("importable: " + imported[name])
            style = _IMPORTED if name not in producers else style
        if name in selected:
            lines.append("selected: " + ", ".join(f"step {s}" for s in selected[name]))
        if release is not None and name == release.name:
            kinds.append("release")
            lines.append(f"RELEASE: step {release.step}" if release.step is not None else "RELEASE")
        phase = phase_of.get(producers.get(name, ""), "")
        nodes.append(
            _Node(f"artifact:{name}", name, " ".join(kinds), tuple(lines), style=style, phase=phase)
        )
    return nodes, edges


def _stage_node(
    pipeline: Pipeline,
    step: StageLineage,
    folded: Mapping[str, str],
    phase_of: Mapping[str, str],
    status: Mapping[str, StageStatus] | None,
) -> _Node:
    conversion = any(c.stage == step.stage for c in pipeline.conversions)
    kinds = ["conversion" if conversion else "stage"]
    style = _CONVERSION if conversion else _STAGE
    lines: list[str] = [step.command] if step.command else []
    for role, source in step.inputs.items():
        if isinstance(source, ExternalInput):
            where = f" (${source.env_var})" if source.env_var else ""
            lines.append(f"{role}: {source.description}{where}")
        elif isinstance(source, ArtifactRef) and source.name in folded:
            ref = source.name if source.selector == "latest" else str(source)
            lines.append(f"{role}: {ref} (imported)")
    if step.output is None and step.output_note:
        lines.append(f"-> {step.output_note}")
    shown = None if status is None else status.get(step.stage)
    if step.blocked:
        kinds.append("blocked")
        style = _BLOCKED
        if shown is None:  # a status's first line says it
            lines.insert(0, "BLOCKED")
    if shown is not None:
        kinds.append("state-" + shown.state.name.lower().replace("_", "-"))
        style = STATE_STYLE[shown.state]
        lines = [*shown.lines(), *lines]
    return _Node(
        f"stage:{step.stage}",
        step.stage,
        " ".join(kinds),
        tuple(lines),
        tooltip=step.blocked,
        style=style,
        phase=phase_of.get(step.stage, ""),
    )


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _label(node: _Node) -> str:
    # An HTML-like label: the name in bold, each further line smaller. Graphviz escapes '&'
    # itself only in plain labels, so the text is XML-escaped here.
    rows = [f'<B><FONT POINT-SIZE="{NAME_POINTS}">{escape(node.name)}</FONT></B>']
    rows += [f'<FONT POINT-SIZE="{DETAIL_POINTS}">{escape(line)}</FONT>' for line in node.lines]
    return "<" + '<BR ALIGN="LEFT"/>'.join(rows) + '<BR ALIGN="LEFT"/>>'


def _node_line(node: _Node) -> str:
    fill, border, line_style = node.style
    shape = "box"
    styles = ["filled", "rounded" if node.kind.startswith("stage") else ""]
    if node.kind.startswith("artifact"):
        shape = "note"
        styles = ["filled"]
    styles.append(line_style)
    attributes = {
        "id": _quote(node.id),
        "class": _quote(node.kind),
        "label": _label(node),
        "shape": shape,
        "style": _quote(",".join(s for s in styles if s and s != "solid")),
        "fillcolor": _quote(fill),
        "color": _quote(border),
        "penwidth": "3" if "release" in node.kind.split() else "1.5",
    }
    if node.tooltip:
        attributes["tooltip"] = _quote(node.tooltip)
    body = " ".join(f"{k}={v}" for k, v in attributes.items())
    return f"  {_quote(node.id)} [{body}];"


def _edge_line(edge: _Edge) -> str:
    attributes = {"id": _quote(edge.id), "class": _quote("selected" if edge.selected else "")}
    if edge.label:
        attributes["xlabel"] = _quote(edge.label)
    if edge.selected:
        attributes |= {"color": _quote(SELECTED), "fontcolor": _quote(SELECTED), "penwidth": "2"}
    body = " ".join(f"{k}={v}" for k, v in attributes.items())
    return f"  {_quote(edge.source)} -> {_quote(edge.target)} [{body}];"


def lineage_dot(
    pipeline: Pipeline, *, status: Mapping[str, StageStatus] | None = None, title: str = ""
) -> str:
    """The pipeline as DOT text, each phase a cluster in the pipeline's order."""
    nodes, edges = _graph(pipeline, status)
    heading = title or f"{pipeline.name}: artifact lineage"
    lines = [
        f"digraph {_quote(pipeline.name)} {{",
        f"  graph [label={_quote(heading)} labelloc=t fontsize=22 fontname={_quote(FONT)} "
        "rankdir=TB newrank=true nodesep=0.3 ranksep=0.45 pad=0.3 "
        'bgcolor="white" id="lineage"];',
        f'  node [fontname={_quote(FONT)} margin="0.15,0.06"];',
        f'  edge [fontname={_quote(FONT)} fontsize={DETAIL_POINTS} color="#666666" '
        "arrowsize=0.7];",
    ]
    by_phase: dict[str, list[_Node]] = {}
    for node in nodes:
        by_phase.setdefault(node.phase, []).append(node)
    for number, phase in enumerate(pipeline.phases):
        members = by_phase.get(phase.name, [])
        if not members:
            continue
        lines.append(f"  subgraph cluster_{number} {{")
        lines.append(
            f"    graph [label={_quote(phase.name)} id={_quote('phase:' + phase.name)} "
            'class="phase" labeljust=l fontsize=18 style="rounded,filled" fillcolor="#fbfbfb" '
            'color="#bdbdbd"];'
        )
        lines += ["  " + _node_line(n) for n in members]
        lines.append("  }")
    lines += [_node_line(n) for n in by_phase.get("", [])]
    lines += [_edge_line(e) for e in edges]
    lines += [
        f"  {_quote(a)} -> {_quote(b)} [style=invis weight=0];" for a, b in _phase_order(pipeline)
    ]
    lines.append("}")
    return "\n".join(lines) + "\n"


def _phase_order(pipeline: Pipeline) -> list[tuple[str, str]]:
    """Invisible edges that keep each phase wholly below the one before it: from every artifact
    the phase before publishes to each stage that opens the phase (reads nothing of its own
    phase). Without them a stage reading from further up (RLHF teacher 1 reads SFT, not RLVR),
    or one whose inputs end early (MOPD phase 1), rises beside the phase before."""
    phase_of = pipeline.phase_of()
    producers = pipeline.producers()
    steps = {s.stage: s for s in pipeline.steps()}
    edges: list[tuple[str, str]] = []
    phases = [p for p in pipeline.phases if p.stages]
    for before, phase in zip(phases, phases[1:], strict=False):
        published = [
            f"artifact:{steps[n].output}" if steps[n].output else f"stage:{n}"
            for n in before.stages
        ]
        for name in phase.stages:
            reads = {
                phase_of.get(producers.get(r.name, ""), "")
                for r in steps[name].artifact_inputs().values()
            }
            if phase.name not in reads:
                edges += [(source, f"stage:{name}") for source in published]
    return edges


def run_dot(dot_text: str, output_format: str) -> str:
    """``dot -T<output_format>`` of ``dot_text``; a missing ``dot`` is one line with its fix."""
    program = shutil.which("dot")
    if program is None:
        raise RecipeError([Issue("dot", "Graphviz's dot is not on PATH", hint=INSTALL_HINT)])
    done = subprocess.run(
        [program, f"-T{output_format}"],
        input=dot_text,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RecipeError([Issue("dot", f"failed: {done.stderr.strip()}")])
    return done.stdout


def draw_svg(
    pipeline: Pipeline, *, status: Mapping[str, StageStatus] | None = None, title: str = ""
) -> str:
    """The pipeline's stage graph as an SVG document laid out by ``dot``."""
    svg = run_dot(lineage_dot(pipeline, status=status, title=title), "svg")
    # Graphviz's XML prologue names an external DTD; an SVG inlined in HTML must start at <svg.
    # It writes every '-' of a text as "&#45;", which is the same character to an XML reader
    # and unreadable to grep.
    return svg[svg.index("<svg") :].replace("&#45;", "-")


def layout_json(pipeline: Pipeline, *, status: Mapping[str, StageStatus] | None = None) -> Any:
    """``dot -Tjson``: the layout's nodes and edges with their coordinates (points)."""
    return json.loads(run_dot(lineage_dot(pipeline, status=status), "json"))


def legend_rows() -> list[tuple[str, str, str]]:
    """(state, fill, border) for each state, in the legend's order."""
    return [(state.value, fill, border) for state, (fill, border, _) in STATE_STYLE.items()]
