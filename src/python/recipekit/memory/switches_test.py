"""A memory switch a stage turns on that the estimate does not model is a plan warning naming
it, on both frameworks and wherever it is set; never silent."""

from __future__ import annotations

import pytest

from recipekit.nemo_rl.rules.conftest import plan_warnings
from recipes.super35.pretrain import pretrain
from recipes.super35.rl import rlvr

MODEL_NOTE = "which the memory estimate does not model"


@pytest.mark.parametrize(
    ("override", "key"),
    [
        ("model.cuda_graph_impl=local", "model.cuda_graph_impl"),
        ("model.enable_cuda_graph=true", "model.enable_cuda_graph"),
        (
            "model.fine_grained_activation_offloading=true",
            "model.fine_grained_activation_offloading",
        ),
        ("model.cpu_offloading=true", "model.cpu_offloading"),
        ("checkpoint.async_save=true", "checkpoint.async_save"),
    ],
)
def test_megatron_bridge_switches_warn_naming_the_key(override: str, key: str) -> None:
    found = [w for w in plan_warnings(pretrain, override) if w.startswith(key) and MODEL_NOTE in w]
    assert found, plan_warnings(pretrain, override)


def test_nemo_rl_switches_warn_set_first_class_or_through_model_overrides() -> None:
    path = "policy.megatron_cfg"
    first = plan_warnings(rlvr, f"{path}.cuda_graph_impl=local")
    assert any(w.startswith(f"{path}.cuda_graph_impl") and MODEL_NOTE in w for w in first)
    overridden = plan_warnings(rlvr, f"{path}.model_overrides={{activation_offload_fraction: 0.5}}")
    key = f"{path}.model_overrides.activation_offload_fraction"
    assert any(w.startswith(key) and MODEL_NOTE in w for w in overridden)


def test_shipped_async_saves_are_named_and_a_switch_left_off_is_not() -> None:
    # rlvr saves its Megatron checkpoints asynchronously (its upstream base does).
    shipped = plan_warnings(rlvr)
    assert any(w.startswith("policy.megatron_cfg.checkpoint.async_save") for w in shipped)
    assert not [w for w in plan_warnings(pretrain, "model.cuda_graph_impl=none") if MODEL_NOTE in w]


def test_expandable_segments_say_the_estimate_is_high() -> None:
    conf = "env_vars={PYTORCH_CUDA_ALLOC_CONF: 'expandable_segments:True'}"
    found = [w for w in plan_warnings(pretrain, conf) if "PYTORCH_CUDA_ALLOC_CONF" in w]
    assert found and "the estimate is high" in found[0]
