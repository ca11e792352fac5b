"""``recipekit``: plan any recipe object, expand NeMo-RL YAML."""

from __future__ import annotations

import json
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


def _stage(target: str) -> Any:
    from recipekit.stage import Stage

    stage = load_object(target)
    if not isinstance(stage, Stage):
        raise RecipeError([Issue(target, f"is a {type(stage).__name__}, not a Stage")])
    return stage


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="recipekit")
def cli() -> None:
    """Typed training recipes: plan, render and inspect stages."""


@cli.command()
@click.argument("target", metavar="MODULE:ATTR")
@format_option
@set_option
@reports_recipe_errors
def plan(target: str, output_format: str, overrides: tuple[str, ...]) -> None:
    """Plan the stage MODULE:ATTR (e.g. recipes.super3.dapo:dapo_gb200, or FILE.py:ATTR)."""
    from recipekit.plan import make_plan

    print_plan(make_plan(_stage(target), overrides), output_format)


@cli.command()
@click.argument("target", metavar="MODULE:ATTR")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@set_option
@reports_recipe_errors
def render(target: str, directory: Path, overrides: tuple[str, ...]) -> None:
    """Write the stage's config.yaml and plan.json to DIRECTORY."""
    from recipekit.plan import make_plan

    render_plan(make_plan(_stage(target), overrides), directory)


@cli.command()
@click.argument("yaml_file", type=click.Path(path_type=Path))
@reports_recipe_errors
def expand(yaml_file: Path) -> None:
    """Load a NeMo-RL YAML as NeMo-RL does (defaults:, _override_, resolvers) and print JSON."""
    from recipekit.nemo_rl.yaml_loader import expand as expand_yaml

    click.echo(json.dumps(expand_yaml(yaml_file), indent=2))


def main() -> None:
    cli.main(prog_name="recipekit")
