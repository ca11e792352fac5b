"""On-policy distillation's rules: a value that breaks each is refused (or warned about)."""

# The catalogued checks these tests break, which the rule catalogue's meta-test finds by
# name (recorded from the checks that produced an issue while these tests ran):
# non_colocated_teachers_need_async_rollouts, opd_recommends_icepop, opd_recommends_no_ppo_ratio,
# teachers_fit_on_one_node, teachers_need_a_megatron_student, teacher_megatron_overrides,
# teacher_megatron_overrides_take_effect, teacher_precision_is_the_policys.

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


# --- a teacher's own settings: what TeacherWorkerGroup makes of them ------------------------

DEFAULT = f"{TEACHERS}.default_teacher_cfg"


def test_a_teacher_takes_any_megatron_setting_beside_its_own(errors: Plan) -> None:
    # TeacherResourceConfig folds an undeclared key into the teacher's megatron_cfg, so every
    # key of NeMo-RL's MegatronConfig is a teacher key, typed as MegatronConfig types it.
    assert errors(mopd_phase1, f"{DEFAULT}.sequence_parallel=true") == []
    [typed] = errors(mopd_phase1, f"{DEFAULT}.sequence_parallel=3")
    assert typed.startswith(f"{DEFAULT}.sequence_parallel = 3: expected true or false")
    [typo] = errors(mopd_phase1, f"{DEFAULT}.tensor_model_paralel_size=4")
    assert "did you mean 'tensor_model_parallel_size'" in typo


def test_megatron_cfg_overrides_are_megatron_settings(errors: Plan, warned: Plan) -> None:
    overrides = f"{DEFAULT}.megatron_cfg_overrides"
    [wrong] = errors(mopd_phase1, f"{overrides}={{sequence_parallel: 3}}")
    assert wrong.startswith(f"{overrides}.sequence_parallel = 3: the teacher's Megatron")
    found = warned(mopd_phase1, f"{overrides}={{sequence_paralel: true, context_parallel_size: 2}}")
    assert any(
        w.startswith(f"{overrides}.sequence_paralel: not a key of NeMo-RL's MegatronConfig")
        and "did you mean 'sequence_parallel'" in w
        for w in found
    ), found
    assert any(
        w.startswith(f"{overrides}.context_parallel_size = 2: replaces the teacher's own")
        for w in found
    ), found


def test_a_teachers_precision_other_than_the_policys_is_warned(warned: Plan) -> None:
    found = [w for w in warned(mopd_phase1, f"{DEFAULT}.precision=fp32") if "precision" in w]
    assert found and "runs at policy.precision (bfloat16)" in found[0]
    # The recipe's bf16 is the policy's bfloat16.
    assert not [w for w in warned(mopd_phase1) if w.startswith(f"{DEFAULT}.precision")]
