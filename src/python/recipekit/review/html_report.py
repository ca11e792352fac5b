"""One self-contained HTML page for review: a plan, its memory, its layout, the lineage, a diff.

Everything is inline (CSS, the SVG drawings, no script, no font or image from elsewhere), so the
page shows the same with the network off: as a CI artifact, attached to a pull request, opened
from disk. Each part is a ``<section id="...">`` (``plan``, ``memory``, ``layout``, ``lineage``,
``diff``; a chain's stages as ``plan-STAGE``...) so tests and readers can find it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

import attrs

from recipekit.lineage.drawing import legend_rows
from recipekit.memory.estimate import GIB, MemoryEstimate, Phase
from recipekit.plan import Plan
from recipekit.review.keydiff import Change

_CSS = """
body { font-family: "DejaVu Sans", Helvetica, Arial, sans-serif; margin: 24px; color: #212121; }
h1 { font-size: 24px; } h2 { font-size: 19px; border-bottom: 1px solid #ccc; }
section { margin-bottom: 32px; }
/* Long plan lines (paths, key lists) wrap in the page instead of scrolling sideways. */
pre { background: #f7f7f7; padding: 12px; font-size: 13px;
      white-space: pre-wrap; overflow-wrap: anywhere; }
table { border-collapse: collapse; font-size: 13px; }
td, th { border: 1px solid #ddd; padding: 3px 8px; text-align: left; vertical-align: top; }
.lineage { border: 1px solid #ddd; }
/* The whole pipeline in the page's width; the browser's zoom reads it at its natural size. */
.lineage svg { width: 100%; height: auto; }
.legend span { display: inline-block; padding: 2px 8px; margin: 0 6px 6px 0; border: 2px solid; }
.added { color: #1b5e20; } .removed { color: #b71c1c; } .changed { color: #0d47a1; }
.fine { color: #2e7d32; } .tight { color: #e65100; } .over { color: #b71c1c; font-weight: bold; }
"""

BAR_WIDTH = 760
BAR_HEIGHT = 26
_TERM_COLOURS = ("#5c6bc0", "#26a69a", "#ffa726", "#ab47bc", "#8d6e63", "#78909c", "#d4e157")


@attrs.frozen
class Section:
    id: str
    heading: str
    body: str  # HTML


def page(title: str, sections: Sequence[Section]) -> str:
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{escape(title)}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>{escape(title)}</h1>",
    ]
    for section in sections:
        parts.append(f'<section id="{escape(section.id)}"><h2>{escape(section.heading)}</h2>')
        parts.append(section.body)
        parts.append("</section>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def text_section(section_id: str, heading: str, text: str) -> Section:
    return Section(section_id, heading, f"<pre>{escape(text)}</pre>")


def lineage_section(svg: str, *, with_status: bool, section_id: str = "lineage") -> Section:
    legend = ""
    if with_status:
        chips = "".join(
            f'<span style="background:{fill};border-color:{border}">{escape(state)}</span>'
            for state, fill, border in legend_rows()
        )
        legend = f'<div class="legend">{chips}</div>'
    heading = "Lineage with status" if with_status else "Lineage"
    return Section(section_id, heading, f'{legend}<div class="lineage">{svg}</div>')


def _phase_bar(phase: Phase) -> str:
    total = phase.total_bytes / GIB
    scale = max(phase.limit_gib, total) * 1.08 or 1.0

    def x(gib: float) -> float:
        return round(gib / scale * BAR_WIDTH, 1)

    shapes, at = [], 0.0
    shown = [t for t in phase.terms if t.bytes > 0]
    for number, term in enumerate(shown):
        colour = _TERM_COLOURS[number % len(_TERM_COLOURS)]
        shapes.append(
            f'<rect x="{x(at)}" y="4" width="{max(x(term.gib), 0.5)}" height="{BAR_HEIGHT}" '
            f'fill="{colour}"><title>{escape(term.name)}: {term.gib:.1f} GiB</title></rect>'
        )
        at += term.gib
    limit = x(phase.limit_gib)
    shapes.append(
        f'<line class="headroom" x1="{limit}" x2="{limit}" y1="0" y2="{BAR_HEIGHT + 8}" '
        'stroke="#b71c1c" stroke-width="2" stroke-dasharray="4 2"/>'
    )
    svg = (
        f'<svg class="memory-bar" width="{BAR_WIDTH + 4}" height="{BAR_HEIGHT + 10}" '
        f'xmlns="http://www.w3.org/2000/svg">{"".join(shapes)}</svg>'
    )
    verdict = "over" if phase.fraction > 1 else "tight" if phase.fraction > 0.9 else "fine"
    if not phase.warn_when_full:
        verdict = "over" if phase.fraction > 1 else "fine"
    head = (
        f"<b>{escape(phase.name)}</b> on {escape(phase.gpus)}: {total:.1f} of "
        f"{phase.limit_gib:.1f} GiB {escape(phase.limit_name)} "
        f'<span class="{verdict}">({100 * phase.fraction:.0f}%, headroom '
        f"{phase.headroom_gib:.1f} GiB)</span>"
    )
    key = ", ".join(
        f'<span style="color:{_TERM_COLOURS[i % len(_TERM_COLOURS)]}">&#9632;</span> '
        f"{escape(t.name)} {t.gib:.1f}"
        for i, t in enumerate(shown)
    )
    notes = "".join(f"<div>{escape(n)}</div>" for n in phase.notes)
    return f'<div class="phase">{head}<br>{svg}<div>{key} GiB</div>{notes}</div>'


def memory_section(estimate: MemoryEstimate | None, section_id: str = "memory") -> Section:
    if estimate is None:
        return Section(section_id, "Memory per GPU", "<p>No memory estimate for this stage.</p>")
    bars = "".join(_phase_bar(phase) for phase in estimate.phases)
    assumed = "".join(f"<li>{escape(a)}</li>" for a in estimate.assumptions)
    legend = "<p>Bars: each term per GPU; the dashed red line is the limit (headroom to it).</p>"
    return Section(
        section_id,
        "Memory per GPU",
        legend + bars + (f"<ul>{assumed}</ul>" if assumed else ""),
    )


def table_section(section_id: str, heading: str, rows: Mapping[str, Any]) -> Section:
    body = "".join(
        f"<tr><th>{escape(str(k))}</th><td>{escape(_shown(v))}</td></tr>" for k, v in rows.items()
    )
    return Section(section_id, heading, f"<table>{body}</table>")


def _shown(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str)


def diff_section(title: str, by_target: Mapping[str, list[Change]]) -> Section:
    rows = []
    for target, changes in by_target.items():
        if not changes:
            continue
        rows.append(f'<tr><th colspan="4">{escape(target)}</th></tr>')
        for c in changes:
            old = "" if c.kind == "added" else _shown(c.old)
            new = "" if c.kind == "removed" else _shown(c.new)
            rows.append(
                f'<tr class="{c.kind}"><td>{c.kind}</td><td>{escape(c.key)}</td>'
                f"<td>{escape(old)}</td><td>{escape(new)}</td></tr>"
            )
    unchanged = [t for t, c in by_target.items() if not c]
    body = (
        "<table><tr><th>change</th><th>key</th><th>before</th><th>after</th></tr>"
        + "".join(rows)
        + "</table>"
        if rows
        else "<p>No compiled key changed.</p>"
    )
    if unchanged:
        body += f"<p>Unchanged: {escape(', '.join(unchanged))}</p>"
    return Section("diff", f"Changes: {title}", body)


def stage_sections(plan: Plan, *, one_of_many: bool = False) -> list[Section]:
    """A stage's plan summary, memory bars and parallel layout (ids ``plan-NAME``... when the
    page holds several stages)."""
    from recipekit.report import plan_text

    name = plan.stage.name

    def section_id(kind: str) -> str:
        return f"{kind}-{name}" if one_of_many else kind

    head = f"{name}: " if one_of_many else ""
    memory = memory_section(plan.memory, section_id("memory"))
    return [
        text_section(section_id("plan"), f"{head}plan", plan_text(plan)),
        attrs.evolve(memory, heading=head + memory.heading),
        table_section(section_id("layout"), f"{head}layout", plan.layout.as_json()),
    ]
