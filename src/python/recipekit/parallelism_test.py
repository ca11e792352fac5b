# The catalogued checks these tests break, which the rule catalogue's meta-test finds by
# name (recorded from the checks that produced an issue while these tests ran):
# expert_group_divides_gpus, model_parallel_divides_gpus, pipeline_splits_the_layers,
# virtual_pipeline_splits_each_stage.

from __future__ import annotations

import itertools

import attrs
import pytest

from recipekit.hardware import B200_NODE, GB200_NODE, H100_NODE, NodeType
from recipekit.parallelism import (
    DTENSOR,
    MEGATRON_BRIDGE,
    NEMO_RL,
    SIZES,
    LayoutContext,
    ParallelLayout,
    layout_issues,
    megatron_layouts,
)


def _issues(
    layout: ParallelLayout, layers: int = 88, experts: int = 512, node: NodeType = GB200_NODE
) -> list[str]:
    ctx = LayoutContext(
        layout=layout,
        keys=MEGATRON_BRIDGE,
        node=node,
        model_name="M",
        num_layers=layers,
        num_experts=experts,
        gpus_text=f"the {layout.gpus} GPUs",
    )
    return [issue.render() for issue in layout_issues(ctx)]


def test_a_good_layout_has_no_issue() -> None:
    assert _issues(ParallelLayout(gpus=64, tp=4, pp=4, ep=16, vpp=2)) == []


def test_interleaving_needs_a_pipeline() -> None:
    (issue,) = _issues(ParallelLayout(gpus=8, vpp=2))
    assert issue.startswith("model.virtual_pipeline_model_parallel_size = 2: ")


def test_interleaving_must_split_every_stage() -> None:
    # 88 layers over PP 4 = 22 a rank: VPP 4 does not split them; an uneven first stage of 10
    # leaves 78 for 3 stages (26 each), which VPP 4 does not split either.
    assert "each pipeline rank holds 22 layers" in _issues(ParallelLayout(gpus=16, pp=4, vpp=4))[0]
    uneven = ParallelLayout(gpus=16, pp=4, vpp=2, first_stage_layers=13)
    assert "the first stage holds 13 layers" in _issues(uneven)[0]


def test_uneven_split_names_what_is_left() -> None:
    (issue,) = _issues(ParallelLayout(gpus=12, pp=3, first_stage_layers=40, last_stage_layers=48))
    assert "88 - 40 - 48 = 0 are left for the other 1 of the PP=3 stages, fewer than" in issue
    (issue,) = _issues(ParallelLayout(gpus=8, pp=2, first_stage_layers=40, last_stage_layers=40))
    assert "88 - 40 - 40 = 8 are left but no stage of the PP=2 is left for them" in issue


def test_a_placeholder_card_refuses_nothing_it_does_not_know() -> None:
    # An imported stage's placeholder card (num_layers=0) knows neither layers nor experts:
    # no split is refused on its zeros (the plan warns once that the card is a placeholder,
    # plan_test); the sizes' own arithmetic still holds.
    assert _issues(ParallelLayout(gpus=8, pp=2, vpp=2), layers=0) == []
    assert _issues(ParallelLayout(gpus=8, tp=8), layers=0) == []
    assert _issues(ParallelLayout(gpus=16, ep=8), layers=0, experts=0) == []
    assert _issues(ParallelLayout(gpus=8, tp=2, pp=2, cp=4), layers=0) != []


def test_expert_tensor_parallel_may_span_nvl72_trays_but_not_b200_nodes() -> None:
    layout = ParallelLayout(gpus=16, tp=8, cp=2, ep=2, etp=8)
    assert _issues(layout) == []
    ctx = LayoutContext(
        layout=ParallelLayout(gpus=32, tp=8, cp=4, ep=2, etp=16),
        keys=NEMO_RL,
        node=B200_NODE,
        model_name="M",
        num_layers=88,
        num_experts=512,
        gpus_text="",
    )
    assert {i.path for i in layout_issues(ctx)} == {
        "policy.megatron_cfg.expert_tensor_parallel_size"
    }


def test_expert_tensor_parallel_of_none_is_the_tensor_parallel_size() -> None:
    @attrs.frozen
    class Section:
        tensor_model_parallel_size: int = 4
        expert_tensor_parallel_size: int | None = None

    assert NEMO_RL.read(Section(), 8).etp == 4


def test_dtensor_has_no_pipeline_or_experts_to_name() -> None:
    assert DTENSOR.size_keys() == {
        "tp": "policy.dtensor_cfg.tensor_parallel_size",
        "cp": "policy.dtensor_cfg.context_parallel_size",
    }


def test_the_generator_yields_only_layouts_the_rules_accept() -> None:
    base = ParallelLayout(gpus=32)
    found = list(megatron_layouts(32, GB200_NODE, 88, 512, base))
    assert found and all(_issues(layout) == [] for layout in found)
    assert ParallelLayout(gpus=32, tp=8, etp=8, ep=4) in found


def _every_layout_the_rules_accept(
    gpus: int, node: NodeType, layers: int, experts: int, base: ParallelLayout
) -> list[ParallelLayout]:
    """megatron_layouts as it is specified: every size in turn, each layout checked by every
    rule (megatron_layouts skips the expert sizes of TP, PP and CP a rule refuses alone)."""
    found = []
    expert_sizes = [1] if not experts else [e for e in SIZES if experts % e == 0]
    for tp, pp, cp, ep, etp in itertools.product(
        SIZES, SIZES[:4], SIZES[:5], expert_sizes, SIZES[:4]
    ):
        if not experts and etp > 1:
            continue
        same = pp == base.pp
        layout = attrs.evolve(
            base,
            gpus=gpus,
            tp=tp,
            pp=pp,
            cp=cp,
            ep=ep,
            etp=etp,
            vpp=base.vpp if same else None,
            first_stage_layers=base.first_stage_layers if same else None,
            last_stage_layers=base.last_stage_layers if same else None,
        )
        if not _issues(layout, layers, experts, node):
            found.append(layout)
    return found


@pytest.mark.parametrize(
    ("gpus", "node", "layers", "experts", "base"),
    [
        (32, GB200_NODE, 88, 512, ParallelLayout(gpus=32)),
        (168, B200_NODE, 88, 512, ParallelLayout(gpus=168, tp=4, pp=2, vpp=2, sp=True)),
        (48, H100_NODE, 52, 0, ParallelLayout(gpus=48, pp=4, first_stage_layers=10)),
        (0, B200_NODE, 88, 128, ParallelLayout(gpus=0)),
    ],
)
def test_the_generator_yields_every_layout_the_rules_accept_in_order(
    gpus: int, node: NodeType, layers: int, experts: int, base: ParallelLayout
) -> None:
    assert list(megatron_layouts(gpus, node, layers, experts, base)) == (
        _every_layout_the_rules_accept(gpus, node, layers, experts, base)
    )
