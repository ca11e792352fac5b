"""``recipekit``: plan any recipe object, expand NeMo-RL YAML."""

from __future__ import annotations

import json
import sys
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


@cli.command()
@click.option("--update", is_flag=True, help="Rewrite the snapshots instead of checking them.")
@click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    show_default=True,
    help="The checkout whose recipes/ to read.",
)
@reports_recipe_errors
def snapshots(update: bool, root: Path) -> None:
    """Check (or --update) every stage's compiled-plan snapshot under recipes/**/snapshots/."""
    from recipekit.review import snapshots as snaps

    root = root.resolve()
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    if update:
        changed = snaps.update(root)
        for path in changed:
            click.echo(f"wrote {path}")
        click.echo(f"{len(changed)} snapshot files changed")
        return
    mismatches = snaps.check(root)
    if mismatches:
        click.echo(snaps.mismatch_text(mismatches), err=True, nl=False)
        sys.exit(1)
    click.echo("snapshots match")


@cli.command()
@click.argument("first", metavar="REV|TARGET_A")
@click.argument("rest", nargs=-1, metavar="[TARGET ...]|TARGET_B")
@format_option
@reports_recipe_errors
def diff(first: str, rest: tuple[str, ...], output_format: str) -> None:
    """Compiled plans key by key: REV against the working tree, or TARGET_A against TARGET_B.

    \b
    recipekit diff HEAD~1                       every stage, from HEAD~1 to the working tree
    recipekit diff main recipes.super3.dapo:dapo_h100
    recipekit diff recipes.super3.dapo:dapo_gb200 recipes.super3.dapo:dapo_b200
    """
    from recipekit.review import keydiff, plandiff
    from recipekit.review.revision import is_revision

    root = _checkout_on_path()
    if ":" in first and len(rest) == 1 and not is_revision(root, first):
        changes = {f"{first} -> {rest[0]}": plandiff.diff_stages(_stage(first), _stage(rest[0]))}
        title = f"{first} -> {rest[0]}"
        extra = {"from": first, "to": rest[0]}
    else:
        changes = plandiff.diff_revision(root, first, rest)
        if rest and not changes:
            raise RecipeError([Issue(" ".join(rest), "no such stage at either revision")])
        title = f"{first} -> working tree"
        extra = {"from": first, "to": "working tree"}
    if output_format == "json":
        click.echo(keydiff.report_json(changes, **extra), nl=False)
    else:
        click.echo(keydiff.report_text(changes, title=title), nl=False)


def _checkout_on_path() -> Path:
    """The checkout (the current directory), importable so that ``recipes...`` resolves."""
    root = Path.cwd()
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    return root


@cli.command()
@click.argument("target", metavar="MODULE:ATTR")
@click.argument("key")
@format_option
@set_option
@reports_recipe_errors
def explain(target: str, key: str, output_format: str, overrides: tuple[str, ...]) -> None:
    """Where KEY's value in TARGET's compiled config comes from: the base recipe, a variant's
    with_values, an override (--set), or a derivation from another key (explained in turn)."""
    from recipekit.review.explain import explain as explain_key

    _checkout_on_path()
    origin = explain_key(_stage(target), key, overrides)
    if output_format == "json":
        click.echo(json.dumps(origin.as_json(), indent=2, default=str))
    else:
        click.echo("\n".join(origin.text()))


@cli.command("import-yaml")
@click.argument("yaml_file", type=click.Path(path_type=Path))
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the module here (default: print it).",
)
@click.option("--node", type=click.Choice(["GB200", "B200", "H100"]), help="The node type.")
@click.option("--name", default="", help="The stage's name (default: the file's stem).")
@click.option(
    "--schema",
    type=click.Choice(["auto", "super-v3", "main"]),
    default="auto",
    show_default=True,
    help="NeMo-RL's config schema: super-v3 (Super V3), main (super-v3.5-posttraining: Gym, "
    "MOPD, VLM); auto takes the one that knows more of the file's keys.",
)
@reports_recipe_errors
def import_yaml(
    yaml_file: Path, out: Path | None, node: str | None, name: str, schema: str
) -> None:
    """Write a NeMo-RL GRPO YAML as a typed recipe module defining `recipe`.

    Unknown keys go to the module's UNTYPED_KEYS and are listed as warnings."""
    from recipekit.review.import_yaml import import_yaml as run_import

    imported = run_import(yaml_file, node=node, name=name, schema=schema)
    if out is None:
        click.echo(imported.source, nl=False)
    else:
        out.write_text(imported.source)
        click.echo(f"wrote {out}", err=True)
    for issue in imported.warnings:
        click.echo(f"warning: {issue.render()}", err=True)


@cli.command("compile")
@click.argument("target", metavar="PATH.py[:ATTR]")
@reports_recipe_errors
def compile_command(target: str) -> None:
    """Print the framework config MODULE:ATTR or PATH.py[:ATTR] compiles to (ATTR: recipe)."""
    from recipekit.review.import_yaml import compile_object, dumps

    _checkout_on_path()
    config, warnings = compile_object(load_object(target))
    click.echo(dumps(config))
    for issue in warnings:
        click.echo(f"warning: {issue.render()}", err=True)



@cli.command()
@click.argument("pipeline", metavar="MODULE:ATTR", default="recipes.super35.lineage:SUPER35")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), help="Write the SVG here.")
@reports_recipe_errors
def lineage(pipeline: str, out: Path | None) -> None:
    """Draw a pipeline's stage and artifact graph as SVG (default: the Super 3.5 pipeline)."""
    from recipekit.lineage.drawing import draw_svg
    from recipekit.lineage.graph import Pipeline

    found = load_object(pipeline)
    if not isinstance(found, Pipeline):
        raise RecipeError([Issue(pipeline, f"is a {type(found).__name__}, not a Pipeline")])
    svg = draw_svg(found)
    if out is None:
        click.echo(svg, nl=False)
        return
    out.write_text(svg)
    click.echo(f"wrote {out}")

def main() -> None:
    cli.main(prog_name="recipekit")
