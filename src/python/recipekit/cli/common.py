"""What both command lines share: option parsing, output and error reporting."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from recipekit.errors import RecipeError

F = TypeVar("F", bound=Callable[..., Any])

EXIT_USER_ERROR = 2


def reports_recipe_errors(fn: F) -> F:
    """A user's mistake is printed as a message with exit status 2, never as a traceback."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except RecipeError as exc:
            click.echo(f"error: {exc.render()}", err=True)
            sys.exit(EXIT_USER_ERROR)

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


def render_plan(plan: Any, directory: Path) -> None:
    from recipekit.report import warnings_text, write_rendered

    for path in write_rendered(plan, directory):
        click.echo(f"wrote {path}")
    click.echo(f"plan {plan.hash}")
    for line in warnings_text(plan.warnings)[1:]:
        click.echo(line, err=True)
