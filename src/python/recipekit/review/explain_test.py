"""``explain``: base recipe, upstream base, variant, override and derivation, each at its file
and line."""

from __future__ import annotations

from pathlib import Path

import pytest

import recipes.super3.dapo as dapo
import recipes.super35.sft as sft
from recipekit.errors import RecipeError
from recipekit.review.explain import explain
from recipekit.stage import Stage

SOURCE = Path(dapo.__file__).read_text().splitlines()


def _line(where: str) -> str:
    """The source text at ``file:line`` of recipes/super3/dapo.py."""
    file, _, line = where.rpartition(":")
    assert file.endswith("recipes/super3/dapo.py"), where
    return SOURCE[int(line) - 1]


def test_base_recipe_value_points_at_its_section_constructor() -> None:
    origin = explain(sft.sft, "train.global_batch_size")
    assert (origin.kind, origin.value) == ("base", 1280)
    file, _, line = origin.where.rpartition(":")
    assert file.endswith("recipes/super35/sft.py")
    assert "global_batch_size=" in Path(sft.__file__).read_text().splitlines()[int(line) - 1]


def test_upstream_value_points_at_the_typed_base_and_its_pinned_file() -> None:
    origin = explain(dapo.dapo_b200, "grpo.num_prompts_per_step")
    assert (origin.kind, origin.value) == ("upstream", 32)
    file, _, line = origin.where.rpartition(":")
    assert file.endswith("recipes/upstream/nemo_rl_super_v3/grpo_math_1b.py")
    assert "num_prompts_per_step=32" in Path(file).read_text().splitlines()[int(line) - 1]
    assert origin.detail.endswith("nemo-rl/super-v3/examples/configs/grpo_math_1B.yaml")


def test_a_change_in_a_module_level_dict_points_at_its_key() -> None:
    origin = explain(dapo.dapo_b200, "policy.megatron_cfg.tensor_model_parallel_size")
    assert (origin.kind, origin.value) == ("variant", 4)
    assert '"policy.megatron_cfg.tensor_model_parallel_size": 4' in _line(origin.where)
    assert "dapo-gb200" in origin.detail


def test_variant_value_points_at_the_key_in_with_values() -> None:
    origin = explain(dapo.dapo_h100, "policy.megatron_cfg.tensor_model_parallel_size")
    assert (origin.kind, origin.value) == ("variant", 8)
    assert '"policy.megatron_cfg.tensor_model_parallel_size": 8' in _line(origin.where)
    assert "dapo-h100" in origin.detail


def test_a_key_inside_a_section_the_variant_replaced() -> None:
    origin = explain(dapo.dapo_h100, "policy.generation.colocated.enabled")
    assert origin.kind == "variant"
    assert '"policy.generation.colocated"' in _line(origin.where)


def test_override_wins_and_derived_keys_name_their_source_and_formula() -> None:
    origin = explain(
        dapo.dapo_b200,
        "policy.generation.vllm_cfg.max_model_len",
        ["policy.max_total_sequence_length=2048"],
    )
    assert (origin.kind, origin.value, origin.detail) == (
        "derived",
        2048,
        "= policy.max_total_sequence_length",
    )
    [source] = origin.sources
    assert (source.key, source.kind) == ("policy.max_total_sequence_length", "override")
    assert source.where == "--set policy.max_total_sequence_length=2048"


def test_derived_from_hardware_names_the_variant_that_set_the_hardware() -> None:
    origin = explain(dapo.dapo_b200, "cluster.num_nodes")
    [source] = origin.sources
    assert (source.key, source.value, source.kind) == ("hardware.num_nodes", 3, "hardware")
    assert "hardware=Hardware(B200_NODE" in _line(source.where)


def test_a_product_derivation_explains_both_sources() -> None:
    origin = explain(dapo.dapo_gb200, "policy.train_global_batch_size")
    assert origin.detail == "= grpo.num_prompts_per_step * grpo.num_generations_per_prompt"
    assert [(s.key, s.value, s.kind) for s in origin.sources] == [
        ("grpo.num_prompts_per_step", 32, "upstream"),
        ("grpo.num_generations_per_prompt", 16, "upstream"),
    ]


def test_provenance_does_not_change_equality() -> None:
    assert dapo.dapo_gb200.with_values({}) == dapo.dapo_gb200
    assert len(dapo.dapo_b200.assignments) > len(dapo.dapo_gb200.assignments)
    assert isinstance(dapo.dapo_b200, Stage)


def test_unknown_key_is_a_user_error() -> None:
    with pytest.raises(RecipeError, match="max_total_sequence_length"):
        explain(dapo.dapo_b200, "policy.max_total_sequence_lenght")


def test_a_key_that_takes_one_of_a_set_lists_it_with_its_pinned_source() -> None:
    import recipes.super35.rl as rl

    origin = explain(rl.rlvr, "policy.generation.backend")
    assert origin.accepts.startswith("'vllm', ")
    assert "(nemo_rl/algorithms/grpo.py:" in origin.accepts
    assert origin.accepts.endswith("@ super-v3.5-posttraining)")
    assert any(line.strip().startswith("accepts 'vllm'") for line in origin.text())
    # Super V3's GRPO builds fewer back-ends, read from its own pin.
    assert "'trtllm'" not in explain(dapo.dapo_gb200, "policy.generation.backend").accepts
    # A Literal upstream types the key with; nothing for a number.
    dropout = explain(sft.sft_peft, "peft.dropout_position", ["peft.dropout_position=post"])
    assert dropout.accepts == "'pre', 'post'"
    assert explain(rl.rlvr, "policy.max_total_sequence_length").accepts == ""
