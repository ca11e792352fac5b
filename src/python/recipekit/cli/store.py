"""``recipekit store``: make, fill and list the artifact store (``recipekit.lineage.store``)."""

from __future__ import annotations

from pathlib import Path

import click

from recipekit.cli.common import reports_recipe_errors


@click.group()
def store() -> None:
    """The artifact store: where every stage's checkpoints land and inputs are read from.

    \b
      recipekit store init /lustre/your-team/shared/artifacts
      recipekit store import /lustre/.../artifacts super35-sft-data ./blend --name blend-v1
      recipekit store list /lustre/.../artifacts super35-rl-rlvr-model

    A cluster profile names it (ClusterProfile.artifact_store); every container sees it at
    /artifacts, as /artifacts/<artifact>/<latest|vN|step-N>.
    """


STORE_PATH = click.argument("path", type=click.Path(file_okay=False, path_type=Path))


@store.command(name="init")
@STORE_PATH
def store_init(path: Path) -> None:
    """Make PATH an artifact store (on shared storage every node mounts)."""
    from recipekit.lineage.store import init_store

    init_store(path)
    click.echo(f"artifact store at {path}")


@store.command(name="import")
@STORE_PATH
@click.argument("artifact")
@click.argument("source", type=click.Path(exists=True, path_type=Path))
@click.option("--name", required=True, help="The folder the copy gets in the store.")
@reports_recipe_errors
def store_import(path: Path, artifact: str, source: Path, name: str) -> None:
    """Copy SOURCE into the store as the next version of ARTIFACT (and its latest)."""
    from recipekit.errors import Issue, RecipeError
    from recipekit.lineage.refs import artifact_name_problem
    from recipekit.lineage.store import import_version

    problem = artifact_name_problem(artifact)
    if problem:
        raise RecipeError([Issue("ARTIFACT", problem, value=artifact)])
    try:
        version = import_version(path, artifact, source, name=name)
    except FileExistsError as exc:
        raise RecipeError([Issue("--name", str(exc), value=name)]) from None
    click.echo(f"{artifact}:v{version.version} (latest) = {path / artifact / version.path}")


@store.command(name="list")
@STORE_PATH
@click.argument("artifact")
def store_list(path: Path, artifact: str) -> None:
    """Every version of ARTIFACT, oldest first."""
    from recipekit.lineage.store import versions

    for version in versions(path, artifact):
        kept = "  (kept for a later stage)" if version.kept else ""
        click.echo(f"{' '.join(version.aliases):<20} {version.path}{kept}")
