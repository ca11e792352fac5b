"""W&B tracking: a run records a stage's plan and lineage; a reader gets them back from the files.

``record_run`` writes one W&B run per submitted stage with the ``wandb`` library: the plan
(hash, config, job script, image digests, git commit and whether the tree was dirty) as the
run's config and as files, the inputs as ``run.use_artifact`` and the output as a reference
artifact (``run.log_artifact``; the checkpoint stays where the job wrote it). The output is
tagged ``latest`` and, for a checkpoint of a given step, ``step-N``, which is how a
``NAME:step-N`` reference resolves.

Offline (``mode="offline"``), ``wandb`` writes the run to ``DIR/wandb/offline-run-*/`` and
``wandb sync`` uploads it later. What offline mode cannot do, checked on wandb 0.31: it refuses
``use_artifact`` ("Cannot use artifact when in offline mode"), so offline runs carry their
inputs in the run config (``lineage.inputs``) and ``lineage.json``; they can be linked after
``wandb sync`` with the public API's ``Run.use_artifact``. ``read_offline_run`` parses the
run's ``.wandb`` log (LevelDB log framing around ``wandb_internal_pb2.Record`` protobufs).

``lineage_from_json`` turns a plan's ``lineage`` back into a :class:`StageLineage`, which is how
the job's head records a run from ``plan.json`` alone (``recipekit.launch.run_record``).

``wandb`` is imported inside the functions that use it: the launcher starts without it.
"""

from __future__ import annotations

import contextlib
import json
import os
import struct
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from recipekit.errors import Issue, RecipeError
from recipekit.lineage.graph import StageLineage
from recipekit.lineage.refs import ArtifactRef, ExternalInput, InputSource, parse_ref

API_KEY = "WANDB_API_KEY"
# "off": nothing is recorded (a cluster profile's choice); the others are wandb's own modes.
MODES = ("online", "offline", "off")
PROFILE_FIX = (
    "Slurm hands it to the job as environment only; or turn tracking off in the cluster profile "
    "(tracking=Tracking(mode='off')), or track offline (Tracking(mode='offline')) and "
    "`wandb sync` the run later"
)


def check_credentials(
    mode: str, environ: Mapping[str, str] | None = None, *, other_fixes: str = PROFILE_FIX
) -> None:
    """An online run needs ``WANDB_API_KEY``; say how to give it rather than fail in the job.

    ``other_fixes`` says how the caller's user avoids online tracking instead.
    """
    if mode not in MODES:
        raise RecipeError([Issue("tracking.mode", f"one of {', '.join(MODES)}", value=mode)])
    env = os.environ if environ is None else environ
    if mode == "online" and not env.get(API_KEY):
        raise RecipeError(
            [
                Issue(
                    API_KEY,
                    "is not set, and this run is recorded in W&B",
                    hint=(
                        "export WANDB_API_KEY in the shell you run this from (your key is at "
                        "https://wandb.ai/authorize); " + other_fixes
                    ),
                )
            ],
            context="tracking",
        )


def artifact_type(name: str) -> str:
    """W&B's artifact type, from the pipeline's naming: ``*-model`` and ``*-data``, also with a
    variant's suffix after them (``super35-sft-model-tiny``)."""
    for word in reversed(name.split("-")):
        if word in ("model", "data"):
            return "model" if word == "model" else "dataset"
    return "result"


def _plan_config(plan: Mapping[str, Any]) -> dict[str, Any]:
    # ``action``: what the store's versions record of how the run was made (its action key, the
    # recipe's plan hash, the exact input versions: recipekit.pipeline.actions), where a
    # pipeline planned it.
    keys = ("stage", "hash", "git_commit", "git_dirty", "images", "action")
    return {key: plan[key] for key in keys if key in plan}


@contextlib.contextmanager
def wandb_run(
    *,
    mode: str,
    directory: Path | None,
    project: str,
    entity: str | None,
    name: str,
    job_type: str,
    config: dict[str, Any],
) -> Iterator[Any]:
    """One W&B run, finished and flushed to disk on leaving (``directory``: where ``wandb/``
    goes; None: ``WANDB_DIR`` or the current directory, as wandb decides)."""
    import wandb

    run = wandb.init(
        mode=mode,  # type: ignore[arg-type]
        dir=None if directory is None else str(directory),
        project=project,
        entity=entity,
        name=name,
        job_type=job_type,
        config=config,
        settings=wandb.Settings(console="off", save_code=False, x_disable_stats=True),
    )
    try:
        yield run
    finally:
        run.finish()
        # finish() can return before W&B's service has flushed the run log to disk; tearing
        # the service down waits for it (seen: a second run's log read back empty).
        wandb.teardown()


def log_reference_artifact(
    run: Any,
    name: str,
    references: Mapping[str, str],
    *,
    metadata: dict[str, Any],
    aliases: list[str],
) -> None:
    """Log artifact ``name`` whose entries are ``references`` (entry name -> URI): W&B lists
    the files below each URI (``checksum=False``: no file is read or copied)."""
    import wandb

    artifact = wandb.Artifact(name, type=artifact_type(name), metadata=metadata)
    for entry, uri in references.items():
        artifact.add_reference(uri, name=entry, checksum=False)
    run.log_artifact(artifact, aliases=aliases)


def log_deleted_version(
    run: Any, name: str, uri: str, *, metadata: dict[str, Any], aliases: list[str]
) -> None:
    """Log a version whose checkpoint is gone (W&B refuses a reference to a missing path): its
    one entry, ``deleted.json``, says where it was."""
    import wandb

    gone = {**metadata, "deleted": True, "checkpoint": uri}
    artifact = wandb.Artifact(name, type=artifact_type(name), metadata=gone)
    with artifact.new_file("deleted.json") as entry:
        entry.write(json.dumps({"checkpoint": uri, "deleted": True}))
    run.log_artifact(artifact, aliases=aliases)


@attrs.frozen
class OutputVersion:
    """One version of a run's output artifact, as W&B records it."""

    uri: str
    step: int | None
    # The framework's keep policy deleted it after it was published: recorded all the same (the
    # lineage says it existed), its metadata saying it is gone.
    deleted: bool = False


def record_run(
    plan: Mapping[str, Any],
    lineage: StageLineage,
    *,
    directory: Path,
    project: str,
    outputs: Sequence[OutputVersion] = (),
    mode: str = "offline",
    entity: str | None = None,
) -> Path:
    """Record one stage's run; returns the run's directory (``.../wandb/offline-run-*``).

    ``plan`` is plan-like: ``stage``, ``hash``, ``config`` (the framework config), ``job_script``
    (text), ``images`` (name -> digest), ``git_commit``, ``git_dirty``. ``outputs`` are the
    versions of the output artifact the run published, oldest first: where each checkpoint
    lives (``file:///...``), referenced, not copied, and its step (None if not by step). Each
    becomes a version with the alias ``step-N``; the newest also gets ``latest``. With no
    outputs (the stage wrote none the framework names) the run is recorded without them.
    """
    if mode == "off":
        raise ValueError("record_run with tracking off: the caller records nothing")
    check_credentials(mode)
    stage = str(plan.get("stage", lineage.stage))
    digest = str(plan["hash"])
    lineage_json = lineage.as_json()
    with wandb_run(
        mode=mode,
        directory=directory,
        project=project,
        entity=entity,
        name=f"{stage}-{digest[:12]}",
        job_type=stage,
        config={"plan": _plan_config(plan), "lineage": lineage_json},
    ) as run:
        files_dir = Path(run.dir)
        (files_dir / "config.json").write_text(json.dumps(plan.get("config", {}), indent=2))
        (files_dir / "job.sbatch").write_text(str(plan.get("job_script", "")))
        (files_dir / "lineage.json").write_text(json.dumps(lineage_json, indent=2))
        if mode == "online":
            for role, ref in lineage.artifact_inputs().items():
                run.use_artifact(str(ref), use_as=role)
        published = list(outputs) if lineage.output is not None else []
        for number, version in enumerate(published):
            newest = number == len(published) - 1
            aliases = ["latest"] if newest else []
            aliases += [f"step-{version.step}"] if version.step is not None else []
            metadata = {"stage": stage, "plan_hash": digest, "inputs": lineage_json["inputs"]}
            if version.deleted:
                log_deleted_version(
                    run, str(lineage.output), version.uri, metadata=metadata, aliases=aliases
                )
                continue
            log_reference_artifact(
                run,
                str(lineage.output),
                {"checkpoint": version.uri},
                metadata=metadata,
                aliases=aliases,
            )
    return files_dir.parent


def lineage_from_json(stage: str, data: Mapping[str, Any] | None) -> StageLineage:
    """The lineage a plan's JSON carries (``plan.json``'s ``lineage``), for the job to record;
    a stage outside a pipeline (None) reads and publishes no artifact."""
    if data is None:
        return StageLineage(stage=stage, inputs={}, output=None)
    inputs = {role: _input_from_text(str(text)) for role, text in data["inputs"].items()}
    return StageLineage(
        stage=stage,
        inputs=inputs,
        output=data.get("output"),
        blocked=data.get("blocked", ""),
        keep_steps=tuple(data.get("keep_steps", ())),
        handoff=data.get("handoff", ""),
    )


def _input_from_text(text: str) -> InputSource:
    # The forms of ArtifactRef.__str__ and ExternalInput.__str__.
    if text.startswith("${") and text.endswith("}"):
        return ExternalInput(text[2:-1], env_var=text[2:-1])
    if text.startswith("(") and text.endswith(")"):
        return ExternalInput(text[1:-1])
    return parse_ref(text, path="lineage.inputs")


@attrs.frozen
class RecordedArtifact:
    name: str
    type: str
    aliases: tuple[str, ...]
    references: tuple[str, ...]
    metadata: dict[str, Any]

    def ref(self) -> ArtifactRef:
        """The reference a consumer uses: by step when the run tagged one, else latest."""
        steps = [a for a in self.aliases if a.startswith("step-")]
        return ArtifactRef(self.name, steps[0] if steps else "latest")


@attrs.frozen
class RecordedRun:
    """What an offline run's files say: its id, config (plan and lineage) and artifacts."""

    run_id: str
    job_type: str
    config: dict[str, Any]
    logged: tuple[RecordedArtifact, ...]
    files: tuple[str, ...]

    @property
    def stage(self) -> str:
        return str(self.config["plan"]["stage"]) if "stage" in self.config.get("plan", {}) else ""

    @property
    def inputs(self) -> dict[str, str]:
        return dict(self.config.get("lineage", {}).get("inputs", {}))

    @property
    def output(self) -> str | None:
        out = self.config.get("lineage", {}).get("output")
        return None if out is None else str(out)


_BLOCK = 32768
_HEADER = struct.Struct("<IHB")  # crc32, length, record type (LevelDB log)
_FULL, _FIRST, _MIDDLE, _LAST = 1, 2, 3, 4


def _log_records(data: bytes) -> Iterator[bytes]:
    """The records of a W&B transaction log: a 7-byte file header, then LevelDB log blocks."""
    if data[:4] != b":W&B":
        raise ValueError("not a W&B run log (no ':W&B' header)")
    pos, pending = 7, b""
    while pos + _HEADER.size <= len(data):
        left = _BLOCK - pos % _BLOCK
        if left < _HEADER.size:  # the rest of a block is padding
            pos += left
            continue
        _, length, kind = _HEADER.unpack_from(data, pos)
        pos += _HEADER.size
        chunk, pos = data[pos : pos + length], pos + length
        if kind == 0:
            continue
        pending = chunk if kind in (_FULL, _FIRST) else pending + chunk
        if kind in (_FULL, _LAST):
            yield pending
            pending = b""


def read_offline_run(run_dir: Path) -> RecordedRun:
    """Parse ``run_dir/run-<id>.wandb`` (an offline run) back into its config and artifacts."""
    from wandb.proto import wandb_internal_pb2 as pb

    logs = sorted(run_dir.glob("run-*.wandb"))
    if not logs:
        raise FileNotFoundError(f"{run_dir}: no run-*.wandb file (not a W&B run directory?)")
    run_id, job_type = "", ""
    config: dict[str, Any] = {}
    logged: list[RecordedArtifact] = []
    for blob in _log_records(logs[0].read_bytes()):
        # The module re-exports the protobuf generation that matches the installed protobuf,
        # which mypy cannot follow.
        record = pb.Record()  # type: ignore[attr-defined]
        record.ParseFromString(blob)
        kind = record.WhichOneof("record_type")
        if kind == "run":
            run_id, job_type = record.run.run_id, record.run.job_type
            items = record.run.config.update
        elif kind == "config":
            items = record.config.update
        elif kind == "artifact":
            art = record.artifact
            logged.append(
                RecordedArtifact(
                    name=art.name,
                    type=art.type,
                    aliases=tuple(art.aliases),
                    references=tuple(e.ref for e in art.manifest.contents),
                    metadata=json.loads(art.metadata) if art.metadata else {},
                )
            )
            continue
        else:
            continue
        for item in items:
            key = item.key or ".".join(item.nested_key)
            config[key] = json.loads(item.value_json)
    files = tuple(sorted(p.name for p in (run_dir / "files").iterdir()))
    return RecordedRun(run_id, job_type, _unwrap(config), tuple(logged), files)


def _unwrap(config: dict[str, Any]) -> dict[str, Any]:
    # wandb stores each top-level config key as {"value": ..., "desc": ...}; "_wandb" is its own.
    return {
        k: v["value"] if isinstance(v, dict) and "value" in v else v
        for k, v in config.items()
        if k != "_wandb"
    }


def lineage_edges(runs: list[RecordedRun]) -> list[tuple[str, str, str]]:
    """The lineage graph the runs recorded: (source, target, role) with ``artifact:``/``stage:``
    node names, inputs first then outputs, in the order given."""
    edges: list[tuple[str, str, str]] = []
    for run in runs:
        for role, ref in run.inputs.items():
            edges.append((f"artifact:{ref}", f"stage:{run.stage}", role))
        for art in run.logged:
            edges.append((f"stage:{run.stage}", f"artifact:{art.ref()}", "output"))
    return edges
