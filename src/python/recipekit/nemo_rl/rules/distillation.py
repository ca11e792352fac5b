"""On-policy distillation (``grpo.adv_estimator.name: opd``, super-v3.5-posttraining): where the
teachers run and the loss settings the MOPD recipe recommends."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from recipekit.errors import Issue, did_you_mean
from recipekit.markers import Marker, given_at, is_set
from recipekit.nemo_rl import SUPER35_TYPES
from recipekit.nemo_rl.checks import CheckContext
from recipekit.nemo_rl.checks.distillation import non_colocated_teachers
from recipekit.nemo_rl.keys import value_of
from recipekit.nemo_rl.rules.async_grpo import async_rollouts
from recipekit.nemo_rl.rules.citation import cite, mirrors
from recipekit.upstream.declared import declared
from recipekit.upstream.values import expected_type, plain

TEACHERS = "on_policy_distillation.non_colocated_teachers"
# The class each teacher's settings are read into, and the Megatron settings its extra keys and
# megatron_cfg_overrides become (opd.py; teacher_worker_group.py, TeacherWorkerGroup.__init__).
TEACHER_CLASS = "nemo_rl.algorithms.opd:TeacherResourceConfig"
MEGATRON_CLASS = "nemo_rl.models.policy:MegatronConfig"


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


def _teacher_settings(ctx: CheckContext) -> Iterator[tuple[str, Any]]:
    """(key, settings) of the default teacher and of each per-alias override."""
    teachers = non_colocated_teachers(ctx)
    if teachers is None:
        return
    if is_set(teachers.default_teacher_cfg):
        yield f"{TEACHERS}.default_teacher_cfg", teachers.default_teacher_cfg
    overrides = teachers.teacher_overrides
    for alias, cfg in (overrides if isinstance(overrides, dict) else {}).items():
        yield f"{TEACHERS}.teacher_overrides.{alias}", cfg


@mirrors(v35="nemo-rl.algorithms.grpo.setup.each-opd-teacher-fits-one-node")
def teachers_fit_on_one_node(ctx: CheckContext) -> Iterator[Issue]:
    """grpo.py, setup: each teacher's placement group lies on one node, the default teacher's
    and every override's (the default's layout is checks.distillation_teachers_fit's)."""
    per_node = ctx.hardware.gpus_per_node
    for where, cfg in _teacher_settings(ctx):
        gpus = value_of(cfg, "gpus_per_node")
        if isinstance(gpus, int) and gpus > per_node:
            yield Issue(
                f"{where}.gpus_per_node",
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


def teacher_precision_is_the_policys(ctx: CheckContext) -> Iterator[Issue]:
    """A warning: TeacherWorkerGroup.__init__ builds a teacher's config from the policy's, and
    nothing reads TeacherConfig.precision, so a teacher runs at policy.precision whatever its own
    says."""
    policy = ctx.config.policy.precision
    # The policy's dtype in either spelling (bfloat16 or bf16).
    same = {policy, str(policy).replace("bfloat", "bf").replace("float", "fp")}
    for where, cfg in _teacher_settings(ctx):
        precision = given_at(cfg, "precision")
        if isinstance(precision, str) and precision not in same:
            yield Issue(
                f"{where}.precision",
                f"NeMo-RL stores a teacher's precision and never reads it: the teacher runs at "
                f"policy.precision ({policy}), as TeacherWorkerGroup builds its config from the "
                "policy's",
                value=precision,
                hint=f"set it {policy}, or remove it",
            )


def teacher_megatron_overrides(ctx: CheckContext) -> Iterator[Issue]:
    """TeacherWorkerGroup.__init__ writes each megatron_cfg_overrides key into the teacher's
    megatron_cfg after its own layout: an error where the value is not of the type
    MegatronConfig declares for the key (Megatron's setup reads it so)."""
    megatron = declared(SUPER35_TYPES, MEGATRON_CLASS).keys
    for where, cfg in _teacher_settings(ctx):
        overrides = given_at(cfg, "megatron_cfg_overrides")
        for key, value in (overrides if isinstance(overrides, dict) else {}).items():
            spec = megatron.get(key)
            expected = "" if spec is None else expected_type(plain(value), spec.type_text)
            if expected:
                yield Issue(
                    f"{where}.megatron_cfg_overrides.{key}",
                    f"the teacher's Megatron settings take {expected} here ({MEGATRON_CLASS} "
                    f"@ {SUPER35_TYPES})",
                    value=value,
                )


def teacher_megatron_overrides_take_effect(ctx: CheckContext) -> Iterator[Issue]:
    """Warnings: a megatron_cfg_overrides key that NeMo-RL's MegatronConfig does not declare is
    written into the teacher's megatron_cfg and read by nothing; one that names a layout size
    of the teacher's own replaces it after NeMo-RL sets it, while the teacher's GPUs are
    planned from the teacher's own (opd.py)."""
    megatron = declared(SUPER35_TYPES, MEGATRON_CLASS).keys
    own = declared(SUPER35_TYPES, TEACHER_CLASS).keys
    for where, cfg in _teacher_settings(ctx):
        overrides = given_at(cfg, "megatron_cfg_overrides")
        for key in overrides if isinstance(overrides, dict) else {}:
            path = f"{where}.megatron_cfg_overrides.{key}"
            if key in own and key in megatron:
                stated = given_at(cfg, key)
                shown = "its default" if stated is None else stated
                yield Issue(
                    path,
                    f"replaces the teacher's own {key} ({shown}) after NeMo-RL sets it from "
                    "that key, which the teacher's GPUs are planned from",
                    value=overrides[key],
                    hint=f"set {where}.{key} instead",
                )
            elif key not in megatron:
                yield Issue(
                    path,
                    f"not a key of NeMo-RL's MegatronConfig ({MEGATRON_CLASS} @ "
                    f"{SUPER35_TYPES}): written into the teacher's megatron_cfg and read by "
                    "nothing",
                    hint=did_you_mean(str(key), megatron),
                )


ERROR_CHECKS = (
    teacher_megatron_overrides,
    non_colocated_teachers_need_async_rollouts,
    teachers_need_a_megatron_student,
    teachers_fit_on_one_node,
)
WARNING_CHECKS = (
    teacher_precision_is_the_policys,
    teacher_megatron_overrides_take_effect,
    opd_recommends_no_ppo_ratio,
    opd_recommends_importance_sampling,
    opd_recommends_icepop,
)
