"""Action keys: which stages of a chain must run, and which already made their output.

As a build tool keys an action by its command and the digests of its inputs, every stage run
here has an **action key**: sha256 over its plan's hash (config, framework and version,
hardware, model, the lineage as the recipe states it), the container images it would run in
(the cluster profile's, as submit resolves them for the stage's base: by digest, or the tag the
profile names; none when planned without a profile) and the identity of every input version
it reads:

- an input another stage of the pipeline produces: that stage's key and the step it selects
  (``<key>:step-120``, ``<key>:latest``);
- an imported input (or one whose version carries no key): the digest of its manifest (file
  names, sizes and sha256 as the store took them, ``store.read_marker``).

Each selector (``:latest``, ``step-120``) is resolved to one version of the store when the chain
is planned, and a stage that runs is pinned to exactly that version (``vN``); an input made by
a stage that runs first in the same submission is read as its selector once that job is done
(it waits for it, afterok). A published version records the key, the recipe's plan hash, what
the plan hash covers (to show which keys changed) and the input versions in its completion
marker's ``meta`` (:func:`version_meta`). A stage is **up to date** when a whole version of its
output (every file its manifest lists, at its size) records its key, its run's last step and
the input versions it would read now; otherwise it runs, for one reason: the recipe changed
(the keys that differ, images among them), the image changed (which), an input changed
(which), an input is missing (the store has no whole version it selects), no complete output,
or ``--rerun``. A stage that runs makes its readers run too: what it publishes is a new version
of their input.

An input read from a path in the environment (``ExternalInput``: pretraining's
``${SUPER35_INIT_CHECKPOINT}``) is keyed by what the submitting shell's variable names, as
``make`` keys a file: the path, and every file under it by name, size and modification time
(``external_identity``). Its bytes (a converted checkpoint of hundreds of GB) are too many to
hash at plan time; its metadata is not. A new checkpoint behind the same variable, or the
variable pointing elsewhere, makes the stage run ("an input changed").
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import attrs

from recipekit.errors import Issue, RecipeError, did_you_mean
from recipekit.lineage.conversions import conversion_environment, converted_input
from recipekit.lineage.refs import LATEST, ArtifactRef, ExternalInput
from recipekit.lineage.store import (
    StoredVersion,
    artifact_names,
    check_version,
    input_problem,
    manifest_digest,
    read_marker,
    versions,
)
from recipekit.pipeline.chain import Chain, PlannedStage, stage_overrides
from recipekit.plan import make_plan, plan_identity, save_policy
from recipekit.review.keydiff import Change, diff

KEY_FORMAT = 1
# Set in a stage run again on the same key: part of its plan, so of its run's name.
ATTEMPT_VARIABLE = "RECIPEKIT_ATTEMPT"

UP_TO_DATE = "up to date"
RECIPE_CHANGED = "the recipe changed"
INPUT_CHANGED = "an input changed"
INPUT_MISSING = "an input is missing"
IMAGE_CHANGED = "the image changed"
NO_OUTPUT = "no complete output"
RERUN = "--rerun"
PUBLISHES_NOTHING = "it publishes no artifact, so no version records a run of it"
NO_RECIPE = "it has no recipe"


@attrs.frozen
class RecordedVersion:
    """A version of an artifact as the store holds it: whole or not, and what it records."""

    version: StoredVersion
    whole: bool
    # The completion marker's ``meta``: the action that made it ({} for an import, or a version
    # published before the store recorded actions).
    meta: Mapping[str, Any]
    # sha256 over the manifest (names, sizes, sha256 of every file); "" without a marker.
    manifest_digest: str


class VersionRecords(Protocol):
    """What planning needs of the artifact store (``StoreRecords`` reads the real one)."""

    def recorded(self, artifact: str) -> list[RecordedVersion]: ...

    def names(self) -> list[str]: ...


@attrs.define
class StoreRecords:
    """The artifact store at ``root``: each artifact's versions read once per plan."""

    root: Path
    _seen: dict[str, list[RecordedVersion]] = attrs.field(factory=dict, init=False)

    def names(self) -> list[str]:
        return artifact_names(self.root)

    def recorded(self, artifact: str) -> list[RecordedVersion]:
        if artifact not in self._seen:
            self._seen[artifact] = self._read(artifact)
        return self._seen[artifact]

    def _read(self, artifact: str) -> list[RecordedVersion]:
        directory = self.root / artifact
        if not directory.is_dir():
            return []
        out = []
        for version in versions(self.root, artifact):
            marker = read_marker(directory, version.version) or {}
            files = marker.get("files")
            digest = manifest_digest(files) if files is not None else ""
            whole = check_version(self.root, artifact, version, content=False).whole
            meta = marker.get("meta")
            out.append(
                RecordedVersion(version, whole, meta if isinstance(meta, dict) else {}, digest)
            )
        return out


class NoStore:
    """No artifact store to read (planning without ``--cluster``): no input version is known,
    so every stage runs for want of a complete output."""

    def names(self) -> list[str]:
        return []

    def recorded(self, artifact: str) -> list[RecordedVersion]:
        return []


def _digest(value: Any) -> str:
    blob = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


@attrs.frozen
class InputVersion:
    """One input of a stage run: the version it reads and that version's identity."""

    role: str
    # As the recipe (or --set) selects it: super35-rl-rlvr-model:step-120.
    ref: ArtifactRef
    # The store's version it is pinned to; None when a stage that runs first makes it, or the
    # store has no whole version it selects.
    version: int | None
    # What the key hashes: "<producer key>:<selector>" or "manifest:<sha256>"; "absent:..."
    # when there is nothing to read.
    identity: str
    # The stage of the chain that makes it and runs before this one ("" otherwise).
    made_by: str = ""
    # The digest of the pinned version's manifest: what its bytes are ("" when not pinned).
    content: str = ""

    def recorded(self) -> dict[str, Any]:
        """What a published version records of it (``completed_meta`` fills in the version of
        one made by a stage that ran first)."""
        version = None if self.version is None else f"v{self.version}"
        return {"ref": str(self.ref), "version": version, "identity": self.identity}

    def as_json(self) -> dict[str, Any]:
        return {**self.recorded(), **({"made_by": self.made_by} if self.made_by else {})}


@attrs.frozen
class StageAction:
    """A stage's key, the input versions it reads, and whether (and why) it runs."""

    stage: str
    key: str | None
    plan_hash: str | None
    inputs: tuple[InputVersion, ...]
    runs: bool
    reason: str
    # Up to date: the version that is its output.
    version: int | None = None
    # The recipe changed: every key that differs from the recorded run's.
    changes: tuple[Change, ...] = ()
    # An input changed: the roles, each with what it was and is.
    changed_inputs: tuple[str, ...] = ()
    # What the versions it publishes record (``version_meta``).
    record: Mapping[str, Any] = attrs.field(factory=dict)
    # The container images it would run in, by name (``Images``): part of its key.
    images: Mapping[str, str] = attrs.field(factory=dict)
    # Runs of this key the store has seen already: a stage run again on the same key (its
    # output damaged, an input re-made, --rerun) gets a run of its own instead of resuming
    # the old run's checkpoints (a run is named by its plan's hash).
    attempt: int = 0

    def pins(self) -> dict[str, ArtifactRef]:
        """Roles to re-point at the exact version resolved (``run.model=NAME:vN``)."""
        return {
            i.role: ArtifactRef.at_version(i.ref.name, i.version)
            for i in self.inputs
            if i.version is not None and not i.made_by
        }

    def as_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "plan_hash": self.plan_hash,
            "runs": self.runs,
            "reason": self.reason,
            **({"version": f"v{self.version}"} if self.version is not None else {}),
            **({"changes": [c.as_json() for c in self.changes]} if self.changes else {}),
            **({"changed_inputs": list(self.changed_inputs)} if self.changed_inputs else {}),
            **({"images": dict(self.images)} if self.images else {}),
            "inputs": {i.role: i.as_json() for i in self.inputs},
        }


# The container images a planned stage would run in, by name (``submit.chain_images`` reads
# them from the cluster profile).
Images = Callable[[PlannedStage], Mapping[str, str]]


def action_key(
    plan_hash: str, identities: Mapping[str, str], images: Mapping[str, str] | None = None
) -> str:
    keyed: dict[str, Any] = {"format": KEY_FORMAT, "plan": plan_hash, "inputs": dict(identities)}
    # Absent when there are none, so a stage run without a container keeps the key it had
    # before images were keyed.
    if images:
        keyed["images"] = dict(images)
    return _digest(keyed)


def plan_actions(
    chain: Chain,
    planned: Sequence[PlannedStage],
    records: VersionRecords,
    *,
    rerun: Collection[str] = (),
    images: Images | None = None,
) -> list[StageAction]:
    """Every planned stage's action, in order: each after the stages it reads from.
    ``images`` gives the container images each would run in (none without it)."""
    names = [p.name for p in planned]
    unknown = [
        Issue("--rerun", f"{name!r} is not a stage of this plan", hint=did_you_mean(name, names))
        for name in rerun
        if name not in names
    ]
    if unknown:
        raise RecipeError(unknown, context=f"pipeline {chain.pipeline.name}")
    producers = chain.pipeline.producers()
    done: dict[str, StageAction] = {}
    for entry in planned:
        inputs = tuple(
            _input(role, ref, done.get(producers.get(ref.name, "")), records)
            for role, ref in entry.lineage.artifact_inputs().items()
        )
        externals = {
            role: external_identity(source)
            for role, source in entry.lineage.inputs.items()
            if isinstance(source, ExternalInput) and source.env_var
        }
        used = images(entry) if images is not None and entry.plan is not None else {}
        done[entry.name] = _decide(entry, inputs, externals, records, entry.name in rerun, used)
    return [done[entry.name] for entry in planned]


def external_identity(source: ExternalInput) -> str:
    """``env:VAR=PATH@<digest>``: the path the variable names in the submitting shell and a
    digest of every file under it by relative name, size and modification time; ``env:VAR
    unset``, or ``...@missing`` where the path is not here."""
    value = os.environ.get(source.env_var)
    if not value:
        return f"env:{source.env_var} unset"
    root = Path(value)
    if not root.exists():
        return f"env:{source.env_var}={value}@missing"
    digest = hashlib.sha256()
    files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
    for path in files:
        stat = path.stat()
        name = path.name if path == root else str(path.relative_to(root))
        digest.update(f"{name}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return f"env:{source.env_var}={value}@{digest.hexdigest()[:16]}"


def _select(listed: Sequence[RecordedVersion], selector: str) -> RecordedVersion | None:
    ref = ArtifactRef("x", selector)
    if selector == LATEST:
        return listed[-1] if listed else None
    matching = [r for r in listed if r.version.version == ref.version or r.version.step == ref.step]
    return matching[-1] if matching else None


def _input(
    role: str, ref: ArtifactRef, producer: StageAction | None, records: VersionRecords
) -> InputVersion:
    if producer is not None and producer.key is not None:
        identity = f"{producer.key}:{ref.selector}"
        if producer.runs:
            return InputVersion(role, ref, None, identity, made_by=producer.stage)
        made = [
            r for r in records.recorded(ref.name) if r.whole and r.meta.get("key") == producer.key
        ]
        found = _select(made, ref.selector)
        if found is None:
            return InputVersion(role, ref, None, identity)
        number, content = found.version.version, found.manifest_digest
        return InputVersion(role, ref, number, identity, content=content)
    found = _select([r for r in records.recorded(ref.name) if r.whole], ref.selector)
    if found is None:
        return InputVersion(role, ref, None, f"absent:{ref}")
    key = found.meta.get("key")
    identity = f"{key}:{ref.selector}" if key else f"manifest:{found.manifest_digest}"
    return InputVersion(role, ref, found.version.version, identity, content=found.manifest_digest)


def _decide(
    entry: PlannedStage,
    inputs: tuple[InputVersion, ...],
    externals: Mapping[str, str],
    records: VersionRecords,
    forced: bool,
    images: Mapping[str, str],
) -> StageAction:
    plan = entry.plan
    if plan is None:
        return StageAction(entry.name, None, None, inputs, runs=True, reason=NO_RECIPE)
    key = action_key(plan.hash, {**{i.role: i.identity for i in inputs}, **externals}, images)
    identity = plan_identity(plan.stage, plan.framework_config)
    record = version_meta(key, plan.hash, identity, inputs, images, externals)
    action = StageAction(
        entry.name,
        key,
        plan.hash,
        inputs,
        runs=True,
        reason=NO_OUTPUT,
        record=record,
        images=dict(images),
    )
    output = entry.lineage.output
    if output is None:
        return attrs.evolve(action, reason=RERUN if forced else PUBLISHES_NOTHING)
    runs = {r.version.run for r in records.recorded(output) if r.meta.get("key") == key}
    action = attrs.evolve(action, attempt=len(runs))
    if forced:
        return attrs.evolve(action, reason=RERUN)
    missing = tuple(
        _input_change(i.role, None, i) for i in inputs if i.version is None and not i.made_by
    )
    if missing and not isinstance(records, NoStore):
        return attrs.evolve(action, reason=INPUT_MISSING, changed_inputs=missing)
    policy = save_policy(plan)
    last = None if policy is None else policy.last
    whole = [r for r in records.recorded(output) if r.whole and r.meta.get("key")]
    now = {i.role: i.recorded() for i in inputs}
    finished = [
        r
        for r in whole
        if r.meta.get("key") == key
        and r.version.step in (None, last)
        and r.meta.get("inputs") == now
    ]
    if finished:
        return attrs.evolve(
            action, runs=False, reason=UP_TO_DATE, version=finished[-1].version.version
        )
    previous = whole[-1].meta if whole else None
    if previous is None:
        return action
    image_changes = _image_changes(previous.get("images") or {}, images)
    if previous.get("plan_hash") != plan.hash:
        changes = (*diff(previous.get("identity", {}), record["identity"]), *image_changes)
        return attrs.evolve(action, reason=RECIPE_CHANGED, changes=changes)
    if image_changes:
        return attrs.evolve(action, reason=IMAGE_CHANGED, changes=image_changes)
    before = previous.get("inputs", {})
    changed = tuple(
        _input_change(role, before.get(role), i)
        for role, i in ((i.role, i) for i in inputs)
        if before.get(role) != now[role]
    )
    was = previous.get("external", {})
    changed += tuple(
        f"run.{role}: {entry.lineage.inputs[role]} names other files than the recorded run "
        f"read ({_named(was.get(role))} -> {_named(identity)})"
        for role, identity in externals.items()
        if was.get(role) != identity
    )
    if changed:
        return attrs.evolve(action, reason=INPUT_CHANGED, changed_inputs=changed)
    return action  # the recorded run did not reach its last step


def _image_changes(before: Mapping[str, str], now: Mapping[str, str]) -> tuple[Change, ...]:
    """The images that differ from the recorded run's, as ``images.<name>`` keys (a run
    recorded before images were keyed shows each image as added)."""
    old = {f"images.{name}": image for name, image in before.items()}
    return tuple(diff(old, {f"images.{name}": image for name, image in now.items()}))


def _input_change(role: str, before: Mapping[str, Any] | None, now: InputVersion) -> str:
    if now.made_by:
        return f"run.{role}: {now.made_by} runs first and publishes a new {now.ref}"
    if now.version is None:
        return f"run.{role}: the store has no whole version of {now.ref}"
    was = (before or {}).get("version") or "nothing"
    return f"run.{role}: {now.ref} is v{now.version} now, the recorded run read {was}"


def _named(identity: str | None) -> str:
    """What an ``external_identity`` says the variable named: ``PATH@<digest>``, or unset."""
    if identity is None:
        return "nothing recorded"
    return identity.partition("=")[2] or "unset"


def version_meta(
    key: str,
    plan_hash: str,
    identity: Mapping[str, Any],
    inputs: Sequence[InputVersion],
    images: Mapping[str, str] | None = None,
    externals: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """What each version a stage run publishes records in its completion marker's ``meta``:
    the action key, the recipe's plan hash and what it covers, the container images, the
    input versions and the paths from the environment (``external_identity``)."""
    return {
        "format": KEY_FORMAT,
        "key": key,
        "plan_hash": plan_hash,
        "identity": dict(identity),
        **({"images": dict(images)} if images else {}),
        "inputs": {i.role: i.recorded() for i in inputs},
        **({"external": dict(externals)} if externals else {}),
    }


def pinned_plans(
    chain: Chain,
    planned: Sequence[PlannedStage],
    actions: Sequence[StageAction],
    overrides: Sequence[str] = (),
) -> list[PlannedStage]:
    """The stages that run, each re-planned with every input it reads from the store pinned to
    the version resolved (``run.<role>=NAME:vN``) and carrying what its versions record."""
    by_stage = stage_overrides(chain, overrides)
    out = []
    for entry, action in zip(planned, actions, strict=True):
        stage = chain.stages[entry.name].stage
        if not action.runs or entry.plan is None or stage is None:
            continue
        pins = [f"run.{role}={ref}" for role, ref in action.pins().items()]
        environment = dict(stage.environment)
        if action.attempt:
            environment[ATTEMPT_VARIABLE] = str(action.attempt)
        # The conversion cache is keyed by the converted version's manifest. An input a stage
        # of this submission makes has none yet: its job keys the cache when it starts, from
        # the version it reads then (job_step), so the same bytes find the same conversion
        # whether they were made in this submission or an earlier one.
        shown = entry.plan.as_json()
        converted = converted_input(shown)
        read = next((i for i in action.inputs if i.ref.name == converted), None)
        if read is not None and read.content:
            environment.update(conversion_environment(shown, f"manifest:{read.content}"))
        if environment != stage.environment:
            stage = attrs.evolve(stage, environment=environment)
        lineage = chain.stages[entry.name].lineage
        plan = make_plan(
            attrs.evolve(stage, lineage=lineage),
            [*by_stage.get(entry.name, ()), *pins],
            check_pins=False,
        )
        plan = attrs.evolve(plan, action=dict(action.record))
        out.append(attrs.evolve(entry, plan=plan, lineage=plan.stage.lineage or entry.lineage))
    return out


def damaged_inputs(root: Path, actions: Sequence[StageAction]) -> list[Issue]:
    """A stage that runs must not read a version of the store that is incomplete or damaged
    (its files against its manifest), as submit and the job's preflight refuse it."""
    issues = []
    for action in actions:
        if not action.runs:
            continue
        for read in action.inputs:
            if read.made_by:
                continue  # a stage that runs first in this submission makes it
            problem = input_problem(root, read.ref.name, read.ref.selector, missing_ok=True)
            if problem:
                issues.append(Issue(f"{action.stage}: run.{read.role}", problem))
    return issues
