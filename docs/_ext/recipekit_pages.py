"""The guide's generated pages: written from the code and the checked-in plans on every build.

A Sphinx extension (``conf.py``'s ``extensions``). Before Sphinx reads a page it writes
``reference/_generated/*.md`` from what the repository holds, so no reference page is written
twice by hand:

- the run-time rule catalogue's coverage table (``tools/rule_catalogue.py``'s ``coverage_table``)
  and every rule with its upstream citation (``recipekit/rule_catalogue/*.toml``);
- the stages of ``recipes/`` with their layouts, lineage and memory, read from each stage's
  compiled plan snapshot (``recipes/<folder>/snapshots/<stage>/plan.yaml``, which
  ``snapshots_test.py`` holds to the recipes);
- the memory terms, each with the formulas the stages' estimates state for it.

The repository root is found from this file (``docs/_ext/`` -> ``..``/``..``), or from
``RECIPEKIT_DOCS_ROOT`` where the docs were copied elsewhere to be built.
"""

from __future__ import annotations

import os
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

GENERATED = Path("reference") / "_generated"


def repository_root() -> Path:
    configured = os.environ.get("RECIPEKIT_DOCS_ROOT")
    return Path(configured) if configured else Path(__file__).resolve().parents[2]


def _importable(root: Path) -> None:
    for entry in (root, root / "src" / "python"):
        if str(entry) not in sys.path:
            sys.path.insert(0, str(entry))


def _cell(text: Any) -> str:
    """One Markdown table cell: pipes escaped, one line."""
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ").strip()


def _code(text: str) -> str:
    return f"`{text}`" if "`" not in text else f"``{text}``"


# The rule catalogue -------------------------------------------------------------------------


def rule_coverage_page() -> str:
    from tools.rule_catalogue import coverage_table

    return coverage_table() + "\n"


def _citation(entry: Any) -> str:
    from recipekit import rule_catalogue

    if entry.from_issue:
        return f"upstream thread {entry.thread}"
    # The line where the pinned file is fetched (the anchor finds it), else the anchor.
    line = rule_catalogue.locate_line(entry)
    where = f"{entry.file}:{line}" if line else f"{entry.file} ({entry.anchor})"
    return f"{entry.source} @ {entry.commit}: {where}"


def rules_page(framework: str) -> str:
    from recipekit import rule_catalogue

    entries = [e for e in rule_catalogue.load() if e.framework == framework]
    mirrored = sum(e.mirrored for e in entries)
    lines = [
        f"# {framework}: every catalogued rule",
        "",
        f"{len(entries)} rules, {mirrored} mirrored by a plan-time check. Generated from "
        f"`src/python/recipekit/rule_catalogue/{framework}*.toml` on every build.",
        "",
        "| rule | where upstream | kind, phase | keys | condition | plan-time check, or why none |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for e in entries:
        keys = ", ".join(_code(k) for k in e.keys) or "(none)"
        verdict = _code(e.check) if e.check else f"{e.reason}: {_cell(e.detail)}"
        lines.append(
            f"| {_code(e.id)} | {_cell(_citation(e))} | {e.kind}, {e.phase} | {keys} "
            f"| {_cell(e.condition)} | {verdict} |"
        )
    return "\n".join(lines) + "\n"


# The stages of recipes/ ---------------------------------------------------------------------


def snapshot_plans(root: Path) -> list[tuple[str, dict[str, Any]]]:
    """(recipe folder, plan) for every checked-in plan snapshot, in folder and stage order."""
    import yaml

    found = []
    for path in sorted((root / "recipes").glob("*/snapshots/*/plan.yaml")):
        plan = yaml.safe_load(path.read_text(encoding="utf-8"))
        found.append((path.parent.parent.parent.name, plan))
    return found


def _hardware(plan: dict[str, Any]) -> str:
    hw = plan.get("hardware") or {}
    return f"{hw.get('num_nodes')} x {hw.get('node')} ({hw.get('gpus_per_node')} GPUs a node)"


def _peak(plan: dict[str, Any]) -> str:
    phases = ((plan.get("memory") or {}).get("phases")) or []
    if not phases:
        return "no estimate"
    top = max(phases, key=lambda p: p.get("percent", 0))
    return (
        f"{top['phase']}: {top['total_gib']:.1f} of {top['limit_gib']:.1f} GiB "
        f"({top['percent']:.0f}%)"
    )


def stages_page(root: Path) -> str:
    plans = snapshot_plans(root)
    lines = [
        "# Stages of recipes/",
        "",
        "Every stage a recipe module defines, read from its compiled plan snapshot "
        "(`recipes/<folder>/snapshots/<stage>/plan.yaml`; `snapshots_test.py` fails when a "
        "snapshot no longer matches its recipe). Plan one with "
        "`./pants run recipes/<folder>:<stage>`.",
        "",
        "| target | framework | hardware | memory peak | reads | writes |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for folder, plan in plans:
        fw = plan.get("framework") or {}
        lineage = plan.get("lineage") or {}
        reads = ", ".join(f"{k}: {_code(str(v))}" for k, v in (lineage.get("inputs") or {}).items())
        writes = _code(str(lineage["output"])) if lineage.get("output") else ""
        lines.append(
            f"| [`recipes/{folder}:{plan['stage']}`](#stage-{plan['stage']}) "
            f"| {_cell(fw.get('name'))} {_cell(fw.get('version', ''))} "
            f"| {_cell(_hardware(plan))} | {_cell(_peak(plan))} | {reads} | {writes} |"
        )
    for folder, plan in plans:
        lines += ["", f"(stage-{plan['stage']})=", f"## {plan['stage']}", ""]
        lines += [
            f"`./pants run recipes/{folder}:{plan['stage']}`: {_cell(plan.get('description', ''))}",
            "",
        ]
        fw = plan.get("framework") or {}
        lines += [
            f"- framework: {fw.get('name')} {fw.get('version', '')}, "
            f"{_code(str(fw.get('entry_point', '')))}, launched {fw.get('launch', '')}",
            f"- hardware: {_hardware(plan)}; model {_code(str(plan.get('model', '')))}",
        ]
        layout = plan.get("layout") or {}
        if layout:
            sizes = ", ".join(f"{k} {v}" for k, v in layout.items())
            lines.append(f"- layout: {sizes}")
        lineage = plan.get("lineage") or {}
        for name, ref in (lineage.get("inputs") or {}).items():
            lines.append(f"- reads {name}: {_code(str(ref))}")
        if lineage.get("output"):
            lines.append(f"- writes: {_code(str(lineage['output']))}")
        if lineage.get("keep_steps"):
            lines.append(f"- keeps steps: {', '.join(str(s) for s in lineage['keep_steps'])}")
        for phase in ((plan.get("memory") or {}).get("phases")) or []:
            terms = ", ".join(f"{t['name']} {t['gib']:.2f}" for t in phase.get("terms", []))
            lines.append(
                f"- memory, {phase['phase']} on {phase['gpus']}: {phase['total_gib']:.1f} of "
                f"{phase['limit_gib']:.1f} GiB ({phase['limit']}): {terms} GiB"
            )
        for warning in plan.get("warnings") or []:
            lines.append(
                f"- warning: {_code(str(warning.get('path', '')))}: "
                f"{_cell(warning.get('message', ''))}"
            )
    return "\n".join(lines) + "\n"


def memory_terms_page(root: Path) -> str:
    formulas: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for _folder, plan in snapshot_plans(root):
        for phase in ((plan.get("memory") or {}).get("phases")) or []:
            for term in phase.get("terms", []):
                formulas[term["name"]][term.get("detail", "")].append(plan["stage"])
    lines = [
        "# Memory terms",
        "",
        "Each term of the per-GPU memory estimate, with the formula each stage's estimate states "
        "for it (the term's `detail`, as `plan --format json` prints it), read from the stages' "
        "plan snapshots. How the terms are derived and measured: {doc}`/design/memory-model`.",
    ]
    for name in sorted(formulas, key=str.lower):
        lines += ["", f"## {name}", ""]
        for detail, stages in sorted(formulas[name].items(), key=lambda d: (-len(d[1]), d[0])):
            shown = ", ".join(sorted(set(stages))[:6]) + (" ..." if len(set(stages)) > 6 else "")
            lines.append(f"- {_cell(detail) or '(no detail)'} ({shown})")
    return "\n".join(lines) + "\n"


def lineage_page(root: Path) -> str:
    producers: dict[str, list[str]] = defaultdict(list)
    readers: dict[str, list[str]] = defaultdict(list)
    for _folder, plan in snapshot_plans(root):
        lineage = plan.get("lineage") or {}
        if lineage.get("output"):
            producers[str(lineage["output"])].append(plan["stage"])
        for name, ref in (lineage.get("inputs") or {}).items():
            readers[str(ref).split(":")[0]].append(f"{plan['stage']} ({name}, {ref})")
    lines = [
        "# Artifacts and lineage",
        "",
        "Which stage writes each artifact of the store and which stages read it, from the plan "
        "snapshots. An artifact no stage writes is imported (`recipekit data import`, "
        "`recipekit model import`, `recipekit store import`).",
        "",
        "| artifact | written by | read by |",
        "| --- | --- | --- |",
    ]
    for artifact in sorted(set(producers) | set(readers)):
        made = ", ".join(producers.get(artifact, [])) or "imported"
        read = "; ".join(readers.get(artifact, [])) or "(none)"
        lines.append(f"| {_code(artifact)} | {_cell(made)} | {_cell(read)} |")
    return "\n".join(lines) + "\n"


def write_pages(srcdir: Path, root: Path | None = None) -> list[Path]:
    """Write every generated page under ``srcdir``; return the paths written."""
    root = root or repository_root()
    _importable(root)
    from recipekit import rule_catalogue

    pages = {
        "rule-coverage-part.md": rule_coverage_page(),
        "stages.md": stages_page(root),
        "memory-terms.md": memory_terms_page(root),
        "lineage.md": lineage_page(root),
    }
    for framework in rule_catalogue.present():
        pages[f"rules-{framework}.md"] = rules_page(framework)
    out = Path(srcdir) / GENERATED
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in pages.items():
        path = out / name
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")  # unchanged pages keep their mtime
        written.append(path)
    return written


def _on_builder_inited(app: Any) -> None:
    write_pages(Path(app.srcdir))


def setup(app: Any) -> dict[str, Any]:
    app.connect("builder-inited", _on_builder_inited)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
