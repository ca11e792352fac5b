"""Selected steps: which training steps a stage saves and keeps, and whether a pin can exist.

A later stage may read one checkpoint of an earlier one by step (``super35-rl-rlvr-model:
step-120``). That version exists only if the producing stage saves a checkpoint at that step
and it is not deleted before it is published. Both are decided by the producer's recipe, so a
pin is checked against it when the pipeline is planned: a step never saved is an error naming
both stages and the setting to change. Steps the pipeline pins are kept by recipekit (the
artifact store hard-links them as they appear, ``store.publish``), whatever the framework's
keep policy.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Collection, Sequence

import attrs

from recipekit.errors import Issue, did_you_mean
from recipekit.lineage.graph import StageLineage
from recipekit.lineage.refs import ArtifactRef


@attrs.frozen(kw_only=True)
class SavePolicy:
    """When a framework saves a checkpoint, read from a rendered config."""

    every: int
    # The run's last step: it is saved as well (NeMo-RL and Megatron-Bridge both save at the end).
    last: int
    # The key paths of those two settings, for messages.
    every_key: str
    last_key: str
    # How many of the newest checkpoints the framework keeps; None keeps every one, 0 keeps by
    # a metric (no step is sure to stay).
    keep_latest: int | None = None
    keep_key: str = ""

    def saved(self) -> list[int]:
        steps = list(range(self.every, self.last + 1, self.every))
        return steps if steps and steps[-1] == self.last else [*steps, self.last]

    def saves(self, step: int) -> bool:
        return 0 < step <= self.last and (step % self.every == 0 or step == self.last)

    def nearest(self, step: int) -> int:
        return min(self.saved(), key=lambda saved: abs(saved - step))

    def kept_by_framework(self, step: int) -> bool:
        if self.keep_latest is None:
            return True
        # 0: the framework keeps by a metric, so no step is sure to stay.
        return self.keep_latest > 0 and step in self.saved()[-self.keep_latest :]


def never_saved(producer: str, step: int, policy: SavePolicy) -> str:
    return (
        f"{producer} never saves step {step}: it saves every {policy.every} steps "
        f"({policy.every_key}) up to step {policy.last} ({policy.last_key})"
    )


def keep_step_issues(
    producer: str, output: str, steps: Sequence[int], policy: SavePolicy | None
) -> list[Issue]:
    """The producer's side of a pin: steps later stages select that it never saves."""
    issues = []
    for step in steps:
        if policy is None or not policy.saves(step):
            why = never_saved(producer, step, policy) if policy else f"{producer} saves no steps"
            issues.append(
                Issue(
                    "lineage.keep_steps",
                    f"a later stage selects {output}:step-{step}, but {why}",
                    value=step,
                    hint="change the pin in the pipeline's lineage, or this stage's settings",
                )
            )
    return issues


def pin_issues(
    consumer: str, role: str, ref: ArtifactRef, producer: str, policy: SavePolicy | None, *,
    kept_by_recipekit: bool,
) -> list[Issue]:
    """Why ``consumer``'s ``run.<role>`` pin of a step of ``producer``'s output cannot exist."""
    step = ref.step
    if step is None:
        return []
    where = f"{consumer}: run.{role}"
    if policy is None:
        return [
            Issue(
                where,
                f"{producer} saves no checkpoints by step, so a step cannot be selected",
                value=str(ref),
                hint=f"pin a version (vN) or latest of {ref.name}",
            )
        ]
    if not policy.saves(step):
        return [Issue(where, never_saved(producer, step, policy), value=str(ref), hint=(
            f"pin {ref.name}:step-{policy.nearest(step)}, or change {producer}'s "
            f"{policy.last_key if step > policy.last else policy.every_key}"
        ))]
    if not kept_by_recipekit and not policy.kept_by_framework(step):
        return [
            Issue(
                where,
                f"{producer} deletes step {step} before it ends: it keeps the latest "
                f"{policy.keep_latest} checkpoints ({policy.keep_key}), and this pin is not in "
                "the pipeline, so recipekit does not keep it",
                value=str(ref),
                hint=f"pin it in the pipeline's lineage, or raise {producer}'s {policy.keep_key}",
            )
        ]
    return []


class Unchecked(enum.Enum):
    """A producer whose save policy is not known here (no recipe, or one that does not plan,
    which is reported where it is planned): its pins are not checked."""

    UNCHECKED = "unchecked"


UNCHECKED = Unchecked.UNCHECKED
PolicyOf = Callable[[str], "SavePolicy | None | Unchecked"]


def lineage_pin_issues(
    consumer: StageLineage, policy_of: PolicyOf, *, stored: Collection[str] | None = None
) -> list[Issue]:
    """What every planner (a single stage, ``pipeline plan``) checks of a stage's inputs, once
    its overrides are applied: every artifact it reads is one its pipeline publishes or imports
    (or ``stored`` holds), and every step it selects is one its producer saves and keeps.
    ``policy_of`` gives a producing stage's save policy; ``stored`` the artifact names the store
    holds (None: no store was consulted). A stage outside a pipeline: nothing."""
    pipeline = consumer.pipeline
    if pipeline is None:
        return []
    producers = pipeline.producers()
    known = {*producers, *pipeline.imported(), *(stored or ())}
    store_too = "" if stored is None else " and the artifact store does not hold it"
    issues: list[Issue] = []
    for role, ref in consumer.artifact_inputs().items():
        if ref.name not in known:
            issues.append(
                Issue(
                    f"{consumer.stage}: run.{role}",
                    f"no stage of {pipeline.name} publishes {ref.name} and no import registers "
                    f"it{store_too}",
                    value=str(ref),
                    hint=did_you_mean(ref.name, known),
                )
            )
            continue
        producer = producers.get(ref.name)
        if ref.step is None or producer is None:
            continue
        policy = policy_of(producer)
        if policy is UNCHECKED:
            continue
        kept = ref.step in pipeline.stage(producer).keep_steps
        issues += pin_issues(consumer.stage, role, ref, producer, policy, kept_by_recipekit=kept)
    return issues
