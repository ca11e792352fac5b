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
from recipekit.cli import common
from recipekit.cli.common import (
    ends_without_teardown,
    format_option,
    print_plan,
    render_plan,
    reports_recipe_errors,
    set_option,
)
from recipekit.cli.in_allocation import IN_ALLOCATION
from recipekit.cli.stage_context import (
    STAGE_VARIABLE,
    cluster_option,
    cluster_profile,
    load_stage,
    run_dir_of,
    stage_plan,
)
from recipekit.cli.stage_images import IMAGE_COMMANDS

# The environment variable that names the stage (tests and the build target set it).
__all__ = ["STAGE_VARIABLE", "cli", "main"]
from recipekit.errors import Issue, RecipeError


class StageGroup(click.Group):
    """Heads ``--help`` with the stage's own description, as TorchX heads a component."""

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        try:
            stage = load_stage()
            formatter.write_text(f"{stage.name}: {stage.description}")
            formatter.write_paragraph()
        except RecipeError:
            pass
        super().format_help(ctx, formatter)


@click.group(cls=StageGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="recipekit stage launcher")
def cli() -> None:
    """Plan, render and run this stage on a Slurm cluster. With no sub-command, prints the plan."""


STEP_TIME_HELP = (
    "Seconds a training step takes on this cluster: the plan says how many continuations "
    "to expect, and submit refuses more than Slurm's MaxBatchRequeue. Default: measured in an "
    "earlier attempt of the stage on this cluster, where one stopped at its deadline."
)


@cli.command()
@format_option
@set_option
@cluster_option
@click.option("--step-time", type=click.FloatRange(min=0, min_open=True), help=STEP_TIME_HELP)
@ends_without_teardown
@reports_recipe_errors
def plan(
    output_format: str, overrides: tuple[str, ...], cluster: str | None, step_time: float | None
) -> None:
    """Validate the stage and print its plan, and the job script `submit` would run."""
    from recipekit.launch.run_files import job_script

    the_plan = stage_plan(overrides)
    print_plan(the_plan, output_format)
    if output_format == "text":
        profile = cluster_profile(cluster, the_plan, required=False)
        if profile is not None:
            click.echo(f"\njob script for cluster profile {profile.name!r}:\n")
            click.echo(job_script(the_plan, profile), nl=False)
            from recipekit.launch.time_budget import run_outline

            # How the stage meets the time limit (launch.time_budget), Ray's wait (bringup).
            outline = run_outline(the_plan, profile, step_time_s=step_time)
            if outline:
                click.echo(f"\nhow it runs on {profile.name!r}:")
                for line in outline:
                    click.echo(f"  {line}")


@cli.command()
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@set_option
@cluster_option
@reports_recipe_errors
def render(directory: Path, overrides: tuple[str, ...], cluster: str | None) -> None:
    """Write DIRECTORY/config.yaml (NeMo-RL's --config), plan.json and job.sbatch."""
    the_plan = stage_plan(overrides)
    render_plan(the_plan, directory, cluster_profile(cluster, the_plan, required=False))


@cli.command()
@click.option(
    "--interactive",
    is_flag=True,
    help="Bring Ray up on the allocation and keep it: then `attach`, `run`, `down`.",
)
@set_option
@cluster_option
@click.option("--step-time", type=click.FloatRange(min=0, min_open=True), help=STEP_TIME_HELP)
@reports_recipe_errors
def submit(
    interactive: bool, overrides: tuple[str, ...], cluster: str | None, step_time: float | None
) -> None:
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

    the_plan = stage_plan(overrides)
    check_launchable(the_plan)
    profile = cluster_profile(cluster, the_plan, required=True)
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
    job_id, run = submit_plan(the_plan, profile, interactive=interactive, step_time_s=step_time)
    click.echo(f"submitted {the_plan.stage.name} as Slurm job {job_id} (plan {the_plan.hash[:12]})")
    click.echo(f"run directory: {run.path}")
    click.echo(f"log: {run.logs}/slurm-{job_id}.out")


def _submitted(overrides: tuple[str, ...], cluster: str | None) -> tuple[Any, str]:
    the_plan = stage_plan(overrides)
    run = run_dir_of(the_plan, cluster_profile(cluster, the_plan, required=True))
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
    for job, when, node in run.lost_nodes():
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(when))
        click.echo(f"  lost node {node} at {stamp} (job {job}): its slurmd stopped answering")
    from recipekit.launch.continuation import continuation_summary

    continued = continuation_summary(run.path, job_id)
    if continued:  # stopped at its save deadline and requeued itself (launch.continuation)
        click.echo(f"  {continued}")
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

    def print_new_bytes() -> None:
        # Bytes as written, never decoded between reads: a read that ends inside a line (a
        # "\r\n" cut in two, a UTF-8 character, a colour code) would otherwise print it changed.
        nonlocal offset
        if path.is_file():
            with path.open("rb") as log_file:
                log_file.seek(offset)
                chunk = log_file.read()
            offset += len(chunk)
            click.echo(chunk, nl=False)

    while True:
        print_new_bytes()
        if not follow or slurm.job_state(job_id) not in slurm.ACTIVE_STATES:
            if follow:
                print_new_bytes()  # what the job wrote between the last read and its end
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

    the_plan = stage_plan(overrides)
    profile = cluster_profile(cluster, the_plan, required=True)
    run = run_dir_of(the_plan, profile)
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

    check_launchable(stage_plan(overrides))
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


# The commands the job script runs inside the allocation (recipekit.cli.in_allocation), and
# those that build and ship the stage's image (recipekit.cli.stage_images).
for _command in (*IN_ALLOCATION, *IMAGE_COMMANDS):
    cli.add_command(_command)


def main() -> None:
    from recipekit.launch.launcher_venv import leave_launcher_venv

    leave_launcher_venv(os.environ)
    common.RUNS_AS_MAIN = True
    # `pants run recipes/super3:dapo-gb200` with no arguments shows the plan.
    cli.main(args=sys.argv[1:] or ["plan"], prog_name=os.path.basename(sys.argv[0]) or "stage")
