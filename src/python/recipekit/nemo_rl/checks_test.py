"""One test per plan-time rule: the error names the key, the value and the arithmetic."""

# The catalogued checks these tests break, which the rule catalogue's meta-test finds by
# name (recorded from the checks that produced an issue while these tests ran):
# runner_refusals, micro_batches_agree_at_large_tp, response_budget_fits.

# The catalogued checks these tests break (by the upstream line each cites), which the
# rule catalogue's meta-test finds by name:
# math_verifier_type_is_known, model_overrides_name_no_first_class_key.

from __future__ import annotations

import attrs
import pytest

from recipekit.errors import RecipeError
from recipekit.hardware import B200_NODE, GB200_NODE, H100_NODE, Hardware
from recipekit.model_card import ModelCard
from recipekit.nemo_rl.checks.settings import V3_VERIFIER_IS_A_STRING
from recipekit.nemo_rl.rule_lines import line_of, where
from recipekit.plan import make_plan
from recipes.super3.dapo import dapo_b200, dapo_gb200, dapo_h100


def _errors(stage: object, *overrides: str) -> list[str]:
    with pytest.raises(RecipeError) as exc:
        make_plan(stage, overrides)  # type: ignore[arg-type]
    return [i.render() for i in exc.value.issues]


def _one(stage: object, *overrides: str) -> str:
    errors = _errors(stage, *overrides)
    assert len(errors) == 1, errors
    return errors[0]


def test_tensor_parallel_stays_inside_a_node() -> None:
    errors = _errors(dapo_b200, "policy.megatron_cfg.tensor_model_parallel_size=16")
    assert errors[0] == (
        "policy.megatron_cfg.tensor_model_parallel_size = 16: tensor parallelism must stay inside "
        "NVLink: a B200 node has 8 GPUs and NVLink ends at the node"
    )


def test_tensor_parallel_on_nvl72_takes_whole_nodes_that_tile_the_rack() -> None:
    assert GB200_NODE.tensor_parallel_problem(8) == ""  # 2 of the 18 trays
    assert GB200_NODE.tensor_parallel_problem(3) == "3 does not divide the 4 GPUs of a GB200 node"
    errors = _errors(dapo_gb200, "policy.megatron_cfg.tensor_model_parallel_size=20")
    assert errors[0].endswith("must tile the 18-node NVLink domain: 20 GPUs does not"), errors


def test_model_parallel_must_divide_the_training_gpus_left_after_generation() -> None:
    text = _one(dapo_b200, "policy.megatron_cfg.context_parallel_size=8")
    assert (
        "policy.megatron_cfg: tensor_model_parallel_size x pipeline_model_parallel_size x "
        "context_parallel_size = 4 x 1 x 8 = 32 does not divide the 16 training GPUs" in text
    )
    assert "after the generation nodes" in text


def test_experts_must_split_evenly() -> None:
    errors = _errors(dapo_gb200, "policy.megatron_cfg.expert_model_parallel_size=3")
    assert "512 experts per MoE layer cannot be split evenly over EP=3" in errors[0]
    assert "EP x ETP x PP = 3 x 4 x 1 = 12 does not divide the 16 training GPUs" in errors[1]


def test_expert_parallelism_on_a_dense_model_is_an_error() -> None:
    dense = dapo_h100.with_values(
        model=ModelCard(name="dense-8b", total_params_b=8, active_params_b=8, num_layers=32)
    )
    assert "dense model" in _one(dense)


def test_pipeline_split_must_divide_the_layers() -> None:
    errors = _errors(dapo_h100, "policy.megatron_cfg.pipeline_model_parallel_size=3")
    assert any("88 layers, which PP=3 cannot split evenly" in e for e in errors)


def test_generation_cannot_take_every_node() -> None:
    text = _one(dapo_gb200, "policy.generation.colocated.resources.num_nodes=5")
    assert "generation takes 5 of the 5 nodes, leaving none to train on" in text


def test_generation_resources_cannot_exceed_a_node() -> None:
    errors = _errors(dapo_gb200, "policy.generation.colocated.resources.gpus_per_node=8")
    assert any("a GB200 node has 4 GPUs" in e for e in errors)


def test_cluster_must_match_the_hardware() -> None:
    text = _one(dapo_gb200, "cluster.gpus_per_node=8")
    assert text.startswith("cluster.gpus_per_node = 8: the stage runs on GB200 nodes with 4 GPUs")


def test_vllm_must_fit_the_generation_node() -> None:
    errors = _errors(dapo_gb200, "policy.generation.vllm_cfg.tensor_parallel_size=8")
    assert "vLLM TP x PP = 8 x 1 = 8 does not divide the 4 generation GPUs" in errors[0]
    assert len(errors) == 1, errors
    # Across nodes vLLM still runs (NeMo-RL's DeepSeek-V3 examples use TP 32): a warning.
    wider = attrs.evolve(dapo_b200, hardware=Hardware(B200_NODE, num_nodes=4))
    two_nodes = "policy.generation.colocated.resources.num_nodes=2"
    plan = make_plan(wider, [two_nodes, "policy.generation.vllm_cfg.tensor_parallel_size=16"])
    [warning] = [w.render() for w in plan.warnings if w.path.endswith("tensor_parallel_size")]
    assert "vLLM tensor parallelism leaves NVLink: a B200 node has 8" in warning


def test_global_batch_must_split_over_data_parallel() -> None:
    stage = dapo_h100.with_values(hardware=Hardware(H100_NODE, num_nodes=8))
    # 64 GPUs, TP 8 x CP 4 -> DP 2; 33 prompts x 1 generation cannot split over 2 ranks.
    text = _one(
        stage,
        "grpo.num_prompts_per_step=33",
        "grpo.num_generations_per_prompt=1",
        "policy.megatron_cfg.expert_model_parallel_size=64",
    )
    assert "must be a multiple of the data-parallel size DP = 2" in text


def test_global_batch_must_divide_the_samples_of_a_step() -> None:
    text = _one(dapo_gb200, "policy.train_global_batch_size=500")
    assert "the 32 x 16 = 512 samples of a step must split into whole global batches" in text


def test_overlong_buffer_sits_inside_the_response_budget() -> None:
    text = _one(dapo_gb200, "grpo.reward_shaping.overlong_buffer_length=1024")
    assert text == (
        "grpo.reward_shaping.overlong_buffer_length = 1024: the overlong buffer must sit inside "
        "the response budget (max_response_length = 1024)"
    )


def test_responses_cannot_outgrow_the_sequence_budget() -> None:
    errors = _errors(
        dapo_gb200,
        "policy.generation.max_new_tokens=2048",
        "policy.generation.vllm_cfg.max_model_len=2048",
        "data.max_input_seq_length=4096",
    )
    assert [e.split(" =")[0] for e in errors] == [
        "policy.generation.max_new_tokens",
        "policy.generation.vllm_cfg.max_model_len",
        "data.max_input_seq_length",
    ]


def test_a_packing_budget_below_a_sequence_warns() -> None:
    # A sequence longer than the budget fails packing when it comes (NeMo-RL's Super examples
    # pack 49152 tokens of 65536-token sequences): a warning, with the arithmetic.
    plan = make_plan(dapo_gb200, ["policy.sequence_packing.train_mb_tokens=512"])
    [text] = [w.render() for w in plan.warnings if "train_mb_tokens" in w.path]
    assert "one full sequence (policy.max_total_sequence_length = 1024)" in text
    assert "longer than 512 tokens fails when it is packed" in text


def test_packing_and_dynamic_batching_are_exclusive() -> None:
    # Policy.__init__ asserts it (lm_policy.py @ super-v3), replayed from the pinned source.
    errors = _errors(dapo_gb200, "policy.dynamic_batching.enabled=true")
    assert errors and all("lm_policy.py" in e and "Policy.__init__" in e for e in errors)
    assert errors[0].startswith("policy.sequence_packing.enabled = True")


def test_context_parallel_padding_gives_the_arithmetic() -> None:
    errors = _errors(
        dapo_gb200, "policy.max_total_sequence_length=1000", "data.max_input_seq_length=512"
    )
    assert errors == [
        "policy.max_total_sequence_length = 1000: with CP=4 and TP=4 packed sequences are padded "
        "to multiples of 2 x 4 x 4 = 32; 1000 is not one (use 1024)"
    ]


def test_context_parallel_needs_packing() -> None:
    errors = _errors(dapo_gb200, "policy.sequence_packing.enabled=false")
    assert any("needs policy.sequence_packing.enabled" in e for e in errors)


def test_sequence_parallel_divisor_must_be_a_multiple_of_tp_unless_packed() -> None:
    # Unpacked, the batch keeps the length the divisor gives it; packed, NeMo-RL pads each
    # sequence to a multiple of TP itself (NeMo-RL's DeepSeek-V3 example packs with 2 and TP 8).
    errors = _errors(
        dapo_gb200,
        "policy.make_sequence_length_divisible_by=6",
        "policy.sequence_packing.enabled=false",
    )
    [text] = [e for e in errors if e.startswith("policy.make_sequence_length_divisible_by")]
    assert "use a multiple of 4" in text
    make_plan(dapo_gb200, ["policy.make_sequence_length_divisible_by=6"])


def test_large_tp_needs_equal_micro_batches() -> None:
    text = _one(dapo_gb200, "policy.logprob_batch_size=2")
    assert text.startswith("policy.logprob_batch_size = 2: with TP=4 (>= 4)"), text
    assert "force_on_policy_ratio" in text


def test_forcing_the_on_policy_ratio_lifts_the_large_tp_check() -> None:
    # GRPO sets NRL_IGNORE_TP_ACCURACY_CHECK itself under force_on_policy_ratio (grpo.py, setup
    # @ super-v3); what that mode asks of the batch is its own rule.
    # (dapo-gb200's global batch is one step's samples, so the plan is green.)
    make_plan(dapo_gb200, ("policy.logprob_batch_size=2", "loss_fn.force_on_policy_ratio=true"))


def test_batch_multiplier_needs_dynamic_sampling() -> None:
    # GRPO's setup asserts it (grpo.py, setup @ super-v3), read from the pinned source.
    text = _one(dapo_gb200, "grpo.use_dynamic_sampling=false")
    assert text.startswith("grpo.batch_multiplier = 2: NeMo-RL's setup raises AssertionError")
    assert where("nemo-rl.grpo.v3.batch-multiplier-needs-dynamic-sampling") in text
    assert "grpo.use_dynamic_sampling=False" in text


def test_offload_fraction_must_be_whole() -> None:
    # super-v3's Megatron worker asserts it (setup.py, _validate_optimizer_config), replayed.
    text = _one(dapo_h100, "policy.megatron_cfg.optimizer.optimizer_offload_fraction=0.5")
    assert text.startswith("policy.megatron_cfg.optimizer.optimizer_offload_fraction = 0.5: ")
    assert where("nemo-rl.megatron-setup.v3.whole-optimizer-offload") in text


def test_null_math_verifier_is_caught() -> None:
    text = _one(dapo_gb200, "env.math.math_verify_impl=null")
    assert "every reward 0.0 silently" in text


def test_a_null_or_unknown_verifier_type_is_caught() -> None:
    text = _one(dapo_gb200, "env.math.verifier_type=null")
    assert "asserts verifier_type is a string" in text
    assert f"(math_environment.py:{line_of(V3_VERIFIER_IS_A_STRING)} @ super-v3)" in text
    text = _one(dapo_gb200, "env.math.verifier_type=english_multichoise")
    assert "did you mean 'english_multichoice'?" in text
    make_plan(dapo_gb200, ["env.math.verifier_type=multilingual_multichoice"])


def test_a_model_override_of_a_first_class_megatron_key_is_refused() -> None:
    from recipes.super35.rl import rlvr

    text = _one(rlvr, "policy.megatron_cfg.model_overrides={sequence_parallel: false}")
    assert text.startswith("policy.megatron_cfg.model_overrides.sequence_parallel = False")
    assert "set policy.megatron_cfg.sequence_parallel instead" in text
    # A Megatron-Bridge model field NeMo-RL has no key for is what model_overrides is for.
    make_plan(rlvr, ["policy.megatron_cfg.model_overrides={hidden_dropout: 0.0}"])


def test_a_model_override_of_a_size_the_checkpoint_fixes_is_refused() -> None:
    # NeMo-RL loads the stage's model into the overridden provider: fewer layers would load a
    # part of the weights and train that, silently; another width fails to load.
    from recipekit.megatron_core.overrides import checkpoint_shape
    from recipes.super35.rl import rlvr

    card = rlvr.model
    shape = checkpoint_shape(card)
    assert {"num_layers", "hidden_size", "num_moe_experts", "mamba_num_heads"} <= set(shape)
    text = _one(rlvr, "policy.megatron_cfg.model_overrides={num_layers: 3}")
    assert text.startswith("policy.megatron_cfg.model_overrides.num_layers = 3: ")
    assert f"have num_layers = {card.num_layers}" in text
    errors = _errors(
        rlvr, "policy.megatron_cfg.model_overrides={hidden_size: 1024, kv_channels: 64}"
    )
    assert [e.split(" = ")[0] for e in errors] == [
        "policy.megatron_cfg.model_overrides.hidden_size",
        "policy.megatron_cfg.model_overrides.kv_channels",
    ]
    # The checkpoint's own value, and a field that is no size, stand.
    same = ", ".join(f"{name}: {value}" for name, value in shape.items())
    make_plan(rlvr, [f"policy.megatron_cfg.model_overrides={{{same}, moe_router_topk: 4}}"])


def test_fp8_kv_cache_needs_fp8_generation() -> None:
    text = _one(dapo_gb200, "policy.generation.vllm_cfg.kv_cache_dtype=fp8")
    assert "needs vllm_cfg.precision: fp8" in text


def test_megatron_generation_cannot_be_non_colocated() -> None:
    errors = _errors(dapo_gb200, "policy.generation.backend=megatron")
    assert any("cannot be non-colocated" in e for e in errors)


def test_two_training_backends_are_an_error() -> None:
    errors = _errors(dapo_gb200, "policy.dtensor_cfg.enabled=true")
    assert any(
        e.startswith("policy.dtensor_cfg.enabled = True: NeMo-RL's Policy.__init__ raises")
        and "ValueError" in e
        for e in errors
    ), errors


def test_warnings_do_not_stop_the_plan() -> None:
    # Ranked by validation, which never runs: NeMo-RL's save steps warn (rules/grpo_setup.py).
    plan = make_plan(dapo_gb200, ["checkpointing.metric_name=val:accuracy", "grpo.val_period=0"])
    assert any(w.path == "checkpointing.save_period" for w in plan.warnings)


def test_shadowed_leave_one_out_warning_disappears_when_they_agree() -> None:
    plan = make_plan(dapo_gb200, ["grpo.adv_estimator.use_leave_one_out_baseline=true"])
    assert not any(w.path == "grpo.use_leave_one_out_baseline" for w in plan.warnings)
