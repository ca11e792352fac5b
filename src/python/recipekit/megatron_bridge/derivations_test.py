"""Derived keys follow their source through an override; a key given a value keeps it."""

from __future__ import annotations

from recipekit.megatron_bridge.derivations import RULES
from recipekit.plan import make_plan
from recipes.super35.sft import sft, sft_long_context


def test_the_rules_name_their_sources() -> None:
    assert {r.target: r.sources for r in RULES} == {
        "dataset.seq_length": ("model.seq_length",),
        "dataset.micro_batch_size": ("train.micro_batch_size",),
        "scheduler.lr_decay_iters": ("train.train_iters",),
    }


def test_an_override_of_a_source_moves_what_follows_it() -> None:
    # Two sequences a micro-batch (and three depths of logits: the model's and its two MTP
    # depths') need full recompute and TP 2 to fit 80 GiB (the plan's memory check).
    full_recompute = [
        "model.tensor_model_parallel_size=2",
        "model.recompute_granularity=full",
        "model.recompute_method=uniform",
        "model.recompute_num_layers=1",
    ]
    plan = make_plan(sft, ["train.micro_batch_size=2", "train.train_iters=50", *full_recompute])
    assert plan.framework_config["dataset"]["micro_batch_size"] == 2
    assert plan.framework_config["scheduler"]["lr_decay_iters"] == 50
    assert "dataset.micro_batch_size" in plan.derived


def test_an_explicit_value_is_not_derived() -> None:
    plan = make_plan(sft, ["scheduler.lr_decay_iters=1000"])
    assert plan.framework_config["scheduler"]["lr_decay_iters"] == 1000
    assert "scheduler.lr_decay_iters" not in plan.derived


def test_a_key_the_recipe_leaves_out_stays_out() -> None:
    plan = make_plan(sft_long_context)
    assert "micro_batch_size" not in plan.framework_config["dataset"]
    assert "dataset.micro_batch_size" not in plan.derived
