"""The layout search and the frameworks agree: every layout a framework proposes for a stage
is one its own plan accepts (no layout rule refuses it), and reads back as the same layout.

A candidate may still fail the plan for a reason that is not its layout (a global batch that
its data-parallel size does not divide): the search plans each and drops those, so the test
allows them and requires only that no layout rule fires.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from recipekit.errors import RecipeError
from recipekit.plan import make_plan, resolve_run_inputs
from recipekit.review.discover import discover_stages
from recipekit.stage import Stage

ROOT = Path(__file__).resolve().parent.parent
STAGES = {ref.stage.name: ref.stage for ref in discover_stages(ROOT)}
# NeMo Evaluator serves with vLLM and has no Megatron-Core layout to search.
SEARCHED = sorted(name for name, s in STAGES.items() if s.framework.name != "nemo-evaluator")
# Candidates planned per stage: an even spread over the framework's whole list.
PER_STAGE = 12


def _value(value: Any) -> str:
    if value is None:
        return "null"
    return str(value).lower() if isinstance(value, bool) else str(value)


def _candidates(stage: Stage) -> list[tuple[Any, dict[str, Any]]]:
    framework = stage.framework
    config, _ = resolve_run_inputs(stage)
    config, _ = framework.derive(config, stage.hardware)
    base, _, _ = framework.check(config, stage.hardware, stage.model)
    return list(framework.layout_candidates(base, stage.hardware, stage.model))


def _layout_keys(layout: Any) -> set[str]:
    keys = set(layout.keys.size_keys().values()) | {layout.keys.section}
    return keys | {layout.keys.key(f) for f in ("first_stage_layers", "last_stage_layers")
                   if layout.keys.has(f)}


@pytest.mark.parametrize("name", SEARCHED)
def test_every_proposed_layout_passes_the_frameworks_layout_rules(name: str) -> None:
    stage = STAGES[name]
    candidates = _candidates(stage)
    assert candidates, f"{name}: the framework proposes no layout"
    step = max(len(candidates) // PER_STAGE, 1)
    for layout, overrides in candidates[::step][:PER_STAGE]:
        assignments = [f"{k}={_value(v)}" for k, v in overrides.items()]
        try:
            plan = make_plan(stage, assignments)
        except RecipeError as exc:
            refused = [i.render() for i in exc.issues if i.path in _layout_keys(layout)]
            assert not refused, (assignments, refused)
            continue
        planned: Any = plan.layout
        assert planned.parallel == layout.parallel, assignments


def test_expert_tensor_parallel_across_nvl72_trays_is_one_rule_for_every_framework() -> None:
    # TP 8 and ETP 8 span two 4-GPU trays of one GB200 NVL72 rack: NVLink still, so a NeMo-RL
    # stage accepts what the layout generator and the Megatron-Bridge stages accept.
    stage = STAGES["dapo-gb200"]
    assert stage.hardware.node.nvlink_domain_nodes > 1
    plan = make_plan(
        stage,
        [
            "policy.megatron_cfg.tensor_model_parallel_size=8",
            "policy.megatron_cfg.expert_tensor_parallel_size=8",
            "policy.megatron_cfg.context_parallel_size=2",
            "policy.megatron_cfg.expert_model_parallel_size=2",
        ],
    )
    planned: Any = plan.layout
    assert (planned.parallel.tp, planned.parallel.etp) == (8, 8)
