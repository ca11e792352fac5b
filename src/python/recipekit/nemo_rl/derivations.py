"""Every value NeMo-RL's YAML computed with ``${...}``, computed here and nowhere else.

A key whose value is ``DERIVED`` takes the value of its rule when the plan is made, so an
override of the source moves it (``--set policy.max_total_sequence_length=2048`` moves
``max_new_tokens``, ``max_model_len``, the packing token budgets, ...). A key set explicitly in
the recipe or on the command line keeps its value. The rules are listed in dependency order.
"""

from __future__ import annotations

from typing import Any

from recipekit.derivation import Derivation, derive, lookup, product_rule, same_rule

__all__ = ["RULES", "RULES_BY_TARGET", "SEQ", "Derivation", "derive", "lookup", "same_rule"]


def _sequence_divisor(megatron_enabled: Any, megatron_tp: Any, dtensor_tp: Any) -> Any:
    # Sequences are padded to a multiple of the TP size of whichever back-end trains.
    return megatron_tp if megatron_enabled is True else dtensor_tp


SEQ = "policy.max_total_sequence_length"

RULES: tuple[Derivation, ...] = (
    same_rule("cluster.num_nodes", "hardware.num_nodes"),
    same_rule("cluster.gpus_per_node", "hardware.gpus_per_node"),
    same_rule("policy.tokenizer.name", "policy.model_name"),
    product_rule(
        "policy.train_global_batch_size",
        "grpo.num_prompts_per_step",
        "grpo.num_generations_per_prompt",
    ),
    same_rule("policy.logprob_batch_size", "policy.train_micro_batch_size"),
    same_rule("grpo.reward_shaping.max_response_length", SEQ),
    same_rule("policy.megatron_cfg.pipeline_dtype", "policy.precision"),
    same_rule("policy.megatron_cfg.optimizer.clip_grad", "policy.max_grad_norm"),
    same_rule(
        "policy.megatron_cfg.scheduler.start_weight_decay",
        "policy.megatron_cfg.optimizer.weight_decay",
    ),
    same_rule(
        "policy.megatron_cfg.scheduler.end_weight_decay",
        "policy.megatron_cfg.optimizer.weight_decay",
    ),
    product_rule("policy.sequence_packing.train_mb_tokens", SEQ, "policy.train_micro_batch_size"),
    product_rule("policy.sequence_packing.logprob_mb_tokens", SEQ, "policy.logprob_batch_size"),
    product_rule("policy.dynamic_batching.train_mb_tokens", SEQ, "policy.train_micro_batch_size"),
    product_rule("policy.dynamic_batching.logprob_mb_tokens", SEQ, "policy.logprob_batch_size"),
    Derivation(
        "policy.make_sequence_length_divisible_by",
        (
            "policy.megatron_cfg.enabled",
            "policy.megatron_cfg.tensor_model_parallel_size",
            "policy.dtensor_cfg.tensor_parallel_size",
        ),
        _sequence_divisor,
        "the tensor-parallel size of the training back-end",
    ),
    same_rule("policy.generation.max_new_tokens", SEQ),
    same_rule("policy.generation.vllm_cfg.precision", "policy.precision"),
    same_rule("policy.generation.vllm_cfg.max_model_len", SEQ),
    same_rule("policy.generation.colocated.resources.gpus_per_node", "hardware.gpus_per_node"),
    same_rule("data.max_input_seq_length", SEQ),
    same_rule("data.train.seed", "grpo.seed"),
)

RULES_BY_TARGET = {rule.target: rule for rule in RULES}
