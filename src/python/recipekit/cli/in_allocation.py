"""The commands a job script runs inside the allocation, on the nodes: preflight, a Ray stage's
job step, a framework task, the record of a finished run, the interactive driver.

Both command lines carry them (the stage launcher and ``recipekit``), so that either Pex can
be the launcher a run directory holds: ``pipeline submit`` stages many runs from ``recipekit``.
They are hidden from ``--help``: users never type them.
"""

from __future__ import annotations

import sys

import click


@click.command(hidden=True)
@click.argument("run_directory")
def preflight(run_directory: str) -> None:
    """Inside the allocation, on every node: the job's first step (run by the job script)."""
    from recipekit.launch.job_step import run_node_preflight

    sys.exit(run_node_preflight(run_directory))


@click.command(name="job-step", hidden=True)
@click.argument("run_directory")
@click.option("--interactive", is_flag=True)
def job_step(run_directory: str, interactive: bool) -> None:
    """A Ray stage's second step, on every node: Ray, then the framework (run by the job script)."""
    from recipekit.launch.job_step import run_job_step

    sys.exit(run_job_step(run_directory, interactive=interactive))


@click.command(name="entry-point", hidden=True)
@click.argument("run_directory")
def entry_point(run_directory: str) -> None:
    """One task of a per-GPU or head-only stage's framework step (run by the job script)."""
    from recipekit.launch.entry_point import run_entry_point

    sys.exit(run_entry_point(run_directory))


@click.command(hidden=True)
@click.argument("run_directory")
def record(run_directory: str) -> None:
    """On the first node, after a per-GPU or head-only stage ended well: the W&B record."""
    from recipekit.launch.run_record import run_record_step

    sys.exit(run_record_step(run_directory))


@click.command(hidden=True)
@click.argument("run_directory")
def driver(run_directory: str) -> None:
    """On the head of an interactive allocation (run by `run`)."""
    from recipekit.launch.job_step import run_interactive_driver

    sys.exit(run_interactive_driver(run_directory))


IN_ALLOCATION = (preflight, job_step, entry_point, record, driver)
