"""The stage launcher's image commands (``recipekit.images``): ``artifacts``,
``dependencies-layer``, ``lock``, ``publish``, ``export-sqsh``. For whoever builds and ships the
stage's image, not for the user who submits it (``stage_launcher``) nor for the job
(``in_allocation``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from recipekit.cli.common import reports_recipe_errors
from recipekit.cli.stage_context import cluster_profile, stage_plan
from recipekit.errors import Issue, RecipeError
from recipekit.loading import load_object

lock_option = click.option(
    "--lock",
    "lock_file",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help="The base image's lock file (containers/NAME.lock.json).",
)
tls_option = click.option(
    "--tls-verify/--no-tls-verify",
    default=True,
    show_default=True,
    help="--no-tls-verify is only accepted for a loopback registry.",
)


def _read_lock(lock_file: Path | None) -> Any:
    from recipekit.images.lock import read_lock

    return read_lock(lock_file) if lock_file else None


def _rendered_plan(the_plan: Any) -> dict[str, bytes]:
    from recipekit.launch.run_dir import PROFILE_FILE
    from recipekit.launch.run_files import run_files

    # The image holds the plan's files; the profile is the run directory's, written at submit.
    files = run_files(the_plan, cluster_profile(None, the_plan, required=False)).texts()
    files.pop(PROFILE_FILE, None)
    return {name: text.encode() for name, text in files.items()}


def _pex_option(help_text: str) -> Any:
    return click.option(
        "--pex",
        "pex_path",
        type=click.Path(dir_okay=False, exists=True, path_type=Path),
        envvar="PEX",
        required=True,
        help=help_text,
    )


@click.command()
@click.argument("out", type=click.Path(file_okay=False, path_type=Path))
@_pex_option("The launcher Pex to ship (default: this Pex).")
@lock_option
@click.option("--git-commit", default="unknown", help="Recorded as an image label.")
@click.option("--lockfile-sha256", default="unknown", help="Python lockfile hash (a label).")
@click.option(
    "--base-blobs",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    help="An OCI layout holding the base's blobs, copied into the image layout.",
)
@click.option(
    "--dependencies-layer",
    "dependencies_record",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help="The record (dependencies-layer.json) of a dependencies layer built apart by "
    "`dependencies-layer`: checked against the Pex and referenced. OUT then gets neither that "
    "layer nor stage.pex; the caller places them (`./pants package` does).",
)
@reports_recipe_errors
def artifacts(
    out: Path,
    pex_path: Path,
    lock_file: Path | None,
    git_commit: str,
    lockfile_sha256: str,
    base_blobs: Path | None,
    dependencies_record: Path | None,
) -> None:
    """Write OUT/stage.pex, the launcher's two layers and (base locked) the two-arch image."""
    from recipekit.images.artifacts import BuildInfo, DependenciesLayer, build_artifacts
    from recipekit.images.layer import source_date_epoch
    from recipekit.images.oci import Layout

    the_plan = stage_plan(())
    info = BuildInfo(
        stage=the_plan.stage.name,
        plan_hash=the_plan.hash,
        git_commit=git_commit,
        lockfile_sha256=lockfile_sha256,
        epoch=source_date_epoch(),
    )
    manifest = build_artifacts(
        out,
        pex=pex_path.read_bytes(),
        rendered=_rendered_plan(the_plan),
        info=info,
        lock=_read_lock(lock_file),
        base_blobs=Layout(base_blobs) if base_blobs else None,
        dependencies=DependenciesLayer.read(dependencies_record) if dependencies_record else None,
        show_progress=True,
    )
    for entry in manifest["files"]:
        click.echo(f"{entry['sha256']}  {entry['size']:>10}  {out / entry['path']}")
    if manifest["image"]:
        click.echo(f"image index {manifest['image']['index_digest']}")
    else:
        click.echo(f"no image: {manifest['image_note']}")


@click.command(name="dependencies-layer")
@click.argument("out", type=click.Path(file_okay=False, path_type=Path))
@_pex_option("The launcher Pex, or a Pex of its requirements only (default: this Pex).")
@reports_recipe_errors
def dependencies_layer(out: Path, pex_path: Path) -> None:
    """Write OUT/dependencies-layer.tar (the Pex's wheels and bootstrap) and its record
    OUT/dependencies-layer.json, for `artifacts --dependencies-layer`."""
    from recipekit.images.artifacts import write_dependencies_layer
    from recipekit.images.layer import source_date_epoch

    record = write_dependencies_layer(out, pex=pex_path.read_bytes(), mtime=source_date_epoch())
    click.echo(f"{record.sha256}  {record.size:>10}  {out / 'dependencies-layer.tar'}")


BASES = "containers.bases:BASES"


@click.command()
@click.argument("base")
@click.option("--name", help="The lock's name, when BASE is a reference.")
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Default: containers/NAME.lock.json.",
)
@click.option("--platform", "platforms", multiple=True, default=("linux/amd64", "linux/arm64"))
@tls_option
@reports_recipe_errors
def lock(
    base: str, name: str | None, out: Path | None, platforms: tuple[str, ...], tls_verify: bool
) -> None:
    """Pin BASE (a name from containers/bases.py, or HOST/REPO:TAG): ask its registry, write
    the lock file."""
    import attrs

    from recipekit.errors import did_you_mean
    from recipekit.images.lock import BaseImage, lock_base, registry_requests, write_lock

    if "/" in base:
        declared = BaseImage(name=name or base.rsplit("/", 1)[-1].split(":")[0], reference=base)
    else:
        bases = load_object(BASES)
        if base not in bases:
            raise RecipeError([Issue(base, "no such base image", hint=did_you_mean(base, bases))])
        declared = bases[base]
    declared = attrs.evolve(declared, platforms=platforms)
    target = out or Path("containers") / f"{declared.name}.lock.json"
    from recipekit.progress import progress

    # Each platform's manifest and config are a request each: counted, with what came back.
    requests = registry_requests(declared)
    with progress(f"lock {declared.reference} (registry requests)", total=requests) as bar:

        def asked(what: str) -> None:
            bar.advance()
            bar.note(what)

        locked = lock_base(declared, tls_verify=tls_verify, asked=asked)
    write_lock(locked, target)
    click.echo(f"locked {declared.reference} at {locked.index.digest} -> {target}")


@click.command()
@click.argument("layout", type=click.Path(file_okay=False, exists=True, path_type=Path))
@click.option("--registry", "destination", required=True, metavar="HOST/REPO[:TAG]")
@click.option("--tag", default="stage", show_default=True, help="The tag inside the layout.")
@lock_option
@tls_option
@reports_recipe_errors
def publish(
    layout: Path, destination: str, tag: str, lock_file: Path | None, tls_verify: bool
) -> None:
    """Push the two-arch image in LAYOUT; prints the digest to submit it by."""
    from recipekit.images.oci import Layout
    from recipekit.images.registry import Reference
    from recipekit.images.ship import publish as publish_image

    digest = publish_image(
        Layout(layout),
        tag,
        destination,
        _read_lock(lock_file),
        tls_verify=tls_verify,
        show_progress=True,
    )
    click.echo(f"published {Reference.parse(destination).by_digest(digest)}")


@click.command(name="export-sqsh")
@click.argument("layout", type=click.Path(file_okay=False, exists=True, path_type=Path))
@click.option("--arch", "architecture", type=click.Choice(["amd64", "arm64"]), required=True)
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), required=True)
@click.option("--tag", default="stage", show_default=True)
@lock_option
@tls_option
@reports_recipe_errors
def export_sqsh(
    layout: Path, architecture: str, out: Path, tag: str, lock_file: Path | None, tls_verify: bool
) -> None:
    """Write one architecture of the image in LAYOUT as an enroot-style squashfs."""
    from recipekit.images.layer import source_date_epoch
    from recipekit.images.oci import Layout
    from recipekit.images.ship import export_sqsh as export

    path = export(
        Layout(layout),
        tag,
        architecture,
        out,
        _read_lock(lock_file),
        tls_verify=tls_verify,
        epoch=source_date_epoch(),
        show_progress=True,
    )
    click.echo(f"wrote {path}")


IMAGE_COMMANDS = (artifacts, dependencies_layer, lock, publish, export_sqsh)

if __name__ == "__main__":
    # `python -m recipekit.cli.stage_images OUT --pex X.pex`: the dependencies layer, run by
    # `./pants package` from a Pex of the requirements only (the sources on PEX_EXTRA_SYS_PATH),
    # so that a source change finds it in Pants' cache.
    dependencies_layer()
