"""On-policy distillation (``grpo.adv_estimator.name: opd``, super-v3.5-posttraining): where the
teachers run and the loss settings the MOPD recipe recommends."""

from __future__ import annotations

from collections.abc import Iterator

from recipekit.errors import Issue
from recipekit.markers import Marker
from recipekit.nemo_rl.checks import CheckContext
from recipekit.nemo_rl.checks.distillation import non_colocated_teachers
from recipekit.nemo_rl.keys import value_of
from recipekit.nemo_rl.rules.async_grpo import async_rollouts
from recipekit.nemo_rl.rules.citation import cite, mirrors


@mirrors(v35="nemo-rl.algorithms.grpo.setup.non-colocated-opd-teachers-need-async")
def non_colocated_teachers_need_async_rollouts(ctx: CheckContext) -> Iterator[Issue]:
    """grpo.py, setup: teachers on their own GPUs score rollouts while they are collected."""
    if non_colocated_teachers(ctx) is not None and not async_rollouts(ctx):
        yield Issue(
            "on_policy_distillation.non_colocated_teachers.enabled",
            "NeMo-RL's GRPO setup refuses it without an asynchronous generation engine "
            "(policy.generation.vllm_cfg.async_engine)",
            value=True,
        )


@mirrors(v35="nemo-rl.models.policy.teacher-worker-group.init.opd-teachers-run-megatron-only")
def teachers_need_a_megatron_student(ctx: CheckContext) -> Iterator[Issue]:
    """teacher_worker_group.py, TeacherWorkerGroup.__init__: a teacher copies the student's policy
    config and runs only on Megatron, so the student must not enable DTensor."""
    if non_colocated_teachers(ctx) is not None and ctx.config.policy.dtensor_cfg.enabled:
        yield Issue(
            "policy.dtensor_cfg.enabled",
            "NeMo-RL refuses non-colocated teachers with it: a teacher inherits the policy's "
            "config and runs only on Megatron",
            value=True,
        )


@mirrors(v35="nemo-rl.algorithms.grpo.setup.each-opd-teacher-fits-one-node")
def teachers_fit_on_one_node(ctx: CheckContext) -> Iterator[Issue]:
    """grpo.py, setup: each teacher's placement group lies on one node, the default teacher's
    and every override's (the default's layout is checks.distillation_teachers_fit's)."""
    teachers = non_colocated_teachers(ctx)
    if teachers is None:
        return
    named = {"default_teacher_cfg": teachers.default_teacher_cfg}
    overrides = teachers.teacher_overrides
    named |= {
        f"teacher_overrides.{k}": v
        for k, v in (overrides if isinstance(overrides, dict) else {}).items()
    }
    per_node = ctx.hardware.gpus_per_node
    for where, cfg in named.items():
        gpus = value_of(cfg, "gpus_per_node")
        if isinstance(gpus, int) and gpus > per_node:
            yield Issue(
                f"on_policy_distillation.non_colocated_teachers.{where}.gpus_per_node",
                f"NeMo-RL's GRPO setup refuses more than the {per_node} GPUs of a node: a "
                "teacher's placement group must fit on one",
                value=gpus,
            )


def _opd_estimator(ctx: CheckContext) -> bool:
    est = value_of(ctx.config.grpo, "adv_estimator")
    return not isinstance(est, Marker) and value_of(est, "name") == "opd"


def _recommendation(ctx: CheckContext, key: str, wanted: object, rule: str) -> Iterator[Issue]:
    value = value_of(ctx.config.loss_fn, key)
    if _opd_estimator(ctx) and value != wanted:
        yield Issue(
            f"loss_fn.{key}",
            f"NeMo-RL warns that on-policy distillation recommends {wanted!r} here (MOPD) "
            f"({cite(ctx, v35=rule)})",
            value=None if isinstance(value, Marker) else value,
        )


def opd_recommends_no_ppo_ratio(ctx: CheckContext) -> Iterator[Issue]:
    """grpo.py, _create_advantage_estimator: MOPD's loss is REINFORCE-style, without the PPO
    ratio."""
    yield from _recommendation(
        ctx,
        "disable_ppo_ratio",
        True,
        "nemo-rl.algorithms.grpo.create-advantage-estimator.opd-recommends-no-ppo-ratio",
    )


def opd_recommends_importance_sampling(ctx: CheckContext) -> Iterator[Issue]:
    """grpo.py, _create_advantage_estimator: MOPD weighs tokens by the importance-sampling
    correction."""
    yield from _recommendation(
        ctx,
        "use_importance_sampling_correction",
        True,
        "nemo-rl.algorithms.grpo.create-advantage-estimator.opd-recommends-importance-sampling-correction",
    )


def opd_recommends_icepop(ctx: CheckContext) -> Iterator[Issue]:
    """grpo.py, _create_advantage_estimator: MOPD gates the correction hard (icepop)."""
    yield from _recommendation(
        ctx,
        "truncated_importance_sampling_type",
        "icepop",
        "nemo-rl.algorithms.grpo.create-advantage-estimator.opd-recommends-icepop-truncation",
    )


ERROR_CHECKS = (
    non_colocated_teachers_need_async_rollouts,
    teachers_need_a_megatron_student,
    teachers_fit_on_one_node,
)
WARNING_CHECKS = (
    opd_recommends_no_ppo_ratio,
    opd_recommends_importance_sampling,
    opd_recommends_icepop,
)
