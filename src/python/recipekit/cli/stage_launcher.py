"""The launcher of one stage: what ``pants run recipes/super3:dapo-gb200`` and its Pex run.

The stage is named by the Pex's environment (``RECIPEKIT_STAGE=module:attr``, set by the
build target), so the same code serves every stage target.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import click

from recipekit import __version__
from recipekit.cli.common import (
    format_option,
    print_plan,
    render_plan,
    reports_recipe_errors,
    set_option,
)
from recipekit.cli.in_allocation import IN_ALLOCATION
from recipekit.errors import Issue, RecipeError
from recipekit.loading import load_object

STAGE_VARIABLE = "RECIPEKIT_STAGE"

cluster_option = click.option(
    "--cluster",
    "cluster",
    metavar="NAME",
    help="A cluster profile: a name from recipes/clusters.py, or MODULE:ATTR / FILE.py:ATTR.",
)


def _stage() -> Any:
    from recipekit.stage import Stage

    target = os.environ.get(STAGE_VARIABLE, "")
    if not target:
        raise RecipeError(
            [Issue(STAGE_VARIABLE, "not set: this launcher does not know its stage")],
        )
    stage = load_object(target)
    if not isinstance(stage, Stage):
        raise RecipeError([Issue(target, "is not a Stage")])
    return stage


def _plan(overrides: tuple[str, ...]) -> Any:
    from recipekit.plan import make_plan

    return make_plan(_stage(), overrides)


def _profile(name: str | None, plan: Any, *, required: bool) -> Any:
    from recipekit.launch.profile import ClusterProfile
    from recipekit.launch.profiles import default_profile_for, find_profile

    profile: ClusterProfile | None
    if name:
        profile = find_profile(name)
    elif required:
        raise RecipeError([Issue("--cluster", "required: which cluster profile to submit to")])
    else:
        profile = default_profile_for(plan.stage.hardware.node.name)
    return None if profile is None else profile.for_base(plan.stage.framework.image)


def _run_dir(plan: Any, profile: Any) -> Any:
    from recipekit.launch.run_dir import RunDir

    return RunDir.for_plan(profile.runs_dir, plan.stage.name, plan.hash)


def _job_script(plan: Any, profile: Any) -> str:
    from recipekit.launch.job_script import render_job_script

    return render_job_script(plan.as_json(), profile, _run_dir(plan, profile))


class StageGroup(click.Group):
    """Heads ``--help`` with the stage's own description, as TorchX heads a component."""

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        try:
            stage = _stage()
            formatter.write_text(f"{stage.name}: {stage.description}")
            formatter.write_paragraph()
        except RecipeError:
            pass
        super().format_help(ctx, formatter)


@click.group(cls=StageGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="recipekit stage launcher")
def cli() -> None:
    """Plan, render and run this stage on a Slurm cluster. With no sub-command, prints the plan."""


@cli.command()
@format_option
@set_option
@cluster_option
@reports_recipe_errors
def plan(output_format: str, overrides: tuple[str, ...], cluster: str | None) -> None:
    """Validate the stage and print its plan, and the job script `submit` would run."""
    the_plan = _plan(overrides)
    print_plan(the_plan, output_format)
    if output_format == "text":
        profile = _profile(cluster, the_plan, required=False)
        if profile is not None:
            click.echo(f"\njob script for cluster profile {profile.name!r}:\n")
            click.echo(_job_script(the_plan, profile), nl=False)


@cli.command()
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@set_option
@cluster_option
@reports_recipe_errors
def render(directory: Path, overrides: tuple[str, ...], cluster: str | None) -> None:
    """Write DIRECTORY/config.yaml (NeMo-RL's --config), plan.json and job.sbatch."""
    the_plan = _plan(overrides)
    render_plan(the_plan, directory)
    profile = _profile(cluster, the_plan, required=False)
    if profile is not None:
        target = directory / "job.sbatch"
        target.write_text(_job_script(the_plan, profile))
        click.echo(f"wrote {target} (cluster profile {profile.name})")


@cli.command()
@click.option(
    "--interactive",
    is_flag=True,
    help="Bring Ray up on the allocation and keep it: then `attach`, `run`, `down`.",
)
@set_option
@cluster_option
@reports_recipe_errors
def submit(interactive: bool, overrides: tuple[str, ...], cluster: str | None) -> None:
    """Submit the stage as a Slurm batch job; prints the job id and where its log goes.

    Secrets (WANDB_API_KEY, HF_TOKEN, ...) are taken from this shell's environment by Slurm
    when the job starts; they are never written to the run directory. With the cluster
    profile's tracking online (the default), WANDB_API_KEY must be set: the job's first node
    records the finished run in W&B. A stage its lineage marks blocked is refused.

    A delegated stage (evaluation) is handed to its framework's own Slurm client on this
    host (nemo-evaluator-launcher), told the profile's login_host, account, partition and
    image; that client submits the job and owns it.
    """
    from recipekit.launch.submit import check_launchable, submit_delegated, submit_plan

    the_plan = _plan(overrides)
    check_launchable(the_plan)
    profile = _profile(cluster, the_plan, required=True)
    client = the_plan.stage.framework.entry_point
    if the_plan.stage.framework.launch == "delegated" and not interactive:
        click.echo(f"{the_plan.stage.name}: handing plan {the_plan.hash[:12]} to {client}")
        handed = submit_delegated(the_plan, profile, click.echo)
        click.echo(f"run directory: {handed.run.path}")
        if handed.client_status != 0:
            click.echo(f"error: {client} exited with status {handed.client_status}", err=True)
            sys.exit(handed.client_status)
        click.echo(f"{client} submitted the job and owns it: see its `status` and `kill`")
        # Submitted, but not recorded: the reason is in the output above.
        sys.exit(handed.record_status or 0)
    job_id, run = submit_plan(the_plan, profile, interactive=interactive)
    click.echo(f"submitted {the_plan.stage.name} as Slurm job {job_id} (plan {the_plan.hash[:12]})")
    click.echo(f"run directory: {run.path}")
    click.echo(f"log: {run.logs}/slurm-{job_id}.out")


def _submitted(overrides: tuple[str, ...], cluster: str | None) -> tuple[Any, str]:
    the_plan = _plan(overrides)
    run = _run_dir(the_plan, _profile(cluster, the_plan, required=True))
    job_id = run.job_id()
    client = run.delegated_to()
    if client is not None:
        raise RecipeError(
            [
                Issue(
                    str(run.path),
                    f"this plan was handed to {client}, which owns its Slurm job",
                    hint=f"ask it: `{client} status` (its submit output is under logs/)",
                )
            ]
        )
    if job_id is None:
        raise RecipeError([Issue(str(run.path), "this plan has not been submitted")])
    return run, job_id


@cli.command()
@set_option
@cluster_option
@reports_recipe_errors
def status(overrides: tuple[str, ...], cluster: str | None) -> None:
    """The Slurm state of this plan's job."""
    from recipekit.launch import slurm

    run, job_id = _submitted(overrides, cluster)
    details = slurm.job_details(job_id)
    click.echo(f"job {job_id}: {details.get('JobState', 'UNKNOWN')}")
    restarts = int(details.get("Restarts", "0") or 0)
    if restarts:
        # Requeued (preemption, a lost node, scontrol requeue): the same run directory; the
        # framework resumed from its newest checkpoint.
        click.echo(f"  restarted {restarts} time(s): the job was requeued and started again")
    for key in ("NodeList", "RunTime", "ExitCode", "Reason", "Requeue", "Restarts"):
        if key in details:
            click.echo(f"  {key}: {details[key]}")
    click.echo(f"  log: {run.logs}/slurm-{job_id}.out")


@cli.command()
@click.option("-f", "--follow", is_flag=True, help="Keep printing until the job ends.")
@set_option
@cluster_option
@reports_recipe_errors
def logs(follow: bool, overrides: tuple[str, ...], cluster: str | None) -> None:
    """Print the job's log (stdout and stderr of every node)."""
    from recipekit.launch import slurm

    run, job_id = _submitted(overrides, cluster)
    path = run.logs / f"slurm-{job_id}.out"
    offset = 0
    while True:
        if path.is_file():
            with path.open() as log_file:
                log_file.seek(offset)
                chunk = log_file.read()
                offset = log_file.tell()
            click.echo(chunk, nl=False)
        if not follow or slurm.job_state(job_id) not in slurm.ACTIVE_STATES:
            if follow and path.is_file():
                with path.open() as log_file:
                    log_file.seek(offset)
                    click.echo(log_file.read(), nl=False)
            return
        time.sleep(1.0)


@cli.command()
@set_option
@cluster_option
@reports_recipe_errors
def cancel(overrides: tuple[str, ...], cluster: str | None) -> None:
    """Cancel this plan's job; Ray is stopped on every node before the job ends."""
    from recipekit.launch import slurm

    _, job_id = _submitted(overrides, cluster)
    slurm.cancel(job_id)
    click.echo(f"cancelled job {job_id}")


def _live(overrides: tuple[str, ...], cluster: str | None) -> tuple[Any, Any, str, str]:
    from recipekit.launch.interactive import live_cluster

    the_plan = _plan(overrides)
    profile = _profile(cluster, the_plan, required=True)
    run = _run_dir(the_plan, profile)
    live = live_cluster(run)
    return profile, run, live["job_id"], live["head_node"]


@cli.command(context_settings={"ignore_unknown_options": True})
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
@set_option
@cluster_option
@reports_recipe_errors
def attach(command: tuple[str, ...], overrides: tuple[str, ...], cluster: str | None) -> None:
    """A shell (or COMMAND) on the head of the interactive cluster, in its container."""
    from recipekit.launch.interactive import head_step

    profile, _, job_id, head = _live(overrides, cluster)
    argv = head_step(profile, job_id, head, list(command) or ["bash", "-l"], pty=not command)
    os.execvp(argv[0], argv)


@cli.command(name="run")
@set_option
@cluster_option
@reports_recipe_errors
def run_on_cluster(overrides: tuple[str, ...], cluster: str | None) -> None:
    """Run the framework's entry point on the live interactive cluster; its status is ours."""
    import subprocess

    from recipekit.launch.interactive import driver_step
    from recipekit.launch.submit import check_launchable

    check_launchable(_plan(overrides))
    profile, run, job_id, head = _live(overrides, cluster)
    sys.exit(subprocess.call(driver_step(profile, run, job_id, head)))


@cli.command()
@set_option
@cluster_option
@reports_recipe_errors
def down(overrides: tuple[str, ...], cluster: str | None) -> None:
    """Release the interactive cluster (Ray is stopped on every node)."""
    from recipekit.launch import slurm

    _, job_id = _submitted(overrides, cluster)
    slurm.cancel(job_id)
    click.echo(f"released job {job_id}")


# The commands the job script runs inside the allocation (recipekit.cli.in_allocation).
for _command in IN_ALLOCATION:
    cli.add_command(_command)


def main() -> None:
    from recipekit.launch.launcher_venv import leave_launcher_venv

    leave_launcher_venv(os.environ)
    # `pants run recipes/super3:dapo-gb200` with no arguments shows the plan.
    cli.main(args=sys.argv[1:] or ["plan"], prog_name=os.path.basename(sys.argv[0]) or "stage")


# ---------------------------------------------------------------------------------------------
# Artifacts and images (recipekit.images): artifacts, lock, publish, export-sqsh.
# Owned by the images work (issue 4); the commands above are the launcher's.
# ---------------------------------------------------------------------------------------------

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
    import tempfile

    from recipekit.launch.job_script import render_job_script
    from recipekit.report import write_rendered

    with tempfile.TemporaryDirectory(prefix="recipekit-render-") as scratch:
        written = write_rendered(the_plan, Path(scratch))
        rendered = {path.name: path.read_bytes() for path in written}
    profile = _profile(None, the_plan, required=False)
    if profile is not None:
        script = render_job_script(the_plan.as_json(), profile, _run_dir(the_plan, profile))
        rendered["job.sbatch"] = script.encode()
    return rendered


@cli.command()
@click.argument("out", type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--pex",
    "pex_path",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    envvar="PEX",
    required=True,
    help="The launcher Pex to ship (default: this Pex).",
)
@lock_option
@click.option("--git-commit", default="unknown", help="Recorded as an image label.")
@click.option("--lockfile-sha256", default="unknown", help="Python lockfile hash (a label).")
@click.option(
    "--base-blobs",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    help="An OCI layout holding the base's blobs, copied into the image layout.",
)
@reports_recipe_errors
def artifacts(
    out: Path,
    pex_path: Path,
    lock_file: Path | None,
    git_commit: str,
    lockfile_sha256: str,
    base_blobs: Path | None,
) -> None:
    """Write OUT/stage.pex, the launcher's two layers and (base locked) the two-arch image."""
    from recipekit.images.artifacts import BuildInfo, build_artifacts
    from recipekit.images.layer import source_date_epoch
    from recipekit.images.oci import Layout

    the_plan = _plan(())
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
    )
    for entry in manifest["files"]:
        click.echo(f"{entry['sha256']}  {entry['size']:>10}  {out / entry['path']}")
    if manifest["image"]:
        click.echo(f"image index {manifest['image']['index_digest']}")
    else:
        click.echo(f"no image: {manifest['image_note']}")


BASES = "containers.bases:BASES"


@cli.command()
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
    from recipekit.images.lock import BaseImage, lock_base, write_lock

    if "/" in base:
        declared = BaseImage(name=name or base.rsplit("/", 1)[-1].split(":")[0], reference=base)
    else:
        bases = load_object(BASES)
        if base not in bases:
            raise RecipeError([Issue(base, "no such base image", hint=did_you_mean(base, bases))])
        declared = bases[base]
    declared = attrs.evolve(declared, platforms=platforms)
    target = out or Path("containers") / f"{declared.name}.lock.json"
    locked = lock_base(declared, tls_verify=tls_verify)
    write_lock(locked, target)
    click.echo(f"locked {declared.reference} at {locked.index.digest} -> {target}")


@cli.command()
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
        Layout(layout), tag, destination, _read_lock(lock_file), tls_verify=tls_verify
    )
    click.echo(f"published {Reference.parse(destination).by_digest(digest)}")


@cli.command(name="export-sqsh")
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
    )
    click.echo(f"wrote {path}")
