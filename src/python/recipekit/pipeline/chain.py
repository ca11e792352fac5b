"""A chain of stages: a recipe folder's pipeline lineage joined with its stages, planned in order.

A recipe folder (``recipes/super35``) holds one :class:`~recipekit.lineage.graph.Pipeline` (who
reads and publishes which artifact) and the :class:`~recipekit.stage.Stage` values that run its
stages. :func:`load_chain` finds both; :func:`plan_chain` plans every stage between ``--from``
and ``--until`` in dependency order and checks what no single stage's plan can: that every
selected step a stage pins (``super35-rl-rlvr-model:step-120``) is one its producer saves.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

import attrs

from recipekit.errors import Issue, RecipeError, did_you_mean
from recipekit.lineage.graph import Pipeline, StageLineage
from recipekit.lineage.refs import artifact_path
from recipekit.lineage.steps import UNCHECKED, SavePolicy, Unchecked, lineage_pin_issues
from recipekit.loading import load_module
from recipekit.plan import Plan, make_plan, save_policy
from recipekit.review.discover import recipe_modules
from recipekit.stage import Stage


@attrs.frozen
class ChainStage:
    """One stage of the pipeline: its lineage and, when a recipe defines it, its Stage."""

    lineage: StageLineage
    stage: Stage | None
    # ``module:attr`` of the Stage ("" for a step with no recipe, such as a conversion).
    target: str = ""


@attrs.frozen
class Chain:
    pipeline: Pipeline
    stages: dict[str, ChainStage]

    def order(self) -> list[str]:
        return self.pipeline.order()

    def between(self, start: str | None, until: str | None) -> list[str]:
        """Stages in order: ``until`` and what it needs, from ``start`` and what needs it."""
        order = self.order()
        issues = [
            Issue(
                flag,
                f"{self.pipeline.name} has no stage {name!r}",
                hint=did_you_mean(name, order),
            )
            for flag, name in (("--from", start), ("--until", until))
            if name is not None and name not in order
        ]
        if issues:
            raise RecipeError(issues, context=f"pipeline {self.pipeline.name}")
        chosen = set(order)
        if until is not None:
            chosen &= self._upstream(until)
        if start is not None:
            chosen &= self._downstream(start)
        if not chosen:
            raise RecipeError(
                [Issue("--from", f"{until} does not depend on {start}", value=str(start))],
                context=f"pipeline {self.pipeline.name}",
            )
        return [name for name in order if name in chosen]

    def _needs(self, name: str) -> set[str]:
        producers = self.pipeline.producers()
        refs = self.stages[name].lineage.artifact_inputs().values()
        return {producers[ref.name] for ref in refs if ref.name in producers}

    def _upstream(self, name: str) -> set[str]:
        found, todo = {name}, [name]
        while todo:
            for needed in self._needs(todo.pop()):
                if needed not in found:
                    found.add(needed)
                    todo.append(needed)
        return found

    def _downstream(self, name: str) -> set[str]:
        return {other for other in self.order() if name in self._upstream(other)}


def load_chain(folder: Path, root: Path) -> Chain:
    """The pipeline and stages defined by the recipe modules under ``root/folder`` (a recipe
    folder such as ``recipes/super35``), or by one recipe file (``FILE.py``)."""
    root = root.resolve()
    folder = (root / folder).resolve()
    if folder.suffix == ".py":
        modules = [str(folder)]
    else:
        modules = [
            name
            for name, path in recipe_modules(root)
            if folder in (root / path).resolve().parents
        ]
    if not modules:
        raise RecipeError([Issue(str(folder), "holds no recipe module")])
    pipelines: list[tuple[str, Pipeline]] = []
    stages: dict[str, list[tuple[str, Stage]]] = {}
    for module_name in modules:
        module = load_module(module_name)
        # Within a module the last Stage of a lineage stage wins: a module that imports a recipe
        # stage and then defines its own variant of it means the variant.
        own: dict[str, tuple[str, Stage]] = {}
        for attr, value in vars(module).items():
            if isinstance(value, Pipeline) and all(p is not value for _, p in pipelines):
                pipelines.append((f"{module_name}:{attr}", value))
            elif isinstance(value, Stage) and value.lineage is not None:
                own[value.lineage.stage] = (f"{module_name}:{attr}", value)
        for name, (target, value) in own.items():
            defined = stages.setdefault(name, [])
            if all(s is not value for _, s in defined):
                defined.append((target, value))
    if len(pipelines) != 1:
        found = ", ".join(target for target, _ in pipelines) or "none"
        raise RecipeError(
            [Issue(str(folder), f"needs exactly one Pipeline among its recipes; found {found}")]
        )
    pipeline = pipelines[0][1]
    chain: dict[str, ChainStage] = {}
    for step in pipeline.steps():
        defined = [(t, s) for t, s in stages.get(step.stage, []) if s.name == step.stage]
        if len(defined) > 1:
            names = ", ".join(t for t, _ in defined)
            raise RecipeError([Issue(step.stage, f"defined by more than one Stage: {names}")])
        target, stage = defined[0] if defined else ("", None)
        chain[step.stage] = ChainStage(pipeline.stage(step.stage), stage, target)
    return Chain(pipeline, chain)


@attrs.frozen
class PlannedStage:
    name: str
    lineage: StageLineage
    plan: Plan | None
    target: str

    def as_json(self) -> dict[str, Any]:
        lineage = self.lineage
        out: dict[str, Any] = {
            "stage": self.name,
            "target": self.target,
            "inputs": {
                role: {"ref": str(ref), "path": artifact_path(ref)}
                for role, ref in lineage.artifact_inputs().items()
            },
            "output": lineage.output,
            "keep_steps": list(lineage.keep_steps),
            "blocked": lineage.blocked,
        }
        if self.plan is not None:
            hw = self.plan.stage.hardware
            out["hash"] = self.plan.hash
            out["hardware"] = {"node": hw.node.name, "num_nodes": hw.num_nodes}
            out["launch"] = self.plan.stage.framework.launch
        return out


def stage_overrides(chain: Chain, assignments: Sequence[str]) -> dict[str, list[str]]:
    """``STAGE:KEY=VALUE`` (``--set rlvr:grpo.max_num_steps=100``, ``--set
    teacher-vision:run.model=super35-rl-rlvr-model:step-130``) by stage."""
    by_stage: dict[str, list[str]] = {}
    issues = []
    for assignment in assignments:
        stage, sep, rest = assignment.partition(":")
        if not sep or "=" in stage:
            issues.append(Issue(assignment, "a pipeline override is STAGE:KEY=VALUE"))
        elif stage not in chain.stages:
            hint = did_you_mean(stage, chain.stages)
            issues.append(Issue(assignment, f"no stage {stage!r} in the pipeline", hint=hint))
        else:
            by_stage.setdefault(stage, []).append(rest)
    if issues:
        raise RecipeError(issues, context=f"pipeline {chain.pipeline.name}: --set")
    return by_stage


def plan_chain(
    chain: Chain,
    names: Sequence[str],
    overrides: Sequence[str] = (),
    *,
    stored: Collection[str] | None = None,
) -> list[PlannedStage]:
    """Plan ``names`` (in order) and check every input against the pipeline (``stored``: the
    artifact names the store holds, None without a store) and every selected step against its
    producer; raises one RecipeError listing every problem of every stage."""
    by_stage = stage_overrides(chain, overrides)
    planned: list[PlannedStage] = []
    issues: list[Issue] = []
    for name in names:
        entry = chain.stages[name]
        plan, lineage = None, entry.lineage
        if entry.stage is not None:
            try:
                stage = attrs.evolve(entry.stage, lineage=entry.lineage)
                plan = make_plan(stage, by_stage.get(name, ()), check_pins=False)
                lineage = plan.stage.lineage or lineage
            except RecipeError as exc:
                issues += [attrs.evolve(i, path=f"{name}: {i.path}") for i in exc.issues]
        planned.append(PlannedStage(name, lineage, plan, entry.target))
    issues += _pin_issues(chain, planned, stored)
    if issues:
        raise RecipeError(issues, context=f"pipeline {chain.pipeline.name}: cannot plan")
    return planned


def _pin_issues(
    chain: Chain, planned: Sequence[PlannedStage], stored: Collection[str] | None
) -> list[Issue]:
    """Every input of a planned stage against the pipeline, and every pinned step against the
    recipe of the stage that saves it (the plans made here, or planned for the check)."""
    plans = {p.name: p.plan for p in planned}

    def policy_of(producer: str) -> SavePolicy | None | Unchecked:
        entry = chain.stages[producer]
        if entry.stage is None:
            return UNCHECKED  # a conversion with no recipe yet: nothing to check it against
        plan = plans.get(producer)
        if plan is None:
            try:
                plan = make_plan(attrs.evolve(entry.stage, lineage=entry.lineage), check_pins=False)
            except RecipeError:
                return UNCHECKED  # its own errors are reported where it is planned
            plans[producer] = plan
        return save_policy(plan)

    issues: list[Issue] = []
    for consumer in planned:
        lineage = attrs.evolve(consumer.lineage, pipeline=chain.pipeline)
        issues += lineage_pin_issues(lineage, policy_of, stored=stored)
    return issues
