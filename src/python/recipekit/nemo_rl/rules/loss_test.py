"""The loss rules' warning: a forced on-policy ratio with an error threshold."""

from __future__ import annotations

from recipekit.nemo_rl.rules.conftest import Plan
from recipes.super3.dapo import dapo_h100
from recipes.super35.rl import rlvr


def test_forced_ratio_with_a_threshold_warns(warned: Plan) -> None:
    # rlvr's train_global_batch_size is a whole step, so forcing the ratio is otherwise valid.
    warnings = warned(rlvr, "loss_fn.force_on_policy_ratio=true")
    assert any(w.startswith("loss_fn.force_on_policy_ratio") and ":2503" in w for w in warnings)


def test_super_v3_warns_only_in_async_grpo(warned: Plan) -> None:
    warnings = warned(dapo_h100, "loss_fn.force_on_policy_ratio=true")
    assert not any(w.startswith("loss_fn.force_on_policy_ratio") for w in warnings)
