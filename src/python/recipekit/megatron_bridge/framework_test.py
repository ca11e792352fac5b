"""The framework object: what the runner is given, what the plan shows, what preflight checks."""

from __future__ import annotations

import json

from recipekit.framework import Framework
from recipekit.megatron_bridge.framework import MEGATRON_BRIDGE, run_recipe_arguments
from recipekit.plan import make_plan
from recipes.super35.pretrain import pretrain
from recipes.super35.sft import sft, sft_long_context, sft_peft


def test_it_is_a_framework() -> None:
    framework: Framework = MEGATRON_BRIDGE
    assert (framework.name, framework.launch, framework.image) == (
        "megatron-bridge",
        "per-gpu",
        "nemo",
    )
    assert framework.entry_point == "scripts/training/run_recipe.py"


def test_the_rendered_config_is_the_recipe_and_its_overrides_without_run() -> None:
    rendered = make_plan(sft).framework_config
    assert list(rendered) == ["recipe", "train", "model", "dataset", "scheduler", "checkpoint"]
    assert rendered["recipe"] == {
        "_target_": "megatron.bridge.recipes.nemotronh_multimodal.nemotron_35_super_vl."
        "nemotron_35_super_vl_sft_config"
    }
    assert rendered["dataset"] == {
        "path": "/artifacts/super35-sft-data/latest",
        "seq_length": 4096,
        "micro_batch_size": 1,
        "do_validation": False,
    }
    assert rendered["scheduler"] == {"lr_decay_iters": 200}


def test_inputs_and_outputs_are_the_paths_the_config_reads_and_writes() -> None:
    config = make_plan(sft).config
    assert MEGATRON_BRIDGE.inputs(config) == {
        "pretrained_checkpoint": "/artifacts/super35-pretrain-model/latest",
        "data": "/artifacts/super35-sft-data/latest",
    }
    assert MEGATRON_BRIDGE.outputs(config) == {
        "checkpoints": "/artifacts/super35-sft-stage1-model/${oc.env:RECIPEKIT_RUN}"
    }


def test_a_recipe_that_ships_its_data_has_no_data_input() -> None:
    config = make_plan(sft_long_context).config
    assert MEGATRON_BRIDGE.inputs(config) == {
        "pretrained_checkpoint": "/artifacts/super35-pretrain-model/latest"
    }


def test_run_recipe_gets_the_recipe_by_name_and_every_key_as_an_override() -> None:
    args = MEGATRON_BRIDGE.arguments(make_plan(sft_peft).framework_config)
    assert args[:4] == ["--recipe", "nemotron_35_super_vl_peft_config", "--mode", "lora"]
    assert "model.tensor_model_parallel_size=4" in args
    assert "model.freeze_vision_projection=true" in args
    assert 'checkpoint.pretrained_checkpoint="/artifacts/super35-pretrain-model/latest"' in args
    modules = next(a for a in args if a.startswith("peft.target_modules="))
    assert json.loads(modules.partition("=")[2])[0] == "*language_model.*.linear_qkv"
    # One override per leaf key, nothing from the recipe section among them.
    rendered = make_plan(sft_peft).framework_config
    leaves = sum(len(v) for k, v in rendered.items() if k != "recipe")
    assert len(args) == 4 + leaves


def test_an_input_from_the_environment_is_left_to_megatron_bridge_to_resolve() -> None:
    args = run_recipe_arguments(make_plan(pretrain).framework_config)
    assert args[:4] == ["--recipe", "nemotron_35_super_vl_pretrain_config", "--mode", "pretrain"]
    assert 'checkpoint.pretrained_checkpoint="${oc.env:SUPER35_INIT_CHECKPOINT}"' in args
    assert "model.recompute_modules=null" in args


def test_the_layout_as_json_carries_data_parallel() -> None:
    layout = make_plan(sft_long_context).layout.as_json()
    assert layout == {
        "nodes": 32,
        "gpus_per_node": 4,
        "tensor_parallel": 1,
        "pipeline_parallel": 2,
        "context_parallel": 32,
        "expert_parallel": 64,
        "expert_tensor_parallel": 1,
        "total_gpus": 128,
        "data_parallel": 2,
    }


def test_the_summary_has_one_row_per_concern() -> None:
    plan = make_plan(sft_peft)
    rows = dict(MEGATRON_BRIDGE.summary(plan.config, plan.layout))
    assert rows["layout"] == "TP 4 x PP 2 x CP 1 -> DP 2 on 16 GPUs; experts EP 8 x ETP 1"
    assert rows["batch"] == (
        "global_batch_size 16 = micro_batch_size 1 x DP 2 x 8 accumulation steps; 500 iterations"
    )
    assert rows["sequence"] == "seq_length 4096 (dataset 4096), sequence_parallel on"
    assert rows["freeze"] == "every base weight frozen (PEFT); LoRA adapters train"
    assert rows["data"] == "/artifacts/super35-sft-data/latest"
    assert rows["checkpoints"] == (
        "from /artifacts/super35-pretrain-model/latest (weights only); "
        "save to /artifacts/super35-sft-peft-model/${oc.env:RECIPEKIT_RUN} every 100 iterations"
    )
