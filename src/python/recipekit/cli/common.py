"""What both command lines share: option parsing, output and error reporting."""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from recipekit.errors import RecipeError, os_error_text

F = TypeVar("F", bound=Callable[..., Any])

EXIT_USER_ERROR = 2


def reports_recipe_errors(fn: F) -> F:
    """A user's mistake is printed as a message with exit status 2, never as a traceback; so
    is what the file system refuses (a read-only mount, a full disk, a file where a folder
    should be), which the command's own code has left consistent before it got here."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except BrokenPipeError:
            # Its reader went away (plan | head): nothing is left to say, and no error. As
            # Python's signal docs advise, stdout is pointed at /dev/null first, so that the
            # interpreter's own last flush does not fail again; the status is a shell's for a
            # process that SIGPIPE ended.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            sys.exit(128 + signal.SIGPIPE)
        except RecipeError as exc:
            click.echo(f"error: {exc.render()}", err=True)
            sys.exit(EXIT_USER_ERROR)
        except OSError as exc:
            click.echo(f"error: {os_error_text(exc)}", err=True)
            sys.exit(EXIT_USER_ERROR)

    return wrapper  # type: ignore[return-value]


# Set by each command line's ``main`` (a process of its own): a command that only computes and
# prints may then end the process itself (``ends_without_teardown``). A test that invokes a
# command in its own process (click's CliRunner) leaves it off.
RUNS_AS_MAIN = False


def ends_without_teardown(fn: F) -> F:
    """A command that only computes and prints (no thread, no atexit handler, no file left
    open): where it runs as the process's main, once it returns or refuses (exit 2) its output
    is flushed and the process ends at once (``os._exit``). The interpreter's teardown, which
    frees every module, section class and generated table, took ~40-55 ms of a 0.3 s `plan`."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if not RUNS_AS_MAIN:
            return fn(*args, **kwargs)
        try:
            fn(*args, **kwargs)
            code = 0
        except SystemExit as exc:
            if exc.code is not None and not isinstance(exc.code, int):
                raise  # a message to print: click's and Python's own exit prints it
            code = exc.code or 0
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError):  # its reader gone (plan | head): nothing to add
                stream.flush()
        os._exit(code)

    return wrapper  # type: ignore[return-value]


set_option = click.option(
    "--set",
    "overrides",
    multiple=True,
    metavar="PATH=VALUE",
    help="Override a framework key by its dotted NeMo-RL path, e.g. "
    "--set policy.max_total_sequence_length=2048. The value is read as YAML and checked "
    "against the key's type; keys derived from it follow.",
)

format_option = click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="text: a one-screen summary; json: the complete plan, config included.",
)


def print_plan(plan: Any, output_format: str) -> None:
    from recipekit.report import plan_json, plan_text

    click.echo(plan_json(plan) if output_format == "json" else plan_text(plan), nl=False)


def render_plan(plan: Any, directory: Path, profile: Any = None) -> None:
    """Write the run's files (the job script too, given a cluster profile) into ``directory``."""
    from recipekit.launch.run_dir import JOB_SCRIPT, PROFILE_FILE
    from recipekit.launch.run_files import run_files
    from recipekit.report import warnings_text
    from recipekit.shared_files import write_whole

    files = run_files(plan, profile).texts()
    # The profile is the run directory's record, written by submit; render shows the job.
    files.pop(PROFILE_FILE, None)
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        path = write_whole(directory / name, text)
        suffix = f" (cluster profile {profile.name})" if name == JOB_SCRIPT else ""
        click.echo(f"wrote {path}{suffix}")
    click.echo(f"plan {plan.hash}")
    for line in warnings_text(plan.warnings)[1:]:
        click.echo(line, err=True)
