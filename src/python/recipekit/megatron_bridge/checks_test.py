"""One test per plan-time rule, on the Super 3.5 stages: the error names the key, the value and
the arithmetic."""

# The catalogued checks these tests break, which the rule catalogue's meta-test finds by
# name (recorded from the checks that produced an issue while these tests ran):
# dataset_agrees_with_model_and_train, finetune_has_weights_to_load,
# global_batch_splits_over_data_parallel, parallel_layout_holds, recipe_names_its_mode,
# sequence_splits_over_its_ranks, warmup_ends_before_the_decay.

from __future__ import annotations

import pytest

from recipekit.errors import RecipeError
from recipekit.megatron_bridge.checks import FINALIZE_TURNS_SP_OFF
from recipekit.megatron_bridge.rules import cite
from recipekit.model_card import ModelCard
from recipekit.plan import make_plan
from recipekit.stage import Stage
from recipes.super35.pretrain import pretrain, pretrain_tiny
from recipes.super35.sft import sft, sft_long_context, sft_peft


def _errors(stage: Stage, *overrides: str) -> list[str]:
    with pytest.raises(RecipeError) as exc:
        make_plan(stage, overrides)
    return [issue.render() for issue in exc.value.issues]


def _warnings(stage: Stage, *overrides: str) -> list[str]:
    """The checks' warnings (the memory estimate's are recipekit/memory's tests')."""
    warnings = make_plan(stage, overrides).warnings
    return [w.render() for w in warnings if not w.path.startswith("memory.")]


def test_the_recipe_name_must_say_pretrain_or_fine_tune() -> None:
    target = "megatron.bridge.recipes.nemotronh_multimodal.nemotron_35_super_vl.super_vl_config"
    assert _errors(sft, f"recipe._target_={target}") == [
        f"recipe._target_ = '{target}': the name does not say whether it pretrains or "
        "fine-tunes (Megatron-Bridge's runner reads _pretrain_, _sft_ or _peft_ in it to pick "
        "the training loop)"
    ]


def test_tensor_parallelism_stays_inside_nvlink() -> None:
    assert _errors(sft, "model.tensor_model_parallel_size=16") == [
        "model.tensor_model_parallel_size = 16: tensor parallelism must stay inside NVLink: "
        "a H100 node has 8 GPUs and NVLink ends at the node"
    ]


def test_expert_tensor_parallelism_may_span_gb200_trays_as_for_nemo_rl() -> None:
    # One NVLink rule for every framework: 8 GPUs = 2 trays of one NVL72 rack is inside NVLink.
    errors = _errors(sft_long_context, "model.expert_tensor_parallel_size=8")
    assert not [e for e in errors if "NVLink" in e], errors
    errors = _errors(sft_long_context, "model.expert_tensor_parallel_size=3")
    assert errors[0].startswith(
        "model.expert_tensor_parallel_size = 3: expert tensor parallelism must stay inside NVLink"
    )


def test_tensor_x_pipeline_x_context_must_divide_the_gpus() -> None:
    errors = _errors(sft, "model.context_parallel_size=3")
    # The keys the user sets are named, with the arithmetic.
    assert errors[0] == (
        "model: tensor_model_parallel_size x pipeline_model_parallel_size x "
        "context_parallel_size = 1 x 2 x 3 = 6 does not divide the 64 GPUs (8 nodes x 8 H100) "
        "(data parallel would be 64 / 6 = 10.6667; change one of model.tensor_model_parallel_size, "
        "model.pipeline_model_parallel_size, model.context_parallel_size)"
    )


def test_experts_must_split_evenly_over_expert_parallelism() -> None:
    assert _errors(sft, "model.expert_model_parallel_size=3") == [
        "model.expert_model_parallel_size = 3: 512 experts per MoE layer cannot be split evenly "
        "over EP=3 (512 / 3 = 170.667)",
        "model.expert_model_parallel_size = 3: EP x ETP x PP = 3 x 1 x 2 = 6 does not divide "
        "the 64 GPUs (8 nodes x 8 H100)",
    ]


def test_the_expert_groups_of_every_pipeline_stage_must_fit() -> None:
    # 512 / 64 is whole, but two pipeline stages of EP 64 need 128 GPUs.
    assert _errors(sft, "model.expert_model_parallel_size=64") == [
        "model.expert_model_parallel_size = 64: EP x ETP x PP = 64 x 1 x 2 = 128 does not "
        "divide the 64 GPUs (8 nodes x 8 H100)"
    ]


def test_expert_parallelism_on_a_dense_model_is_an_error() -> None:
    dense = sft.with_values(
        model=ModelCard(name="dense-8b", total_params_b=8, active_params_b=8, num_layers=32)
    )
    assert "model.expert_model_parallel_size = 32: dense-8b is a dense model" in _errors(dense)[0]


def test_an_even_pipeline_split_must_divide_the_layers() -> None:
    assert _errors(
        sft, "model.pipeline_model_parallel_size=16", "model.expert_model_parallel_size=4"
    ) == [
        "model.pipeline_model_parallel_size = 16: NVIDIA-Nemotron-3.5-Super-VL-120B-A12B has 88 "
        "layers, which PP=16 cannot split evenly (88 / 16 = 5.5) "
        "(set num_layers_in_first/last_pipeline_stage for an uneven split)"
    ]


def test_an_uneven_pipeline_split_must_divide_what_is_left() -> None:
    errors = _errors(
        pretrain, "model.pipeline_model_parallel_size=4", "model.expert_model_parallel_size=16"
    )
    assert errors == [
        "model.pipeline_model_parallel_size = 4: NVIDIA-Nemotron-3.5-Super-VL-120B-A12B has 88 "
        "layers: 88 - 38 = 50 are left for the other 3 of the PP=4 stages, which cannot split "
        "them evenly"
    ]


def test_the_global_batch_must_split_into_micro_batches_over_data_parallel() -> None:
    assert _errors(sft, "train.global_batch_size=1000") == [
        "train.global_batch_size = 1000: must be a multiple of micro_batch_size x DP = 1 x 32 = "
        "32 (DP = 64 GPUs / (TP x PP x CP = 2))"
    ]


def test_context_parallel_sequences_split_into_two_chunks_a_rank() -> None:
    assert _errors(sft_long_context, "model.seq_length=131000") == [
        "model.seq_length = 131000: context parallelism cuts each sequence into 2 x CP = 64 "
        "chunks: it must be a multiple of 64, to which Megatron-Bridge pads every batch "
        + cite(
            "megatron-bridge.config.config-container-validate.dataset-seq-length-not-multiple-lcm"
        )
    ]


def test_sequence_parallel_sequences_split_over_tensor_parallel() -> None:
    assert _errors(sft_peft, "model.seq_length=4098") == [
        "model.seq_length = 4098: sequence parallelism splits each sequence over the TP = 4 "
        "ranks: it must be a multiple of 4, to which Megatron-Bridge pads every batch "
        + cite(
            "megatron-bridge.config.config-container-validate.dataset-seq-length-not-multiple-lcm"
        )
    ]


def test_an_explicit_dataset_sequence_length_must_agree_with_the_model() -> None:
    assert _errors(sft, "dataset.seq_length=8192") == [
        "dataset.seq_length = 8192: differs from model.seq_length (4096); Megatron-Bridge's "
        "runner would set the model's to the dataset's (leave it derived)"
    ]


def test_an_explicit_dataset_micro_batch_must_agree_with_train() -> None:
    errors = _errors(sft, "dataset.micro_batch_size=2")
    assert errors == [
        "dataset.micro_batch_size = 2: the loader would batch differently from "
        "train.micro_batch_size (1) (leave it derived)"
    ]


def test_freezing_every_part_without_an_adapter_is_an_error() -> None:
    errors = _errors(sft, "model.freeze_language_model=true", "model.freeze_vision_projection=true")
    assert errors == [
        "model: freeze_language_model, freeze_vision_model and freeze_vision_projection are all "
        "true and there is no peft adapter: nothing would train "
        "(unfreeze a part, or add a peft section)"
    ]


def test_freezing_every_part_under_an_adapter_is_fine() -> None:
    make_plan(sft_peft, ["model.freeze_language_model=true"])


def test_a_peft_recipe_needs_an_adapter() -> None:
    assert _errors(sft_peft, "peft=null") == [
        "peft = None: nemotron_35_super_vl_peft_config is a PEFT recipe: set the adapter "
        "(LoRA dim, alpha, target_modules)"
    ]


def test_a_peft_recipe_needs_weights_to_adapt() -> None:
    errors = _errors(sft_peft, "checkpoint.pretrained_checkpoint=null")
    assert errors[0] == (
        "checkpoint.pretrained_checkpoint = None: Megatron-Bridge asserts that PEFT trains "
        "adapters over a pretrained checkpoint: name the checkpoint to load "
        + cite(
            "megatron-bridge.config.config-container-validate.peft-adapter-without-checkpoint-pretrained-checkpoint"
        )
    )


def test_fine_tuning_needs_weights_to_load() -> None:
    assert _errors(sft, "checkpoint.pretrained_checkpoint=null") == [
        "checkpoint.finetune = True: fine-tuning loads the weights of "
        "checkpoint.pretrained_checkpoint, which is not set"
    ]


def test_a_fine_tuning_recipe_without_weights_is_refused() -> None:
    """Megatron-Bridge#1649: no pretrained_checkpoint trains from random weights, silently."""
    errors = _errors(sft, "checkpoint.finetune=false", "checkpoint.pretrained_checkpoint=null")
    assert len(errors) == 1 and errors[0].startswith("checkpoint.pretrained_checkpoint = None")
    assert "Megatron-Bridge#1649" in errors[0]


def test_sequence_parallel_with_one_tensor_rank_is_a_warning() -> None:
    assert _warnings(sft, "model.sequence_parallel=true") == [
        "model.sequence_parallel = True: has no effect with tensor_model_parallel_size 1: "
        "Megatron-Bridge's provider turns it off before Megatron-Core would refuse it "
        f"({FINALIZE_TURNS_SP_OFF})"
    ]


def test_a_warm_up_longer_than_the_run_is_a_warning() -> None:
    assert _warnings(pretrain_tiny, "scheduler.lr_warmup_iters=50") == [
        "scheduler.lr_warmup_iters = 50: the warm-up does not end before the decay does "
        "(scheduler.lr_decay_iters = 20): Megatron-Bridge warns and cuts it to one step less "
        + cite("megatron-bridge.config.calculate-scheduler-steps.warm-up-long-decay-longer-cut")
    ]


def test_a_stage_that_loads_weights_keeps_the_checkpoints_sizes() -> None:
    # sft loads checkpoint.pretrained_checkpoint into the provider the model.* keys shape: fewer
    # layers or experts would load a part of the weights and train that, silently.
    layers = _errors(sft, "model.num_layers=3")
    assert layers[0].startswith("model.num_layers = 3: ")
    assert f"have num_layers = {sft.model.num_layers}" in layers[0]
    assert "loads from checkpoint.pretrained_checkpoint" in layers[0]
    (experts,) = (e for e in _errors(sft, "model.num_moe_experts=64") if "experts" in e)
    assert "have num_moe_experts = 512" in experts
    # The checkpoint's own sizes stand.
    make_plan(sft, ("model.num_layers=88", "model.hidden_size=4096"))


def test_lora_excludes_modules_only_when_it_names_no_targets() -> None:
    # lora_excludes_only_without_targets: Megatron-Bridge's module matcher asserts it
    # (module_matcher.py @ 0.6.2, the release whose LoRA and PEFT main's extend).
    (found,) = _errors(sft_peft, "peft.exclude_modules=[linear_fc2]")
    assert found.startswith("peft.exclude_modules = ('linear_fc2',): Megatron-Bridge's LoRA")
    rule = "megatron-bridge.peft.module-matcher.match.exclude-modules-empty-target-modules"
    assert found.endswith(
        cite(rule) + " (name the modules in peft.target_modules alone, or set "
        "it [] to adapt every linear layer but the excluded)"
    ), found
    assert "@ Megatron-Bridge 0.6.2)" in cite(rule)
    make_plan(sft_peft, ("peft.exclude_modules=[linear_fc2]", "peft.target_modules=[]"))
    # Keys LoRA declares beyond the recipe's five plan (they were refused as unknown before).
    make_plan(sft_peft, ("peft.lora_A_init_method=kaiming", "peft.normalize_moe_lora=true"))
