"""Every Super 3.5 stage's memory estimate: none rejected on its own hardware, and a stage moved
to another cluster gets a layout that fits."""

# The catalogued checks these tests break, which the rule catalogue's meta-test finds by
# name (recorded from the checks that produced an issue while these tests ran):
# batch_divides_data_parallel.

from __future__ import annotations

import pytest

from recipekit.hardware import B200_NODE, Hardware
from recipekit.layout_search import search, table
from recipekit.plan import make_plan
from recipekit.stage import Stage
from recipes.super35 import evaluation, mopd, pretrain, rl, sft, teachers
from recipes.super35.rl import rlvr
from recipes.super35.sft import sft as sft_stage

STAGES = {
    value.name: value
    for module in (pretrain, sft, rl, teachers, mopd, evaluation)
    for value in vars(module).values()
    if isinstance(value, Stage)
}


@pytest.mark.parametrize("name", sorted(STAGES))
def test_every_stage_fits_its_own_hardware(name: str) -> None:
    assert len(STAGES) == 22
    plan = make_plan(STAGES[name])
    assert plan.memory is not None
    assert all(phase.fraction <= 1 for phase in plan.memory.phases)


def test_rlvr_shows_both_phases_with_headroom() -> None:
    memory = make_plan(rlvr).memory
    assert memory is not None
    assert [p.name for p in memory.phases] == ["generation (vLLM budget)", "training"]
    generation, training = memory.phases
    assert generation.limit_gib == pytest.approx(0.8 * 186)
    assert training.headroom_gib > 100  # 16 GB200 nodes of training for 120B parameters
    note = generation.notes[0]
    assert "per sequence of 16384 tokens" in note and "up to 32 at once" in note


def test_the_seeds_64_h100_sft_is_tight_and_says_so() -> None:
    # The Super text pretraining at this layout measured 70 GiB reserved of 80 (Megatron-Bridge's
    # verification card); with the vision stack it is closer still.
    warnings = [w for w in make_plan(sft_stage).warnings if w.path.startswith("memory.")]
    assert len(warnings) == 1
    assert "leaves under 10% of HBM free" in warnings[0].message


def test_rlvr_moved_to_b200_gets_a_layout_that_fits() -> None:
    # As many nodes as on GB200: 32 for NeMo-RL, 4 for the GenRM (genrm.py).
    result = search(rlvr, Hardware(B200_NODE, num_nodes=rlvr.hardware.num_nodes))
    assert result.candidates
    best = result.candidates[0]
    # EP 16, and CP 2 beside TP 8 (ring attention's exchange on every layer), would leave a
    # B200 node's NVLink; the smallest change that keeps both inside it keeps everything else.
    assert best.overrides == {
        "policy.megatron_cfg.expert_model_parallel_size": 8,
        "policy.megatron_cfg.context_parallel_size": 1,
    }
    assert best.communication == 0
    assert best.plan.stage.hardware.node == B200_NODE
    lines = list(table(result))
    assert "      hardware=Hardware(B200_NODE, num_nodes=36)," in lines
    assert "          'policy.megatron_cfg.expert_model_parallel_size': 8," in lines
    assert "          'policy.megatron_cfg.context_parallel_size': 1," in lines


def test_rlvr_on_its_own_cluster_keeps_its_layout() -> None:
    result = search(rlvr, top=1)
    assert result.candidates[0].overrides == {}
    assert "the best is the recipe's own layout" in list(table(result))


def test_the_eval_server_holds_the_models_full_context_for_every_concurrent_request() -> None:
    from recipes.super35.evaluation import evaluation

    memory = make_plan(evaluation).memory
    assert memory is not None
    [serving] = memory.phases
    assert serving.limit_gib == pytest.approx(0.9 * 186)
    # vLLM's default max_model_len is the model's 262144; 16 requests at once (parallelism).
    assert "per sequence of 262144 tokens" in serving.notes[0] and "up to 16" in serving.notes[0]
    assert memory.assumptions == (
        "max_model_len: the model's own 262144 (no --max-model-len in extra_args)",
    )
    shorter = make_plan(
        evaluation,
        ["deployment.extra_args=--max-model-len 32768 --mamba-ssm-cache-dtype float32"],
    ).memory
    assert shorter is not None and shorter.assumptions == ()
    assert "per sequence of 32768 tokens" in shorter.phases[0].notes[0]


def test_rlvr_reads_the_recompute_granularity_and_modules_it_sets() -> None:
    # NeMo-RL's activation_checkpointing turns recompute on at recompute_granularity (full by
    # default); selective rebuilds only recompute_modules (Super's MoE blocks here), so the layers
    # keep more.
    from recipekit.nemo_rl.layout import Layout
    from recipekit.nemo_rl.memory import megatron_setup

    def activations(stage: Stage) -> float:
        memory = make_plan(stage).memory
        assert memory is not None
        training = memory.phases[-1]
        return sum(t.bytes for t in training.terms if t.name == "activations")

    key = "policy.megatron_cfg"
    full = rlvr.with_values({f"{key}.activation_checkpointing": True})
    selective = full.with_values({f"{key}.recompute_granularity": "selective"})
    moe = selective.with_values({f"{key}.recompute_modules": ["core_attn", "moe"]})
    plans = [make_plan(stage) for stage in (full, selective, moe)]
    layouts = [plan.layout for plan in plans]
    assert all(isinstance(layout, Layout) for layout in layouts)
    setups = [
        megatron_setup(plan.config, layout)  # type: ignore[arg-type]
        for plan, layout in zip(plans, layouts, strict=True)
    ]
    assert [(s.recompute, s.recompute_modules) if s else None for s in setups] == [
        ("full", ("core_attn",)),
        ("selective", ("core_attn",)),
        ("selective", ("core_attn", "moe")),
    ]
    assert activations(full) < activations(moe) < activations(selective)


def test_pretrain_prices_the_cross_entropy_it_runs() -> None:
    # Megatron-Bridge's providers fuse the loss with Megatron-Core's native cross entropy, whose
    # fp32 temporary was measured (tools/calibration/h100-megatron-core-0.19.2-loss.json): one
    # depth's 4 bytes a logit more than the unfused one, 2 GiB at 4096 tokens of a 131072 vocab.
    def logits(stage: Stage) -> tuple[float, str]:
        memory = make_plan(stage).memory
        assert memory is not None
        (term,) = (t for t in memory.phases[-1].terms if t.name == "logits and loss")
        return term.gib, term.detail

    fused, fused_detail = logits(pretrain.pretrain)
    plain, plain_detail = logits(
        pretrain.pretrain.with_values({"model.cross_entropy_loss_fusion": False})
    )
    te, _ = logits(pretrain.pretrain.with_values({"model.cross_entropy_fusion_impl": "te"}))
    assert fused - plain == pytest.approx(2.0, abs=0.01)
    assert te == pytest.approx(plain)
    assert "native cross entropy" in fused_detail and "native" not in plain_detail
