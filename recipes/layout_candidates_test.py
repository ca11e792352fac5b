"""The layout search and the frameworks agree: every layout ``layout_search.search`` proposes for
a stage plans with no error, as the framework proposed it, and the search refuses no proposal
at a layout key (a layout its framework proposes and its own plan refuses).

A proposal may still be refused for a reason that is not its layout (a global batch that its
data-parallel size does not divide): the search counts those by key (``SearchResult.refused``)
and the test allows them. The search prices thousands of proposals for the RL stages (a few
milliseconds each); to stay fast the test searches an even sample of each framework's proposals
(``SAMPLE`` of them), through the search itself.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Any

import attrs
import pytest

from recipekit import layout_search
from recipekit.hardware import Hardware
from recipekit.keypaths import with_values
from recipekit.layout_search import SearchResult, search, table
from recipekit.model_card import ModelCard
from recipekit.nemo_rl.checks.context import RESOURCES as GENERATION_RESOURCES
from recipekit.nemo_rl.layout import GENERATION_GPUS
from recipekit.plan import make_plan, resolve_run_inputs
from recipekit.review.discover import discover_stages
from recipekit.stage import Stage

ROOT = Path(__file__).resolve().parent.parent
STAGES = {ref.stage.name: ref.stage for ref in discover_stages(ROOT)}
# NeMo Evaluator serves with vLLM and has no Megatron-Core layout to search.
SEARCHED = sorted(name for name, s in STAGES.items() if s.framework.name != "nemo-evaluator")
# Proposals searched per stage: an even spread over the framework's whole list.
SAMPLE = 60
# Candidates the search plans per stage (each is also planned again from its assignments).
TOP = 3


class SampledFramework:
    """A stage's framework proposing every n-th of its layouts (all else its own)."""

    def __init__(self, framework: Any, proposals: list[tuple[Any, dict[str, Any]]]) -> None:
        self._framework = framework
        # A prime step, so the sample does not alias with the inner loops of the proposals
        # (four vLLM sizes per training layout would give every sample the same one).
        step = _prime_at_least(max(len(proposals) // SAMPLE, 1))
        self._proposals = proposals[::step]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._framework, name)

    def layout_candidates(self, layout: Any, hardware: Hardware, model: ModelCard) -> Any:
        return iter(self._proposals)


def _prime_at_least(n: int) -> int:
    while n > 2 and any(n % d == 0 for d in range(2, int(n**0.5) + 1)):
        n += 1
    return n


def _proposals(stage: Stage) -> tuple[Any, list[tuple[Any, dict[str, Any]]]]:
    """The stage's derived config and every layout its framework proposes."""
    framework = stage.framework
    config, _ = resolve_run_inputs(stage)
    config, _ = framework.derive(config, stage.hardware)
    base, _, _ = framework.check(config, stage.hardware, stage.model)
    return config, list(framework.layout_candidates(base, stage.hardware, stage.model))


def _layout_keys(layout: Any) -> set[str]:
    keys = layout.keys
    found = set(keys.size_keys().values()) | {keys.section}
    return found | {keys.key(f) for f in ("first_stage_layers", "last_stage_layers") if keys.has(f)}


def _value(value: Any) -> str:
    if value is None:
        return "null"
    return str(value).lower() if isinstance(value, bool) else str(value)


@pytest.mark.parametrize("name", SEARCHED)
def test_every_layout_the_search_proposes_plans_as_the_framework_proposed_it(name: str) -> None:
    stage = STAGES[name]
    _, proposals = _proposals(stage)
    assert proposals, f"{name}: the framework proposes no layout"
    sampled = attrs.evolve(stage, framework=SampledFramework(stage.framework, proposals))
    result: SearchResult = search(sampled, top=TOP)
    assert result.candidates, f"{name}: no proposal passes ({result.tried} tried)"
    layout_keys = _layout_keys(proposals[0][0])
    disagreements = [r for r in result.refused if r.key in layout_keys]
    assert not disagreements, [r.as_json() for r in disagreements]
    for candidate in result.candidates:
        # The plan the search made is of the layout the framework proposed ...
        assert candidate.plan.layout == candidate.proposed, candidate.assignments()
        # ... and so is the plan a user gets from the change the search prints.
        again = make_plan(stage, candidate.assignments())
        assert again.layout == candidate.proposed, candidate.assignments()


def test_a_refused_proposal_is_counted_by_its_key() -> None:
    # An expert-parallel size no layout rule allows (512 experts over EP 3), slipped in among
    # the real proposals with the best one's layout, so that it fits in memory and is planned:
    # the search counts it at its key instead of dropping it without a word.
    stage = STAGES["sft-tiny"]
    _, proposals = _proposals(stage)
    best = search(stage, top=1).candidates[0].proposed
    layout, overrides = next((lay, o) for lay, o in proposals if lay == best)
    ep_key = layout.keys.key("ep")
    bad = [(layout, {**overrides, ep_key: 3})]
    sampled = attrs.evolve(stage, framework=SampledFramework(stage.framework, bad + proposals))
    result = search(sampled, top=len(proposals) + 1)
    assert [(r.key, r.count) for r in result.refused] == [(ep_key, 1)]
    assert "EP=3" in result.refused[0].example


def test_a_single_node_non_colocated_stage_splits_the_nodes_gpus() -> None:
    # dapo-b200 generates on one whole node of three; on one node, generation takes a share of
    # the node's GPUs (colocated.resources.gpus_per_node) and training the rest. Before, the
    # search proposed nothing here (it only moved whole nodes).
    stage = STAGES["dapo-b200"]
    hardware = Hardware(stage.hardware.node, num_nodes=1)
    moved = attrs.evolve(stage, hardware=hardware)
    config, proposals = _proposals(moved)
    assert proposals
    per_node = hardware.gpus_per_node
    splits = {layout.nodes.generation_gpus for layout, _ in proposals}
    assert splits and all(0 < g < per_node for g in splits)
    framework = stage.framework
    for layout, overrides in itertools.islice(proposals, 0, None, max(len(proposals) // 20, 1)):
        nodes = layout.nodes
        assert not nodes.colocated and nodes.generation_gpus + nodes.training_gpus == per_node
        assert overrides[GENERATION_GPUS] == nodes.generation_gpus
        # The framework reads the proposal back as the same layout, and no layout rule (nor
        # the single-node resource rules) refuses it; a batch its DP does not divide may.
        changed = with_values(config, overrides)
        read, errors, _ = framework.check(changed, hardware, stage.model)
        assert read == layout, overrides
        refused = [e.render() for e in errors if e.path in _layout_keys(layout)]
        refused += [e.render() for e in errors if e.path.startswith(GENERATION_RESOURCES)]
        assert not refused, overrides


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


class ReferencePricing:
    """The search's pricing as it first was, the reference the faster one (``layout_search.
    _Pricing``: each (key, value) checked once, the estimate's parts shared) must equal: every
    candidate's own config made (``with_values``) and estimated whole."""

    def __init__(self, framework: Any, config: Any, hardware: Hardware, model: ModelCard) -> None:
        self._framework, self._config = framework, config
        self._hardware, self._model = hardware, model

    def estimate(self, layout: Any, overrides: dict[str, Any]) -> Any:
        candidate = with_values(self._config, overrides)
        found = self._framework.memory(candidate, self._hardware, self._model, layout)
        if found is not None:
            assert found.fits() == (not found.issues()[0])
        return found


def _refused_values(
    proposals: list[tuple[Any, dict[str, Any]]],
) -> list[tuple[Any, dict[str, Any]]]:
    """Proposals with values their sections refuse: one, two in one proposal (both its issues,
    in its order), a wrong type, and true where 1 is accepted (equal in Python, not to a
    section)."""
    layout, overrides = proposals[len(proposals) // 2]
    tp, pp = layout.keys.key("tp"), layout.keys.key("pp")
    return [
        (layout, {**overrides, tp: 0}),
        (layout, {**overrides, pp: 0, tp: 0}),
        (layout, {**overrides, tp: "2"}),
        (layout, {**overrides, tp: 1}),
        (layout, {**overrides, tp: True}),
    ]


@pytest.mark.parametrize("name", SEARCHED)
def test_the_search_ranks_as_pricing_each_candidates_own_config_does(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Same tried, fitting and refused counts, refusal examples, candidates, memory and table
    # (but its timing), on an even sample of the stage's proposals.
    stage = STAGES[name]
    _, proposals = _proposals(stage)
    sampled = SampledFramework(stage.framework, proposals)
    sampled._proposals = _refused_values(proposals) + sampled._proposals
    sampled_stage = attrs.evolve(stage, framework=sampled)
    fast = search(sampled_stage, top=TOP)
    monkeypatch.setattr(layout_search, "_Pricing", ReferencePricing)
    reference = search(sampled_stage, top=TOP)
    assert fast.as_json() == reference.as_json()
    assert [r.key for r in fast.refused][:1] == [proposals[0][0].keys.key("tp")]
    timing = re.compile(r" \(\d+\.\d\d s\)$")
    assert [timing.sub("", line) for line in table(fast)] == [
        timing.sub("", line) for line in table(reference)
    ]


def test_candidates_are_priced_in_the_stages_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from recipekit.memory.switches import ALLOC_CONF, allocator_conf

    # The plan estimates a stage inside its environment (its PYTORCH_CUDA_ALLOC_CONF moves the
    # allocator's share); the search's pricing must see the same, or it drops layouts the
    # plan would call fitting.
    stage = attrs.evolve(STAGES["sft-tiny"], environment={ALLOC_CONF: "expandable_segments:True"})
    seen: list[str | None] = []
    price = layout_search._Pricing.estimate

    def recording(self: Any, layout: Any, overrides: dict[str, Any]) -> Any:
        seen.append(allocator_conf(None, config_first=False))
        return price(self, layout, overrides)

    monkeypatch.setattr(layout_search._Pricing, "estimate", recording)
    search(stage, top=1)
    assert seen and set(seen) == {"expandable_segments:True"}
