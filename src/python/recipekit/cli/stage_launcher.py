"""The launcher of one stage: what ``pants run recipes/super3:dapo-gb200`` and its Pex run.

The stage is named by the Pex's environment (``RECIPEKIT_STAGE=module:attr``, set by the
build target), so the same code serves every stage target.
"""

from __future__ import annotations

import os
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
from recipekit.errors import Issue, RecipeError
from recipekit.loading import load_object

STAGE_VARIABLE = "RECIPEKIT_STAGE"


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
    """Plan and render this stage. With no sub-command, prints the plan."""


@cli.command()
@format_option
@set_option
@reports_recipe_errors
def plan(output_format: str, overrides: tuple[str, ...]) -> None:
    """Validate the stage and print its plan: layout, batch, sequence budget, warnings, hash."""
    print_plan(_stage(), overrides, output_format)


@cli.command()
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@set_option
@reports_recipe_errors
def render(directory: Path, overrides: tuple[str, ...]) -> None:
    """Write DIRECTORY/config.yaml (NeMo-RL's --config) and DIRECTORY/plan.json."""
    render_plan(_stage(), overrides, directory)


def main() -> None:
    import sys

    # `pants run recipes/super3:dapo-gb200` with no arguments shows the plan.
    cli.main(args=sys.argv[1:] or ["plan"], prog_name=os.path.basename(sys.argv[0]) or "stage")
