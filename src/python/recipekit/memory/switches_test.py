"""A memory switch a stage turns on that the estimate does not model is a plan warning naming
it, on both frameworks and wherever it is set; never silent. Expandable segments are modelled:
the allocator term shows them, wherever the workers get the setting."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from recipekit.memory.switches import allocator_conf, expandable, worker_environment
from recipekit.nemo_rl.rules.conftest import plan_warnings
from recipekit.plan import Plan, make_plan
from recipes.super35.pretrain import pretrain
from recipes.super35.rl import rlvr

MODEL_NOTE = "which the memory estimate does not model"


@pytest.mark.parametrize(
    ("overrides", "key"),
    [
        (("model.cuda_graph_impl=local",), "model.cuda_graph_impl"),
        (("model.enable_cuda_graph=true",), "model.enable_cuda_graph"),
        (
            # Megatron-Core asserts that offloading names what it offloads.
            ("model.fine_grained_activation_offloading=true", "model.offload_modules=[core_attn]"),
            "model.fine_grained_activation_offloading",
        ),
        (("model.cpu_offloading=true",), "model.cpu_offloading"),
    ],
)
def test_megatron_bridge_switches_warn_naming_the_key(overrides: tuple[str, ...], key: str) -> None:
    warned = plan_warnings(pretrain, *overrides)
    assert [w for w in warned if w.startswith(key) and MODEL_NOTE in w], warned


def test_nemo_rl_switches_warn_set_first_class_or_through_model_overrides() -> None:
    path = "policy.megatron_cfg"
    first = plan_warnings(rlvr, f"{path}.cuda_graph_impl=local")
    assert any(w.startswith(f"{path}.cuda_graph_impl") and MODEL_NOTE in w for w in first)
    overridden = plan_warnings(rlvr, f"{path}.model_overrides={{activation_offload_fraction: 0.5}}")
    key = f"{path}.model_overrides.activation_offload_fraction"
    assert any(w.startswith(key) and MODEL_NOTE in w for w in overridden)


def test_async_saves_and_a_switch_left_off_are_no_warning() -> None:
    # rlvr saves its Megatron checkpoints asynchronously (its upstream base does): Megatron-Core
    # stages a save on the host, async or not, so the GPU estimate stands and nothing is said.
    assert not [w for w in plan_warnings(rlvr) if "async_save" in w]
    assert not [w for w in plan_warnings(pretrain, "checkpoint.async_save=true") if MODEL_NOTE in w]
    assert not [w for w in plan_warnings(pretrain, "model.cuda_graph_impl=none") if MODEL_NOTE in w]


EXPANDABLE = "expandable_segments:True"


def _allocator_term(plan: Plan) -> dict[str, Any]:
    assert plan.memory is not None
    terms: list[dict[str, Any]] = plan.memory.as_json()["phases"][0]["terms"]
    [term] = [t for t in terms if "allocator" in t["name"]]
    return term


def test_expandable_segments_are_modelled_wherever_the_workers_get_them() -> None:
    # Not a warning: the allocator term shows the growing segment, from the config's env_vars
    # or the stage's environment, and is below the fixed segments' share.
    conf = f"env_vars={{PYTORCH_CUDA_ALLOC_CONF: '{EXPANDABLE}'}}"
    assert not [w for w in plan_warnings(pretrain, conf) if "PYTORCH_CUDA_ALLOC_CONF" in w]
    fixed = _allocator_term(make_plan(pretrain))
    assert "expandable" not in fixed["detail"]
    from_config = _allocator_term(make_plan(pretrain, (conf,)))
    inherited = attrs.evolve(
        pretrain, environment={**pretrain.environment, "PYTORCH_CUDA_ALLOC_CONF": EXPANDABLE}
    )
    for term in (from_config, _allocator_term(make_plan(inherited))):
        assert term["detail"].startswith("expandable segments") and term["gib"] < fixed["gib"]


def test_the_job_environment_wins_over_megatron_bridge_env_vars_not_nemo_rls() -> None:
    # Megatron-Bridge setdefaults its env_vars; NeMo-RL hands the policy's to Ray over them.
    off = {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:False"}
    on = {"PYTORCH_CUDA_ALLOC_CONF": EXPANDABLE}
    with worker_environment(off):
        assert not expandable(allocator_conf(on, config_first=False))
        assert expandable(allocator_conf(on, config_first=True))
    with worker_environment(on):
        assert expandable(allocator_conf(None, config_first=True))
    assert not expandable(allocator_conf(None, config_first=False))
    assert expandable("max_split_size_mb:512, Expandable_Segments:true")
