"""Stage lineage (what a stage reads, by role, and what it publishes) and a pipeline of them.

Roles are the recipe's ``run.*`` keys: ``model`` (the starting checkpoint), ``data``, and one
``teacher_<name>`` per MOPD teacher. A :class:`Pipeline` refuses, when it is built, an input
that no stage produces and no import registers, two producers of one artifact, and a cycle.
"""

from __future__ import annotations

import graphlib
import re
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import attrs

from recipekit.errors import FieldError, Issue, RecipeError, did_you_mean
from recipekit.lineage.refs import (
    ArtifactRef,
    ExternalInput,
    InputSource,
    artifact_name_problem,
    artifact_path,
    parse_ref,
)

MODEL = "model"
DATA = "data"
TEACHER_PREFIX = "teacher_"
_TEACHER = re.compile(r"teacher_[a-z][a-z0-9_]*[a-z0-9]")  # matched whole (fullmatch)
OVERRIDE_PREFIX = "run."
# ``run.reshard=true``: resume a checkpoint saved under another layout (lineage.checkpoint_stamp).
RESHARD = "reshard"


def role_problem(role: str) -> str:
    if role in (MODEL, DATA) or _TEACHER.fullmatch(role):
        return ""
    if role.startswith(TEACHER_PREFIX):
        return "a teacher role is teacher_<name>, the name in lower case letters, digits and '_'"
    return "a role is 'model', 'data' or 'teacher_<name>'"


def _check_inputs(instance: Any, _: Any, value: Mapping[str, InputSource]) -> None:
    issues = []
    for role, source in value.items():
        problem = role_problem(role)
        if problem:
            hint = did_you_mean(role, [MODEL, DATA])
            issues.append(Issue(f"run.{role}", problem, hint=hint))
        if not isinstance(source, ArtifactRef | ExternalInput):
            issues.append(Issue(f"run.{role}", "an input is an ArtifactRef or an ExternalInput"))
    if issues:
        raise RecipeError(issues, context=f"{instance.stage}: lineage")


def _inputs(value: Mapping[str, InputSource]) -> dict[str, InputSource]:
    return dict(value)


def _check_output(_: Any, __: Any, value: str | None) -> None:
    problem = "" if value is None else artifact_name_problem(value)
    if problem:
        raise FieldError(problem, value)


@attrs.frozen(kw_only=True)
class StageLineage:
    """One stage's inputs by role and the artifact it publishes (None: it publishes none)."""

    stage: str
    inputs: Mapping[str, InputSource] = attrs.field(converter=_inputs, validator=_check_inputs)
    output: str | None = attrs.field(validator=_check_output)
    # What the output is when it is not an artifact ("Evaluation results").
    output_note: str = ""
    # The recipe's command for this stage (``super35 rl teacher rlhf -c teacher1_stage1``).
    command: str = ""
    # Why the stage cannot be launched; "" when it can. Blocked stages still plan and render.
    blocked: str = ""
    # Steps of the output that later stages pin (``Pipeline.stage`` fills it in): the artifact
    # store keeps them whatever the framework's keep policy.
    keep_steps: tuple[int, ...] = ()
    # What format an input arrives in and who converts it, where it is not the format the
    # framework saves (SFT's Megatron checkpoint read by NeMo-RL): shown in the plan.
    handoff: str = ""
    # The pipeline the stage belongs to (``Pipeline.stage`` fills it in): a stage planned on its
    # own checks its pins against the stages that produce them. Never part of its identity.
    pipeline: Pipeline | None = attrs.field(default=None, eq=False, repr=False)
    # The user's leave to resume a checkpoint saved under another parallel layout
    # (``--set run.reshard=true``); the plan says what is resharded.
    reshard: bool = False

    @property
    def teachers(self) -> dict[str, InputSource]:
        """``teacher_<name>`` inputs by teacher name."""
        n = len(TEACHER_PREFIX)
        return {r[n:]: s for r, s in self.inputs.items() if r.startswith(TEACHER_PREFIX)}

    def artifact_inputs(self) -> dict[str, ArtifactRef]:
        return {r: s for r, s in self.inputs.items() if isinstance(s, ArtifactRef)}

    def artifact_paths(self) -> dict[str, str]:
        """``run.<role>`` -> where the job sees that input artifact (what configs derive from)."""
        return {f"run.{r}": artifact_path(ref) for r, ref in self.artifact_inputs().items()}

    def as_json(self) -> dict[str, Any]:
        """What ``plan --format json`` carries as ``lineage``."""
        out: dict[str, Any] = {
            "inputs": {role: str(source) for role, source in self.inputs.items()},
            "output": self.output,
        }
        if self.blocked:
            out["blocked"] = self.blocked
        if self.keep_steps:
            out["keep_steps"] = list(self.keep_steps)
        if self.handoff:
            out["handoff"] = self.handoff
        if self.reshard:
            out["reshard"] = True
        return out


def is_lineage_override(assignment: str) -> bool:
    """``run.model=...`` and the like; everything else is a framework key."""
    return assignment.strip().startswith(OVERRIDE_PREFIX)


def apply_overrides(lineage: StageLineage, assignments: Sequence[str]) -> StageLineage:
    """Apply ``run.<role>=NAME[:SELECTOR]`` assignments (``--set run.model=x-model:v3``).

    A role must be one the stage already reads: a stage's roles are part of its recipe, and a
    misspelt ``run.modle`` would otherwise add an input nothing reads. Every problem is reported
    at once, each at its ``run.<role>`` path.
    """
    inputs = dict(lineage.inputs)
    reshard = lineage.reshard
    issues: list[Issue] = []
    for assignment in assignments:
        key, sep, value = assignment.partition("=")
        key = key.strip()
        if not sep or not key.startswith(OVERRIDE_PREFIX):
            issues.append(Issue(key, "a lineage override is run.<role>=NAME[:VERSION]"))
            continue
        role = key[len(OVERRIDE_PREFIX) :]
        if role == RESHARD:
            flag = value.strip().lower()
            if flag not in ("true", "false"):
                issues.append(Issue(key, "is true or false", value=value))
            reshard = flag == "true"
            continue
        if role not in inputs:
            issues.append(
                Issue(
                    key,
                    f"{lineage.stage} has no input {role!r}",
                    hint=did_you_mean(role, [*inputs, RESHARD]),
                )
            )
            continue
        try:
            inputs[role] = parse_ref(value, path=key)
        except RecipeError as exc:
            issues += exc.issues
    if issues:
        raise RecipeError(issues, context=f"{lineage.stage}: --set")
    return attrs.evolve(lineage, inputs=inputs, reshard=reshard)


@attrs.frozen
class Import:
    """An artifact registered from outside the pipeline (``data import sft PATH --name X``)."""

    artifact: str
    command: str


def _names(value: Iterable[str]) -> tuple[str, ...]:
    return tuple(value)


@attrs.frozen
class PipelinePhase:
    """A named band of stages read as one step of the pipeline (SFT, the teachers, MOPD): the
    drawing lays each phase out as one band, in the order the pipeline lists its phases."""

    name: str
    stages: tuple[str, ...] = attrs.field(converter=_names)


def _steps(value: Iterable[StageLineage]) -> tuple[StageLineage, ...]:
    return tuple(value)


def _phases(value: Iterable[PipelinePhase]) -> tuple[PipelinePhase, ...]:
    return tuple(value)


def _imports(value: Iterable[Import]) -> tuple[Import, ...]:
    return tuple(value)


def _defining_module() -> str:
    # Called by attrs' __init__, called by the module that wrote ``Pipeline(...)``.
    return str(sys._getframe(2).f_globals.get("__name__", ""))


@attrs.frozen(kw_only=True)
class Pipeline:
    """Stages (the launchable ones), steps that are not stages (an HF export) and imports."""

    name: str
    stages: tuple[StageLineage, ...] = attrs.field(converter=_steps)
    # Producers that are not CLI stages: conversions such as the HF export eval reads.
    conversions: tuple[StageLineage, ...] = attrs.field(converter=_steps, default=())
    imports: tuple[Import, ...] = attrs.field(converter=_imports, default=())
    # The artifact version that is the released model.
    release: ArtifactRef | None = None
    # The phases in pipeline order (pretrain, SFT, ...); a stage in none is drawn unbanded.
    phases: tuple[PipelinePhase, ...] = attrs.field(converter=_phases, default=())
    # The module that built it: the recipes of its stages are that module's package's modules
    # (``recipekit.producers`` finds a producer's Stage there). Never part of its identity.
    module: str = attrs.field(factory=_defining_module, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        issues = pipeline_issues(self)
        if issues:
            raise RecipeError(issues, context=f"{self.name}: lineage")

    def steps(self) -> Iterator[StageLineage]:
        yield from self.stages
        yield from self.conversions

    def stage(self, name: str) -> StageLineage:
        """A stage's lineage, with the steps of its output that later stages pin."""
        for step in self.steps():
            if step.stage == name:
                pinned = self.selected_steps().get(step.output or "", ())
                return attrs.evolve(step, keep_steps=pinned or step.keep_steps, pipeline=self)
        raise KeyError(f"{self.name} has no stage {name!r}")

    def producers(self) -> dict[str, str]:
        """Artifact name -> the stage that publishes it."""
        return {s.output: s.stage for s in self.steps() if s.output is not None}

    def imported(self) -> dict[str, str]:
        return {i.artifact: i.command for i in self.imports}

    def artifacts(self) -> list[str]:
        """Every artifact name, produced, imported or read, sorted."""
        names = set(self.producers()) | set(self.imported())
        for step in self.steps():
            names |= {ref.name for ref in step.artifact_inputs().values()}
        return sorted(names)

    def selected_steps(self) -> dict[str, tuple[int, ...]]:
        """Artifact name -> the training steps some stage (or the release) selects from it."""
        found: dict[str, set[int]] = {}
        refs = [r for s in self.steps() for r in s.artifact_inputs().values()]
        for ref in [*refs, *([self.release] if self.release else [])]:
            if ref.step is not None:
                found.setdefault(ref.name, set()).add(ref.step)
        return {name: tuple(sorted(steps)) for name, steps in sorted(found.items())}

    def order(self) -> list[str]:
        """Stage names, every producer before its consumers (ties in declaration order)."""
        return _order(self.steps(), self.producers())

    def phase_of(self) -> dict[str, str]:
        """Stage name -> the name of its phase (stages in no phase are absent)."""
        return {stage: phase.name for phase in self.phases for stage in phase.stages}


def _order(steps: Iterable[StageLineage], producers: Mapping[str, str]) -> list[str]:
    listed = list(steps)
    sorter: graphlib.TopologicalSorter[str] = graphlib.TopologicalSorter()
    for step in listed:
        sorter.add(step.stage)
        for ref in step.artifact_inputs().values():
            if ref.name in producers:
                sorter.add(step.stage, producers[ref.name])
    position = {s.stage: i for i, s in enumerate(listed)}
    sorter.prepare()
    out: list[str] = []
    while sorter.is_active():
        ready = sorted(sorter.get_ready(), key=position.__getitem__)
        out += ready
        sorter.done(*ready)
    return out


def pipeline_issues(pipeline: Pipeline) -> list[Issue]:
    """Every problem of a pipeline's lineage (empty when it is sound)."""
    issues: list[Issue] = []
    steps = list(pipeline.steps())
    seen: set[str] = set()
    producers: dict[str, str] = {}
    for step in steps:
        if step.stage in seen:
            issues.append(Issue(step.stage, "two stages have this name"))
        seen.add(step.stage)
        if step.output is None:
            continue
        if step.output in producers:
            issues.append(
                Issue(
                    f"{step.stage}.output",
                    f"{producers[step.output]} already publishes this artifact",
                    value=step.output,
                )
            )
        producers.setdefault(step.output, step.stage)
    # An artifact may be both published and imported: ``model import sft`` registers an existing
    # checkpoint under the name the SFT stage publishes, so RL can start from it.
    imported = {i.artifact for i in pipeline.imports}
    known = set(producers) | imported
    refs = [(s.stage, role, ref) for s in steps for role, ref in s.artifact_inputs().items()]
    if pipeline.release is not None:
        refs.append(("release", "model", pipeline.release))
    for stage, role, ref in refs:
        if ref.name not in known:
            issues.append(
                Issue(
                    f"{stage}.run.{role}",
                    "no stage publishes this artifact and no import registers it",
                    value=str(ref),
                    hint=did_you_mean(ref.name, known),
                )
            )
    issues += _phase_issues(pipeline, seen)
    try:
        _order(steps, producers)
    except graphlib.CycleError as exc:
        cycle = " -> ".join(exc.args[1])
        issues.append(Issue("", f"the stages form a cycle: {cycle}"))
    return issues


def _phase_issues(pipeline: Pipeline, stages: set[str]) -> list[Issue]:
    issues: list[Issue] = []
    placed: dict[str, str] = {}
    for phase in pipeline.phases:
        for stage in phase.stages:
            if stage not in stages:
                hint = did_you_mean(stage, stages)
                issues.append(Issue(f"phases.{phase.name}", "no such stage", stage, hint))
            elif stage in placed:
                issues.append(
                    Issue(f"phases.{phase.name}", f"already in phase {placed[stage]}", stage)
                )
            placed.setdefault(stage, phase.name)
    return issues
