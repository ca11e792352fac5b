"""Registering what no stage produced: ``data import`` and ``model import``.

Data a stage reads but no stage writes (a team's own datasets) is registered by its user, and a
checkpoint trained elsewhere enters the pipeline the same way. An import logs one W&B artifact,
type ``dataset`` or ``model``, that *references* PATH on shared storage (nothing is uploaded);
stages read it as ``NAME:latest`` unless pinned (``--set run.data=NAME:v3``).

Which artifact a command registers by default is the pipeline's own: the import whose command is
``<pipeline> data import sft PATH`` in ``Pipeline.imports`` (``recipes/super35/lineage.py``).
``--name`` picks another of the pipeline's artifacts of the same type.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from recipekit.errors import Issue, RecipeError, did_you_mean
from recipekit.lineage.graph import Pipeline
from recipekit.lineage.tracking import (
    artifact_type,
    check_credentials,
    log_reference_artifact,
    wandb_run,
)

# Command group -> the W&B type of what it registers.
GROUP_TYPES = {"data": "dataset", "model": "model"}
IMPORT_FIX = "or register offline (--mode offline) and `wandb sync` the run later"


def import_command(pipeline: Pipeline, group: str, kind: str) -> str:
    """The command as the pipeline's imports spell it (``super35 data import sft PATH``)."""
    return f"{pipeline.name} {group} import {kind} PATH"


def default_artifact(pipeline: Pipeline, group: str, kind: str) -> str:
    command = import_command(pipeline, group, kind)
    for registered in pipeline.imports:
        if registered.command == command:
            return registered.artifact
    raise RecipeError(
        [
            Issue(
                f"{group} import {kind}",
                f"the {pipeline.name} pipeline declares no artifact for it",
                hint=f"name one with --name (its imports declare `{command}` nowhere)",
            )
        ]
    )


def importable(pipeline: Pipeline, group: str) -> list[str]:
    """The pipeline's artifacts that ``<group> import --name`` accepts (of the group's type)."""
    return [name for name in pipeline.artifacts() if artifact_type(name) == GROUP_TYPES[group]]


def choose_artifact(pipeline: Pipeline, group: str, kind: str, name: str | None) -> str:
    """``name``, checked against the pipeline's artifacts, or the command's default."""
    if name is None:
        return default_artifact(pipeline, group, kind)
    wanted = GROUP_TYPES[group]
    if name not in pipeline.artifacts():
        raise RecipeError(
            [
                Issue(
                    "--name",
                    f"no stage of the {pipeline.name} pipeline reads or publishes this artifact",
                    value=name,
                    hint=did_you_mean(name, importable(pipeline, group)),
                )
            ]
        )
    found = artifact_type(name)
    if found != wanted:
        other = next((g for g, t in GROUP_TYPES.items() if t == found), None)
        fix = f"register it with `{other} import`" if other else "it is not imported"
        raise RecipeError(
            [Issue("--name", f"is a {found} artifact, not a {wanted}", value=name, hint=fix)]
        )
    return name


def source_paths(paths: Mapping[str, Path]) -> dict[str, Path]:
    """Each path made absolute; every missing one is an error (the artifact would be empty)."""
    missing = [
        Issue(
            f"{role} path",
            "does not exist",
            value=str(path),
            hint="give a path on the shared storage the cluster's nodes mount",
        )
        for role, path in paths.items()
        if not path.exists()
    ]
    if missing:
        raise RecipeError(missing, context="import")
    return {role: path.resolve() for role, path in paths.items()}


def import_artifact(
    artifact: str,
    paths: Mapping[str, Path],
    *,
    command: str,
    mode: str,
    project: str,
    entity: str | None = None,
    directory: Path | None = None,
    stored: Mapping[str, str] | None = None,
) -> Path:
    """Log ``artifact`` referencing ``paths`` (entry name -> path); returns the W&B run's
    directory (``.../wandb/offline-run-*`` offline). ``stored``: the artifact store's version
    of the same import (its version, path and manifest digest), recorded in the metadata."""
    sources = source_paths(paths)
    check_credentials(mode, other_fixes=IMPORT_FIX)
    with wandb_run(
        mode=mode,
        directory=directory,
        project=project,
        entity=entity,
        name=f"import-{artifact}",
        job_type="import",
        config={"import": {"artifact": artifact, "command": command}},
    ) as run:
        log_reference_artifact(
            run,
            artifact,
            {entry: path.as_uri() for entry, path in sources.items()},
            metadata={
                "command": command,
                "sources": {e: str(p) for e, p in sources.items()},
                **({"store": dict(stored)} if stored else {}),
            },
            aliases=["latest"],
        )
        run_dir = Path(run.dir).parent
    return run_dir
