"""A plan as people and files read it: the one-screen summary, JSON, and the rendered files."""

from __future__ import annotations

import json
from typing import Any

from recipekit.errors import Issue
from recipekit.framework import CONFIG_PLACEHOLDER
from recipekit.memory.estimate import phase_lines
from recipekit.plan import Plan


def config_yaml(config: dict[str, Any]) -> str:
    """YAML that NeMo-RL's OmegaConf reads back to exactly ``config`` (floats stay floats)."""
    import yaml  # only what writes a config file pays for it: `plan` prints none (~20 ms)

    return yaml.safe_dump(config, sort_keys=False, default_flow_style=False, width=100)


def plan_json(plan: Plan) -> str:
    return json.dumps(plan.as_json(), indent=2) + "\n"


def command_text(plan: Plan, width: int = 72) -> str:
    """The entry point and its arguments as the job runs them, cut short when long."""
    arguments = plan.stage.framework.arguments(plan.framework_config)
    words = [plan.stage.framework.entry_point]
    words += [a.replace(CONFIG_PLACEHOLDER, "config.yaml") for a in arguments]
    text = " ".join(words)
    return text if len(text) <= width else text[: width - 4] + " ..."


def plan_text(plan: Plan) -> str:
    stage, hw = plan.stage, plan.stage.hardware
    node = hw.node
    rows: list[tuple[str, str]] = []
    rows.append(
        (
            "framework",
            f"{stage.framework.name} {stage.framework.version} · {command_text(plan)}",
        )
    )
    extra = ", IMEX channel required" if node.needs_imex_channel else ""
    rows.append(
        (
            "hardware",
            f"{hw.num_nodes} x {node.name} nodes, {node.gpus_per_node} x "
            f"{node.gpu.model} ({node.gpu.hbm_gib} GiB) each, {node.cpu_arch.value}, "
            f"{node.interconnect.value}{extra}",
        )
    )
    rows += stage.framework.summary(plan.config, plan.layout)
    if plan.memory is not None:
        memory = phase_lines(plan.memory)
        rows.append(("memory", memory[0]))
        rows += [("", line) for line in memory[1:]]
    if stage.lineage is not None:
        lineage = stage.lineage.as_json()
        reads = ", ".join(f"{role} {ref}" for role, ref in lineage["inputs"].items())
        output = lineage["output"] or stage.lineage.output_note or "no artifact"
        rows.append(("lineage", f"reads {reads or 'nothing'}; publishes {output}"))
        if "blocked" in lineage:
            rows.append(("", f"BLOCKED: {lineage['blocked']}"))
        if "keep_steps" in lineage:
            kept = ", ".join(f"step-{step}" for step in lineage["keep_steps"])
            rows.append(("", f"keeps {kept} of its output for later stages, whatever keep_top_k"))
        if "handoff" in lineage:
            rows.append(("", f"hand-off: {lineage['handoff']}"))
    rows.append(("overrides", ", ".join(plan.overrides) or "none"))
    rows.append(
        (
            "derived",
            f"{len(plan.derived)} keys follow their source (plan --format json lists them)",
        )
    )
    rows.append(("hash", plan.hash))
    width = max(len(k) for k, _ in rows)
    lines = [f"{stage.name}: {stage.description}", ""]
    lines += [f"{k.ljust(width)}  {v}" for k, v in rows]
    lines += warnings_text(plan.warnings)
    return "\n".join(lines) + "\n"


def warnings_text(warnings: tuple[Issue, ...] | list[Issue]) -> list[str]:
    if not warnings:
        return ["", "warnings: none"]
    return ["", f"warnings ({len(warnings)}):"] + [f"  ! {w.render()}" for w in warnings]
