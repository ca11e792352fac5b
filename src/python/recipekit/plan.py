"""recipe -> plan: overrides applied, values derived, everything checked, content hashed.

``make_plan`` is the single way from a Stage to what runs. It either returns a Plan whose
``framework_config`` is exactly what the framework will read, or raises a RecipeError listing
every problem found, each at its key path.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

import attrs

from recipekit.errors import Issue, RecipeError, join_path
from recipekit.framework import FrameworkCall, Layout
from recipekit.job_rules import plan_rules
from recipekit.keypaths import parse_assignment, replace_at
from recipekit.launch.placement import plan_placement
from recipekit.lineage.checkpoint_stamp import CheckpointStamp, reads_verdict
from recipekit.lineage.graph import Pipeline, apply_overrides, is_lineage_override
from recipekit.lineage.steps import (
    UNCHECKED,
    PolicyOf,
    SavePolicy,
    Unchecked,
    keep_step_issues,
    lineage_pin_issues,
)
from recipekit.lineage.store import output_dir, run_name, stored_artifact
from recipekit.markers import DERIVED, RunInput
from recipekit.memory.estimate import MemoryEstimate
from recipekit.memory.switches import worker_environment
from recipekit.model_card import ModelCard
from recipekit.stage import Stage


@attrs.frozen(kw_only=True)
class Plan:
    stage: Stage
    overrides: tuple[str, ...]
    derived: tuple[str, ...]
    layout: Layout
    warnings: tuple[Issue, ...]
    framework_config: dict[str, Any]
    hash: str
    # Keys that hold the path of an input artifact, and which artifact (``explain`` shows it).
    run_inputs: dict[str, str] = attrs.field(factory=dict)
    # Per-GPU memory of each phase; None where the framework or the model card has none.
    memory: MemoryEstimate | None = None
    # What a pipeline records of this run in the versions it publishes (its action key, the
    # recipe's plan hash, the exact input versions: ``pipeline.actions``); never hashed.
    action: dict[str, Any] = attrs.field(factory=dict)

    @property
    def config(self) -> Any:
        """The derived typed config: what every hook but ``arguments`` reads."""
        return self.stage.config

    def as_json(self) -> dict[str, Any]:
        out = self._as_json()
        # GB200: the groups kept inside one NVLink domain and the --segment that asks Slurm to
        # (launch.placement); the job script and preflight read it from here.
        placement = plan_placement(out, self.stage.hardware.node.nvlink_domain_nodes)
        if placement is not None:
            found = placement if isinstance(placement, str) else placement.as_json()
            out = {**out, "placement": {"unplaced": found} if isinstance(found, str) else found}
        return out

    def _as_json(self) -> dict[str, Any]:
        stage, hw = self.stage, self.stage.hardware
        return {
            "stage": stage.name,
            "description": stage.description,
            "framework": {
                "name": stage.framework.name,
                "version": stage.framework.version,
                "entry_point": stage.framework.entry_point,
                "arguments": stage.framework.arguments(self.framework_config),
                "launch": stage.framework.launch,
                "image": stage.framework.image,
            },
            "hardware": {
                "node": hw.node.name,
                "num_nodes": hw.num_nodes,
                "gpus_per_node": hw.gpus_per_node,
                "gpu": hw.node.gpu.model,
                "hbm_gib": hw.node.gpu.hbm_gib,
                "cpu_arch": hw.node.cpu_arch.value,
                "interconnect": hw.node.interconnect.value,
                "needs_imex_channel": hw.node.needs_imex_channel,
            },
            "model": stage.model.name,
            "layout": self.layout.as_json(),
            "inputs": stage.framework.inputs(self.config),
            "outputs": stage.framework.outputs(self.config),
            **self._checkpoint_reads(),
            **({"lineage": stage.lineage.as_json()} if stage.lineage is not None else {}),
            **({"environment": dict(stage.environment)} if stage.environment else {}),
            **({"code": [c.as_json() for c in stage.code]} if stage.code else {}),
            "overrides": list(self.overrides),
            "derived": list(self.derived),
            "memory": None if self.memory is None else self.memory.as_json(),
            "warnings": [w.as_json() for w in self.warnings],
            "config": self.framework_config,
            "hash": self.hash,
            **({"action": self.action} if self.action else {}),
        }

    def published_run(self) -> tuple[str, str] | None:
        """(artifact, run) when the run writes its checkpoints into the artifact store: its
        first output, as ``store_output`` reads it from ``plan.json`` on a node."""
        outputs = list(self.stage.framework.outputs(self.config).values())
        artifact = stored_artifact(str(outputs[0])) if outputs else None
        return None if artifact is None else (artifact, run_name(self.stage.name, self.hash))

    def framework_call(self) -> FrameworkCall:
        framework = self.stage.framework
        return FrameworkCall(
            entry_point=framework.entry_point,
            arguments=tuple(framework.arguments(self.framework_config)),
            image=framework.image,
            run=run_name(self.stage.name, self.hash),
        )

    def _checkpoint_reads(self) -> dict[str, Any]:
        reads = self.stage.framework.checkpoint_reads(self.config)
        return {"checkpoints": reads.as_json()} if reads.resumes or reads.starts else {}


def config_type_issue(stage: Stage) -> Issue | None:
    """The stage's config is not what its framework reads (a recipe that names the wrong one)."""
    expected = stage.framework.config_type
    if isinstance(stage.config, expected):
        return None
    return Issue(
        "config",
        f"is a {type(stage.config).__name__}, but {stage.framework.name} "
        f"({stage.framework.entry_point}) reads a {expected.__name__}",
        hint="set the stage's framework= to the one that reads this config",
    )


def _placeholder_card(model: ModelCard) -> Issue:
    return Issue(
        "model",
        f"{model.name}'s card records no layer count: the layout is not checked against the "
        "model's layers, experts and heads, and its memory is not estimated",
        hint="fill in the stage's ModelCard (num_layers, num_experts, ...), or use one of "
        "recipekit.model_card's",
    )


def make_plan(stage: Stage, overrides: Sequence[str] = (), *, check_pins: bool = True) -> Plan:
    """``check_pins``: check the inputs against the stage's pipeline (known artifacts, steps
    their producers save), planning each producer; ``pipeline plan``, which plans them anyway,
    checks the whole chain itself."""
    config = stage.config
    mismatch = config_type_issue(stage)
    if mismatch is not None:
        raise RecipeError([mismatch], context=f"{stage.name}: cannot plan")
    problems: list[Issue] = []
    # `run.model=...` pins an input artifact; everything else is a framework key.
    pins = [a for a in overrides if is_lineage_override(a)]
    if pins:
        if stage.lineage is None:
            problems += [Issue(a.partition("=")[0], "this stage declares no lineage") for a in pins]
        else:
            try:
                stage = attrs.evolve(stage, lineage=apply_overrides(stage.lineage, pins))
            except RecipeError as exc:
                problems += exc.issues
    for assignment in (a for a in overrides if not is_lineage_override(a)):
        try:
            path, value = parse_assignment(config, assignment)
            config = replace_at(config, path, value)
        except RecipeError as exc:
            problems += exc.issues
    if problems:
        raise RecipeError(problems, context=f"{stage.name}: --set")

    framework = stage.framework
    config, run_inputs = resolve_run_inputs(attrs.evolve(stage, config=config))
    config, derived = framework.derive(config, stage.hardware)
    layout, errors, warnings = framework.check(config, stage.hardware, stage.model)
    errors += underived_keys(config)
    if errors:
        raise RecipeError(errors, context=f"{stage.name}: cannot plan")
    rendered = framework.render(config)
    errors, job_warnings = plan_rules(_run_paths(stage, config, rendered), stage.environment)
    if errors:
        raise RecipeError(errors, context=f"{stage.name}: cannot plan")
    warnings += job_warnings
    if stage.model.is_placeholder:
        warnings.append(_placeholder_card(stage.model))
    # The workers inherit the stage's environment (its PYTORCH_CUDA_ALLOC_CONF, say).
    with worker_environment(stage.environment):
        memory = framework.memory(config, stage.hardware, stage.model, layout)
    if memory is not None:
        too_big, tight = memory.issues()
        if too_big:
            raise RecipeError(too_big, context=f"{stage.name}: cannot plan")
        warnings += tight
    lineage = stage.lineage
    misplaced = _output_issue(stage, framework.outputs(config))
    if misplaced is not None:
        raise RecipeError([misplaced], context=f"{stage.name}: cannot plan")
    if lineage is not None and lineage.keep_steps and lineage.output is not None:
        policy = framework.save_policy(config)
        errors = keep_step_issues(stage.name, lineage.output, lineage.keep_steps, policy)
        if errors:
            raise RecipeError(errors, context=f"{stage.name}: cannot plan")
    if check_pins and lineage is not None and lineage.pipeline is not None:
        errors = lineage_pin_issues(lineage, recipe_policies(lineage.pipeline))
        if errors:
            raise RecipeError(errors, context=f"{stage.name}: cannot plan")
    planned = attrs.evolve(stage, config=config)
    plan_hash = content_hash(planned, rendered)
    # Checkpoints this machine can see are checked now; the job's preflight checks them all.
    resumed = reads_verdict(
        framework.checkpoint_reads(config),
        CheckpointStamp(
            model=stage.model.name, layout=layout.as_json(), stage=stage.name, plan_hash=plan_hash
        ),
        reshard=lineage is not None and lineage.reshard,
        run=run_name(stage.name, plan_hash),
        visible_only=True,
    )
    if resumed.errors:
        raise RecipeError(list(resumed.errors), context=f"{stage.name}: cannot plan")
    warnings += resumed.notes
    return Plan(
        stage=planned,
        overrides=tuple(overrides),
        derived=tuple(derived),
        layout=layout,
        warnings=tuple(warnings),
        framework_config=rendered,
        hash=plan_hash,
        run_inputs=run_inputs,
        memory=memory,
    )


def _run_paths(stage: Stage, config: Any, rendered: dict[str, Any]) -> dict[str, Any]:
    """What ``job_rules`` reads of a plan, before the plan is made (``Plan.as_json``'s keys)."""
    framework = stage.framework
    return {
        "framework": {"name": framework.name, "launch": framework.launch},
        "hardware": {"num_nodes": stage.hardware.num_nodes},
        "inputs": framework.inputs(config),
        "outputs": framework.outputs(config),
        "checkpoints": framework.checkpoint_reads(config).as_json(),
        "config": rendered,
    }


def save_policy(plan: Plan) -> SavePolicy | None:
    """When the planned stage saves checkpoints, from its derived config."""
    return plan.stage.framework.save_policy(plan.config)


def recipe_policies(pipeline: Pipeline) -> PolicyOf:
    """A producing stage's save policy, from its recipe (found beside the pipeline's module)."""
    from recipekit.producers import producer_stage

    def policy_of(name: str) -> SavePolicy | None | Unchecked:
        producer = producer_stage(pipeline, name)
        if producer is None:
            return UNCHECKED
        # Only what the save policy reads: the producer's derived config (its checks, memory
        # and hash are its own plan's, reported where it is planned).
        try:
            stage = attrs.evolve(producer, lineage=pipeline.stage(name))
            config, _ = resolve_run_inputs(stage)
            config, _ = stage.framework.derive(config, stage.hardware)
            return stage.framework.save_policy(config)
        except RecipeError:
            return UNCHECKED  # its own errors are reported where it is planned

    return policy_of


def _output_issue(stage: Stage, outputs: dict[str, str]) -> Issue | None:
    """A stage that writes its checkpoints into the artifact store writes them under the
    artifact its lineage publishes: otherwise its versions would land in another's name."""
    lineage = stage.lineage
    if lineage is None or lineage.output is None or not outputs:
        return None
    role, path = next(iter(outputs.items()))
    written = stored_artifact(str(path))
    if written is None or written == lineage.output:
        return None
    return Issue(
        f"outputs.{role}",
        f"writes to the store as {written}, but the stage's lineage publishes {lineage.output}",
        value=str(path),
        hint=f"write to {output_dir(lineage.output)} (recipekit.lineage.store.output_dir)",
    )


def resolve_run_inputs(stage: Stage) -> tuple[Any, dict[str, str]]:
    """``stage.config`` with every ``RunInput`` replaced by the path of that input artifact,
    and the keys replaced (key -> artifact reference)."""
    paths = stage.lineage.artifact_paths() if stage.lineage is not None else {}
    refs = stage.lineage.artifact_inputs() if stage.lineage is not None else {}
    found: dict[str, str] = {}
    problems: list[Issue] = []

    def walk(value: Any, path: str) -> Any:
        if isinstance(value, RunInput):
            where = paths.get(f"run.{value.role}")
            if where is None:
                declared = ", ".join(sorted(refs)) or "none"
                problems.append(
                    Issue(
                        path,
                        f"reads input artifact run.{value.role}, which the stage's lineage does "
                        f"not declare (artifact inputs: {declared})",
                        value=str(value),
                    )
                )
                return value
            found[path] = str(refs[value.role])
            return value.resolve(where)
        if attrs.has(type(value)):
            from recipekit.sections import key_of

            changes = {}
            for field in attrs.fields(type(value)):
                item = getattr(value, field.name)
                new = walk(item, join_path(path, key_of(type(value), field.name)))
                if new is not item:
                    changes[field.name] = new
            return attrs.evolve(value, **changes) if changes else value
        if isinstance(value, dict):
            items = {k: walk(v, join_path(path, str(k))) for k, v in value.items()}
            changed = any(items[k] is not v for k, v in value.items())
            return items if changed else value
        if isinstance(value, tuple):
            parts = tuple(walk(v, f"{path}[{i}]") for i, v in enumerate(value))
            return parts if any(a is not b for a, b in zip(parts, value, strict=True)) else value
        return value

    config = walk(stage.config, "")
    if problems:
        raise RecipeError(problems, context=f"{stage.name}: cannot plan")
    return config, found


def content_hash(stage: Stage, rendered: dict[str, Any]) -> str:
    """sha256 over what decides the run (``plan_identity``)."""
    identity = plan_identity(stage, rendered)
    blob = json.dumps(identity, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def plan_identity(stage: Stage, rendered: dict[str, Any]) -> dict[str, Any]:
    """What decides the run: the framework (and how it is launched, with which arguments), the
    hardware, the model, the exact config and, for a stage in a pipeline, the input artifacts
    it is pinned to. A pipeline records it with a version, to say later which keys changed."""
    hw = stage.hardware
    identity: dict[str, Any] = {
        "framework": [
            stage.framework.name,
            stage.framework.version,
            stage.framework.entry_point,
            stage.framework.launch,
            stage.framework.arguments(rendered),
        ],
        "hardware": [hw.node.name, hw.num_nodes, hw.gpus_per_node, hw.node.cpu_arch.value],
        "model": stage.model.name,
        "config": rendered,
    }
    if stage.lineage is not None:
        identity["lineage"] = stage.lineage.as_json()
    if stage.environment:
        identity["environment"] = dict(stage.environment)
    if stage.code:
        identity["code"] = [c.as_json() for c in stage.code]
    return identity


def underived_keys(config: Any, path: str = "") -> list[Issue]:
    """Keys still DERIVED after derivation: their source is unset, so they need a value."""
    out: list[Issue] = []
    if attrs.has(type(config)):
        from recipekit.sections import key_of

        for field in attrs.fields(type(config)):
            value = getattr(config, field.name)
            sub = (
                f"{path}.{key_of(type(config), field.name)}"
                if path
                else key_of(type(config), field.name)
            )
            if value is DERIVED:
                out.append(Issue(sub, "derived from a key that is not set; give it a value"))
            else:
                out += underived_keys(value, sub)
    elif isinstance(config, dict):
        for k, v in config.items():
            out += underived_keys(v, f"{path}.{k}")
    return out
