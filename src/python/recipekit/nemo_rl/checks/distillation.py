"""On-policy distillation (MOPD): the teachers are routed and fit their nodes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from recipekit.errors import Issue, did_you_mean
from recipekit.markers import UNSET, is_set
from recipekit.nemo_rl.checks.context import (
    CheckContext,
)
from recipekit.nemo_rl.keys import value_of
from recipekit.parallelism import ParallelKeys, model_layout_issues

if TYPE_CHECKING:
    # Main's schema is imported by the stages that run main, not by every NeMo-RL plan.
    from recipekit.nemo_rl.schema_main import NonColocatedTeachers, OnPolicyDistillation

OPD = "on_policy_distillation"
# A teacher's log-probability workers: Megatron-Core, with the sizes TeacherResourceConfig has.
TEACHER = ParallelKeys(
    f"{OPD}.non_colocated_teachers.default_teacher_cfg",
    vpp=None,
    etp=None,
    sp=None,
    first_stage_layers=None,
    last_stage_layers=None,
)


def _section(value: Any) -> Any:
    """A sub-section that is set (``is_set``), else None."""
    return value if is_set(value) else None


def distillation(ctx: CheckContext) -> OnPolicyDistillation | None:
    """The on-policy distillation section when it is on (a key of main's schema only)."""
    opd = _section(value_of(ctx.config, "on_policy_distillation"))
    return opd if opd is not None and opd.enabled is True else None


def non_colocated_teachers(ctx: CheckContext) -> NonColocatedTeachers | None:
    """opd.py, is_non_colocated_teachers_enabled: distillation is on and its teachers have GPUs of
    their own."""
    opd = distillation(ctx)
    teachers = None if opd is None else _section(opd.non_colocated_teachers)
    return teachers if teachers is not None and teachers.enabled is True else None


def default_teacher_is_routed(ctx: CheckContext) -> Iterator[Issue]:
    opd = distillation(ctx)
    if opd is None or not isinstance(opd.teacher_model_by_agent_name, dict):
        return
    alias, routes = opd.default_teacher_alias, opd.teacher_model_by_agent_name
    if isinstance(alias, str) and alias not in routes:
        yield Issue(
            f"{OPD}.default_teacher_alias",
            "prompts no teacher owns go to this agent's teacher, but no teacher is routed "
            "for it in teacher_model_by_agent_name",
            value=alias,
            hint=did_you_mean(alias, list(routes)),
        )


def distillation_teachers_fit(ctx: CheckContext) -> Iterator[Issue]:
    teachers = non_colocated_teachers(ctx)
    cfg = None if teachers is None else _section(teachers.default_teacher_cfg)
    if cfg is None:
        return
    key = f"{OPD}.non_colocated_teachers.default_teacher_cfg"
    hw, nodes = ctx.hardware, ctx.layout.nodes

    def size(value: object) -> int:
        return value if isinstance(value, int) else 1

    per_node = size(cfg.gpus_per_node) if cfg.gpus_per_node is not UNSET else hw.gpus_per_node
    if per_node != hw.gpus_per_node:
        yield Issue(
            f"{key}.gpus_per_node",
            f"a {hw.node.name} node has {hw.gpus_per_node} GPUs",
            value=cfg.gpus_per_node,
        )
    gpus = size(cfg.num_nodes) * per_node
    yield from model_layout_issues(
        TEACHER.read(cfg, gpus),
        TEACHER,
        hw.node,
        ctx.model,
        f"a teacher's {size(cfg.num_nodes)} x {per_node} = {gpus} GPUs",
    )
    if nodes.training_nodes < 1:
        yield Issue(
            f"{key}.num_nodes",
            f"{nodes.teachers} teachers x {size(cfg.num_nodes)} nodes and "
            f"{nodes.generation_nodes} generation nodes leave no training node of the "
            f"{hw.num_nodes}",
            value=cfg.num_nodes,
            hint="add nodes to the stage's hardware",
        )
