"""On-policy distillation's rules: a value that breaks each is refused (or warned about)."""

# The catalogued checks these tests break, which the rule catalogue's meta-test finds by
# name (recorded from the checks that produced an issue while these tests ran):
# non_colocated_teachers_need_async_rollouts, opd_recommends_icepop, opd_recommends_no_ppo_ratio,
# teachers_fit_on_one_node, teachers_need_a_megatron_student.

from __future__ import annotations

import pytest

from recipekit.nemo_rl.rule_lines import where
from recipekit.nemo_rl.rules.conftest import Plan, RefusedAt
from recipes.super35.mopd import mopd_phase1

TEACHERS = "on_policy_distillation.non_colocated_teachers"


@pytest.mark.parametrize(
    ("overrides", "key", "reason"),
    [
        (
            (
                "policy.generation.vllm_cfg.async_engine=false",
                "grpo.async_grpo.enabled=false",
                # NeMo Gym's runner would set async_engine true itself (rules/generation.py).
                "env.should_use_nemo_gym=false",
            ),
            "on_policy_distillation.non_colocated_teachers.enabled",
            where("nemo-rl.algorithms.grpo.setup.non-colocated-opd-teachers-need-async"),
        ),
        (
            ("policy.megatron_cfg.enabled=false", "policy.dtensor_cfg.enabled=true"),
            "policy.dtensor_cfg.enabled",
            where("nemo-rl.models.policy.teacher-worker-group.init.opd-teachers-run-megatron-only"),
        ),
        (
            (f"{TEACHERS}.teacher_overrides={{big: {{gpus_per_node: 8}}}}",),
            f"{TEACHERS}.teacher_overrides.big.gpus_per_node",
            where("nemo-rl.algorithms.grpo.setup.each-opd-teacher-fits-one-node"),
        ),
    ],
)
def test_refused(refused_at: RefusedAt, overrides: tuple[str, ...], key: str, reason: str) -> None:
    refused_at(mopd_phase1, overrides, key, reason)


@pytest.mark.parametrize(
    ("override", "key"),
    [
        ("loss_fn.disable_ppo_ratio=false", "loss_fn.disable_ppo_ratio"),
        (
            "loss_fn.truncated_importance_sampling_type=tis",
            "loss_fn.truncated_importance_sampling_type",
        ),
    ],
)
def test_mopd_recommendations_warn(warned: Plan, override: str, key: str) -> None:
    assert any(w.startswith(key) and "MOPD" in w for w in warned(mopd_phase1, override))


def test_shipped_mopd_follows_the_recommendations(warned: Plan) -> None:
    assert not any("MOPD" in w for w in warned(mopd_phase1))
