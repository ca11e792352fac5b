"""The seven Megatron-Bridge stages of Super 3.5 VL (pretrain and SFT) plan: their lineage is
the recipe's table, their layouts fit their hardware, and their values are the recipe's
Megatron-Bridge verified configuration where it gives them."""

from __future__ import annotations

from typing import Any

import pytest

from recipekit.errors import RecipeError
from recipekit.hardware import GB200_NODE, H100_NODE
from recipekit.megatron_bridge.framework import MEGATRON_BRIDGE
from recipekit.model_card import NEMOTRON_35_SUPER_VL_120B
from recipekit.plan import make_plan
from recipekit.stage import Stage
from recipes.super35 import pretrain, sft
from recipes.super35.lineage_test import SEED_TABLE

STAGES: dict[str, Stage] = {
    "pretrain": pretrain.pretrain,
    "pretrain-tiny": pretrain.pretrain_tiny,
    "sft": sft.sft,
    "sft-stage2": sft.sft_stage2,
    "sft-peft": sft.sft_peft,
    "sft-long-context": sft.sft_long_context,
    "sft-tiny": sft.sft_tiny,
}

# The recipe, "Artifact Lineage", the table (model, data, output), as lineage_test reads it. The
# tiny rows are not in the recipe: lineage.py names them as Nemotron 3 Super's tiny configs do.
LINEAGE = {
    **{name: row for name, row in SEED_TABLE.items() if name in STAGES},
    "pretrain-tiny": (
        "${SUPER35_INIT_CHECKPOINT}",
        "${SUPER35_PRETRAIN_DATA}",
        "super35-pretrain-model-tiny",
    ),
    "sft-tiny": (
        "super35-pretrain-model-tiny:latest",
        "super35-sft-data:latest",
        "super35-sft-model-tiny",
    ),
}

# Seed: "8 nodes x 8 H100 (LoRA: 2 nodes x 8 H100; long-context SFT: 32 nodes x 4 GB200)";
# the tiny stages are one node (not in the recipe). Layout: TP, PP, CP, EP, ETP -> DP.
HARDWARE = {
    "pretrain": (H100_NODE, 8, (1, 2, 1, 32, 1), 32),
    "pretrain-tiny": (H100_NODE, 1, (1, 1, 1, 8, 1), 8),
    "sft": (H100_NODE, 8, (1, 2, 1, 32, 1), 32),
    "sft-stage2": (H100_NODE, 8, (1, 2, 1, 32, 1), 32),
    "sft-peft": (H100_NODE, 2, (4, 2, 1, 8, 1), 2),
    "sft-long-context": (GB200_NODE, 32, (1, 2, 32, 64, 1), 2),
    "sft-tiny": (H100_NODE, 1, (1, 1, 1, 8, 1), 8),
}

# (language model, vision encoder, vision projector) frozen: the recipes' choices; the tiny
# stages train the projector alone (not in the recipe).
FROZEN = {
    "pretrain": (False, False, False),
    "pretrain-tiny": (True, True, False),
    "sft": (False, True, False),
    "sft-stage2": (False, True, False),
    "sft-peft": (False, True, True),
    "sft-long-context": (False, True, False),
    "sft-tiny": (True, True, False),
}

RECIPES = "megatron.bridge.recipes.nemotronh_multimodal"
TARGETS = {
    "pretrain": f"{RECIPES}.nemotron_35_super_vl.nemotron_35_super_vl_pretrain_config",
    "sft": f"{RECIPES}.nemotron_35_super_vl.nemotron_35_super_vl_sft_config",
    "sft-peft": f"{RECIPES}.nemotron_35_super_vl.nemotron_35_super_vl_peft_config",
    "sft-long-context": (
        f"{RECIPES}.gb200.nemotron_35_super_vl."
        "nemotron_35_super_vl_sft_long_context_128gpu_gb200_bf16_config"
    ),
}


def _config(name: str, *overrides: str) -> dict[str, Any]:
    return make_plan(STAGES[name], overrides).framework_config


def test_the_stages_are_the_seeds_commands() -> None:
    assert {name: stage.name for name, stage in STAGES.items()} == {n: n for n in STAGES}
    for stage in STAGES.values():
        assert stage.model == NEMOTRON_35_SUPER_VL_120B
        assert stage.framework == MEGATRON_BRIDGE
        assert stage.lineage is not None and stage.lineage.stage == stage.name


@pytest.mark.parametrize("name", sorted(STAGES))
def test_each_stage_plans_with_the_seeds_lineage(name: str) -> None:
    plan = make_plan(STAGES[name])
    model, data, output = LINEAGE[name]
    assert plan.as_json()["lineage"] == {"inputs": {"model": model, "data": data}, "output": output}
    # The memory estimate's own warnings are tested in recipes/super35/memory_test.py.
    assert [w for w in plan.warnings if not w.path.startswith("memory.")] == []


@pytest.mark.parametrize("name", sorted(STAGES))
def test_each_layout_fits_its_hardware(name: str) -> None:
    node, nodes, (tp, pp, cp, ep, etp), dp = HARDWARE[name]
    plan = make_plan(STAGES[name])
    assert (plan.stage.hardware.node, plan.stage.hardware.num_nodes) == (node, nodes)
    layout = plan.layout.as_json()
    got = tuple(layout[k] for k in ("tensor_parallel", "pipeline_parallel", "context_parallel"))
    assert got + (layout["expert_parallel"], layout["expert_tensor_parallel"]) == (
        tp,
        pp,
        cp,
        ep,
        etp,
    )
    assert layout["data_parallel"] == dp
    assert tp * pp * cp * dp == nodes * node.gpus_per_node


@pytest.mark.parametrize("name", sorted(STAGES))
def test_the_freeze_controls_render(name: str) -> None:
    model = _config(name)["model"]
    keys = ("freeze_language_model", "freeze_vision_model", "freeze_vision_projection")
    assert tuple(model[k] for k in keys) == FROZEN[name]


def test_the_recipe_targets_are_megatron_bridges_super_vl_functions() -> None:
    for name in STAGES:
        family = name.removesuffix("-tiny").removesuffix("-stage2")
        assert _config(name)["recipe"]["_target_"] == TARGETS[family], name


def test_the_defaults_are_the_verified_configuration() -> None:
    # Seed: sequence length 4096, 200 steps (pretrain and SFT), 500 LoRA steps.
    for name, iters in (("pretrain", 200), ("sft", 200), ("sft-stage2", 200), ("sft-peft", 500)):
        config = _config(name)
        assert (config["model"]["seq_length"], config["train"]["train_iters"]) == (4096, iters)
    assert _config("sft-peft")["peft"]["dim"] == 32


def test_stage2_is_the_default_recipe_on_other_inputs() -> None:
    first, second = _config("sft"), _config("sft-stage2")
    changed = {
        f"{section}.{key}"
        for section, keys in first.items()
        for key, value in keys.items()
        if second[section][key] != value
    }
    assert changed == {"dataset.path", "checkpoint.pretrained_checkpoint", "checkpoint.save"}
    assert (
        second["checkpoint"]["pretrained_checkpoint"]
        == "/artifacts/super35-sft-stage1-model/latest"
    )
    assert second["dataset"]["path"] == "/artifacts/super35-sft-stage2-data/latest"


def test_the_variants_are_values_over_one_base() -> None:
    # Every stage is a with_values of sft, as Megatron-Bridge builds its pretraining recipe
    # from the SFT one.
    for name, stage in STAGES.items():
        assert stage.origin == sft.sft.origin, name
    assert all(a.stage != "sft" for a in pretrain.pretrain_tiny.assignments)


def test_a_sequence_length_override_moves_the_dataset_with_the_model() -> None:
    # 8192 tokens a micro-batch (three depths of logits: the model's and its two MTP depths')
    # need full recompute and TP 2 to fit 80 GiB (the plan's memory check).
    full = [
        "model.tensor_model_parallel_size=2",
        "model.recompute_granularity=full",
        "model.recompute_method=uniform",
        "model.recompute_num_layers=1",
    ]
    plan = make_plan(sft.sft, ["model.seq_length=8192", *full])
    assert plan.framework_config["model"]["seq_length"] == 8192
    assert plan.framework_config["dataset"]["seq_length"] == 8192
    assert "dataset.seq_length" in plan.derived
    assert _config("sft-long-context", "model.seq_length=65536")["dataset"]["seq_length"] == 65536


def test_pinning_an_input_moves_the_path_the_config_reads() -> None:
    config = _config("sft", "run.model=super35-pretrain-model:v3")
    assert config["checkpoint"]["pretrained_checkpoint"] == "/artifacts/super35-pretrain-model/v3"


def test_a_layout_that_does_not_fit_names_the_key_and_the_arithmetic() -> None:
    with pytest.raises(RecipeError) as exc:
        make_plan(sft.sft_peft, ["model.pipeline_model_parallel_size=3"])
    rendered = [issue.render() for issue in exc.value.issues]
    assert rendered[0] == (
        "model: tensor_model_parallel_size x pipeline_model_parallel_size x "
        "context_parallel_size = 4 x 3 x 1 = 12 does not divide the 16 GPUs (2 nodes x 8 H100) "
        "(data parallel would be 16 / 12 = 1.33333; change one of "
        "model.tensor_model_parallel_size, model.pipeline_model_parallel_size, "
        "model.context_parallel_size)"
    )
    assert exc.value.context == "sft-peft: cannot plan"
