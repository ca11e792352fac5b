"""``recipekit``: plan any recipe object, expand NeMo-RL YAML."""

from __future__ import annotations

import inspect
import json
import os
import sys
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
from recipekit.cli.pipeline import pipeline
from recipekit.cli.store import STORE_LOCATION, store, store_root
from recipekit.cli.upgrade import upgrade
from recipekit.errors import Issue, RecipeError, did_you_mean
from recipekit.loading import load_object


def _stage(target: str) -> Any:
    from recipekit.stage import Stage

    stage = load_object(target)
    if not isinstance(stage, Stage):
        from recipekit.importers.nemo_rl_yaml import ImportedRecipe

        hint = ""
        if isinstance(stage, ImportedRecipe):
            # import-yaml's module: `recipe` is the stage and the keys its schema lacks.
            module = target.rsplit(":", 1)[0] if target.count(":") else target
            hint = (
                f"it holds the stage and {len(stage.untyped_keys)} keys the typed schema does "
                f"not (UNTYPED_KEYS): use {module}:stage, which leaves them out; "
                "`recipekit compile` passes them through"
            )
        raise RecipeError([Issue(target, f"is a {type(stage).__name__}, not a Stage", hint=hint)])
    return stage


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="recipekit")
def cli() -> None:
    """Typed training recipes: plan, render and inspect stages."""


@cli.command()
@click.argument("target", metavar="MODULE:ATTR")
@format_option
@set_option
@ends_without_teardown
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
        changed = snaps.update(root, show_progress=True)
        for path in changed:
            click.echo(f"wrote {path}")
        click.echo(f"{len(changed)} snapshot files changed")
        return
    mismatches = snaps.check(root, show_progress=True)
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
        changes = plandiff.diff_revision(root, first, rest, show_progress=True)
        if rest and not changes:
            raise RecipeError([Issue(" ".join(rest), "no such stage at either revision")])
        title = f"{first} -> working tree"
        extra = {"from": first, "to": "working tree"}
    if output_format == "json":
        click.echo(keydiff.report_json(changes, **extra), nl=False)
    else:
        click.echo(keydiff.report_text(changes, title=title), nl=False)


def _resolve_target(target: str) -> str:
    """MODULE:ATTR for a stage named by MODULE:ATTR, its name or its Pants address."""
    if ":" in target and "/" not in target:
        return target
    from recipekit.review.discover import discover_stages

    name = target.rsplit(":", 1)[-1]
    stages = discover_stages(_checkout_on_path())
    for ref in stages:
        if ref.stage.name == name:
            return ref.target
    names = [r.stage.name for r in stages]
    raise RecipeError([Issue(target, "no stage of that name", hint=did_you_mean(name, names))])


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
    with_values, an override (--set), or a derivation from another key (explained in turn);
    and, for a key that takes one of a set, the values it takes and the pinned file that says
    so."""
    from recipekit.review.explain import explain as explain_key

    _checkout_on_path()
    origin = explain_key(_stage(target), key, overrides)
    if output_format == "json":
        click.echo(json.dumps(origin.as_json(), indent=2, default=str))
    else:
        click.echo("\n".join(origin.text()))


@cli.command()
@click.argument("target", metavar="TARGET")
@click.option(
    "--cluster",
    metavar="NAME",
    help="Search on this cluster profile's nodes (recipes/clusters.py), as many as the stage has.",
)
@click.option("--nodes", type=click.IntRange(min=1), help="How many nodes (default: the stage's).")
@click.option(
    "--node",
    "node_name",
    type=click.Choice(["GB200", "B200", "H100"]),
    help="The node type (default: the stage's, or the cluster profile's).",
)
@click.option(
    "--top", type=click.IntRange(min=1), default=10, show_default=True, help="How many to show."
)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="text: a table and the best as a change; json: every candidate with its memory.",
)
@reports_recipe_errors
def layout(
    target: str,
    cluster: str | None,
    nodes: int | None,
    node_name: str | None,
    top: int,
    output_format: str,
) -> None:
    """Every layout of TARGET that passes all checks and fits in memory, best first.

    TARGET is MODULE:ATTR, a stage name or a Pants address. The search tries each Megatron-Core
    layout (TP, PP, CP, EP, ETP), vLLM's TP and the generation/training split, prices each with
    the memory estimate, ranks those that fit by a communication proxy (TP and EP inside the
    NVLink domain, the pipeline bubble), then by the fewest changes and the most headroom, and
    plans them in that order. It ends with the best as a with_values change to the recipe.

    \b
      recipekit layout recipes.super35.rl:rlvr --nodes 32 --node B200
      recipekit layout rlvr --cluster b200      # the nodes of recipes/clusters.py's b200
    """
    from recipekit.hardware import B200_NODE, GB200_NODE, H100_NODE, Hardware
    from recipekit.layout_search import search, table

    _checkout_on_path()
    stage = _stage(_resolve_target(target))
    node = stage.hardware.node
    if cluster:
        from recipekit.launch.profiles import find_profile

        node = find_profile(cluster).node
    if node_name:
        node = {n.name: n for n in (GB200_NODE, B200_NODE, H100_NODE)}[node_name]
    hardware = Hardware(node, num_nodes=nodes or stage.hardware.num_nodes)

    result = search(stage, hardware, top=top, show_progress=True)
    if output_format == "json":
        click.echo(json.dumps(result.as_json(), indent=2))
    else:
        click.echo("\n".join(table(result)))
    if not result.candidates:
        sys.exit(1)


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
@click.option(
    "--base",
    is_flag=True,
    help="Write a typed base instead: the values of a file pinned in "
    "3rdparty/reference/manifest.toml (give its path under .reference/), as one `config` "
    "object that stages start from; no upstream comments, every key typed.",
)
@reports_recipe_errors
def import_yaml(
    yaml_file: Path, out: Path | None, node: str | None, name: str, schema: str, base: bool
) -> None:
    """Write a NeMo-RL GRPO YAML as a typed recipe module defining `recipe`.

    Unknown keys go to the module's UNTYPED_KEYS and are listed as warnings. With --base, a
    typed base for recipes/upstream/ (a stage then states only what it changes)."""
    from recipekit.importers.nemo_rl_yaml import import_yaml as run_import
    from recipekit.importers.upstream import upstream_of

    upstream = upstream_of(yaml_file, Path.cwd()) if base else None
    imported = run_import(yaml_file, node=node, name=name, schema=schema, upstream=upstream)
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
    from recipekit.importers.nemo_rl_yaml import compile_object, dumps

    _checkout_on_path()
    config, warnings = compile_object(load_object(target))
    click.echo(dumps(config))
    for issue in warnings:
        click.echo(f"warning: {issue.render()}", err=True)


DEFAULT_PIPELINE = "recipes.super35.lineage:SUPER35"


def _pipeline(target: str) -> Any:
    from recipekit.lineage.graph import Pipeline

    _checkout_on_path()
    found = load_object(target)
    if not isinstance(found, Pipeline):
        raise RecipeError([Issue(target, f"is a {type(found).__name__}, not a Pipeline")])
    return found


@cli.command()
@click.argument("pipeline", metavar="MODULE:ATTR", default=DEFAULT_PIPELINE)
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), help="Write the SVG here.")
@reports_recipe_errors
def lineage(pipeline: str, out: Path | None) -> None:
    """Draw a pipeline's stage and artifact graph as SVG (default: the Super 3.5 pipeline)."""
    from recipekit.lineage.drawing import draw_svg

    svg = draw_svg(_pipeline(pipeline))
    if out is None:
        click.echo(svg, nl=False)
        return
    out.write_text(svg)
    click.echo(f"wrote {out}")


@cli.command()
@click.argument("target", metavar="FOLDER|FILE.py|TARGET")
@click.option(
    "--html",
    "html_file",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the report here: one HTML file, everything inline (no network to view it).",
)
@click.option(
    "--diff-base",
    metavar="REV",
    help="Add `recipekit diff REV`'s key-by-key changes (a pull request's base).",
)
@click.option(
    "--cluster",
    metavar="NAME",
    help="Draw the lineage with each stage's status on this cluster profile (its runs and "
    "artifact store); without it, the lineage alone.",
)
@reports_recipe_errors
def report(target: str, html_file: Path, diff_base: str | None, cluster: str | None) -> None:
    """One self-contained HTML report of a chain (a recipe folder) or of one stage, for review.

    It holds the plan summary, the memory per phase as bars with the limit, the parallel
    layout, the pipeline's lineage (with status, --cluster) and, with --diff-base, the compiled
    plans' changes.

    \b
      recipekit report recipes/super35 --html super35.html
      recipekit report recipes.super35.rl:rlvr --html rlvr.html --diff-base origin/main
    """
    from recipekit.pipeline.chain import load_chain, plan_chain
    from recipekit.review import html_report

    root = _checkout_on_path()
    sections: list[html_report.Section] = []
    path = Path(target)
    if path.exists():  # a chain: every stage of the recipe folder
        chain = load_chain(path, root)
        planned = plan_chain(chain, chain.order())
        plans = [p.plan for p in planned if p.plan is not None]
        targets = [p.target for p in planned if p.target]
        title = f"pipeline {chain.pipeline.name} ({target})"
    else:
        resolved = _resolve_target(target)
        from recipekit.plan import make_plan

        plan = make_plan(_stage(resolved))
        plans, targets, title = [plan], [resolved], f"stage {plan.stage.name} ({resolved})"
        chain, planned = _chain_of(resolved, root), []
        if chain is not None and plan.stage.name in chain.stages:
            planned = plan_chain(chain, [plan.stage.name])
    if chain is not None:
        sections.append(_lineage_section(chain, planned, cluster))
    for plan in plans:
        sections += html_report.stage_sections(plan, one_of_many=len(plans) > 1)
    if diff_base is not None:
        from recipekit.review import plandiff

        changes = plandiff.diff_revision(root, diff_base, targets, show_progress=True)
        sections.append(html_report.diff_section(f"{diff_base} -> this change", changes))
    html_file.write_text(html_report.page(title, sections))
    click.echo(f"wrote {html_file}")


def _chain_of(target: str, root: Path) -> Any:
    """The chain of the recipe folder that defines the stage ``target`` (None: it has none)."""
    from recipekit.pipeline.chain import load_chain

    module = target.split(":", 1)[0]
    folder = Path(module) if module.endswith(".py") else Path(*module.split(".")[:-1])
    try:
        return load_chain(folder.parent if folder.suffix == ".py" else folder, root)
    except RecipeError:
        return None


def _lineage_section(chain: Any, planned: list[Any], cluster: str | None) -> Any:
    from recipekit.lineage.drawing import draw_svg
    from recipekit.review.html_report import lineage_section

    if cluster is None:
        return lineage_section(draw_svg(chain.pipeline), with_status=False)
    from recipekit.launch.profiles import find_profile
    from recipekit.pipeline.status import status_svg
    from recipekit.pipeline.submit import as_submitted, chain_status

    profile = find_profile(cluster)
    # As `pipeline status` draws it: a stage not submitted is up to date by its action key.
    planned, sources = as_submitted(chain, planned, profile)
    rows = chain_status(planned, profile, sources)
    return lineage_section(status_svg(chain, planned, rows), with_status=True)


# --- data import / model import ----------------------------------------------------------------


class ImportCommand(click.Command):
    """``--help`` ends with what the pipeline's lineage says: the default artifact and the
    names ``--name`` takes (so the help never disagrees with recipes/super35/lineage.py)."""

    def __init__(self, *args: Any, group: str, kind: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.group, self.kind = group, kind

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        from recipekit.lineage.registry import default_artifact, importable

        try:
            pipeline = _pipeline(DEFAULT_PIPELINE)
            default = default_artifact(pipeline, self.group, self.kind)
        except RecipeError as exc:
            formatter.write_paragraph()
            formatter.write_text(f"(the default pipeline cannot be read: {exc.render()})")
            return
        formatter.write_paragraph()
        formatter.write_text(f"Registers {default} by default ({pipeline.name} lineage).")
        formatter.write_text(f"--name takes any of its {self.group} artifacts:")
        with formatter.indentation():
            for name in importable(pipeline, self.group):
                formatter.write_text(name)


def _import_options(fn: Any) -> Any:
    options = [
        *STORE_LOCATION,
        click.option(
            "--name",
            metavar="NAME",
            help="The artifact to register, if not the command's default (see below).",
        ),
        click.option(
            "--pipeline",
            "pipeline_target",
            metavar="MODULE:ATTR",
            default=DEFAULT_PIPELINE,
            show_default=True,
            help="The pipeline whose artifacts NAME must be one of.",
        ),
        click.option(
            "--project",
            envvar="WANDB_PROJECT",
            default="nemotron",
            show_default=True,
            help=(
                "W&B project (env WANDB_PROJECT; the Nemotron 3.5 Super recipe's env.toml uses "
                "nemotron)."
            ),
        ),
        click.option("--entity", envvar="WANDB_ENTITY", help="W&B entity (env WANDB_ENTITY)."),
        click.option(
            "--mode",
            envvar="WANDB_MODE",
            type=click.Choice(["online", "offline"]),
            default="online",
            show_default=True,
            help="online needs WANDB_API_KEY; offline writes the run under ./wandb (or "
            "$WANDB_DIR) for `wandb sync` later (env WANDB_MODE).",
        ),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def _register(
    group: str,
    kind: str,
    paths: dict[str, Path],
    name: str | None,
    pipeline_target: str,
    project: str,
    entity: str | None,
    mode: str,
    cluster: str | None,
    store_path: Path | None,
    entries: dict[str, str] | None = None,
    tokenizer: Path | None = None,
) -> None:
    """Register ``paths`` (role -> path) as the next version of the artifact in the store the
    stages read, and in W&B. ``entries`` places a role's path in the version (the file names
    a stage reads); by default a directory's contents land at the version's top. Everything
    that can refuse (names, paths, the store, its filesystem, W&B credentials) does before
    anything is written."""
    from recipekit.lineage.registry import (
        IMPORT_FIX,
        choose_artifact,
        import_artifact,
        import_command,
        source_paths,
    )
    from recipekit.lineage.store import import_version, link_problem, read_marker
    from recipekit.lineage.tracking import check_credentials

    pipeline = _pipeline(pipeline_target)
    artifact = choose_artifact(pipeline, group, kind, name)
    command = import_command(pipeline, group, kind) + (f" --name {name}" if name else "")
    sources = source_paths(paths)
    root = store_root(cluster, store_path)
    # The version is made of hard links to PATH's files: terabytes of data are registered
    # where they are, never copied, and a link cannot leave its filesystem.
    off_store = [
        Issue(
            f"{role} path",
            problem,
            hint=f"move or copy it onto the store's filesystem (under {root.parent}) first",
        )
        for role, path in sources.items()
        if (problem := link_problem(root, path))
    ]
    if off_store:
        raise RecipeError(off_store, context=f"{group} import: nothing registered")
    check_credentials(mode, other_fixes=IMPORT_FIX)
    layout = {(entries or {}).get(role, ""): path for role, path in sources.items()}
    imported: dict[str, Any] = {
        "command": command,
        "sources": {role: str(p) for role, p in sources.items()},
    }
    meta: dict[str, Any] = {"imported": imported}
    if group == "data" and kind == "rl":
        # Read whole before the store writes anything: a row the framework would fail on is
        # refused here, not hours into the run (issue 43).
        meta["content"] = _checked_rl_data(root, pipeline, artifact, layout, tokenizer)
    if group == "data" and kind == "sft":
        from recipekit.datacheck import check_energon_dataset

        # Megatron-Bridge's Energon data: its .nv-meta, every shard's headers and the first
        # samples of each, read before the store writes anything (issue 43).
        meta["content"] = check_energon_dataset(sources["data"], what="data import sft: reading")
    version = import_version(root, artifact, layout, link=True, meta=meta)
    where = root / artifact / version.path
    marker = read_marker(root / artifact, version.version) or {}
    digest = str(marker.get("meta", {}).get("manifest_digest", ""))
    stored = {"version": f"v{version.version}", "path": str(where), "manifest_digest": digest}
    run_dir = import_artifact(
        artifact, paths, command=command, mode=mode, project=project, entity=entity,
        stored=stored,
    )  # fmt: skip
    click.echo(f"{artifact}:v{version.version} (latest) = {where}  (manifest {digest[:12]})")
    for entry, path in sources.items():
        click.echo(f"{artifact}:latest  {entry}: {path.as_uri()} (referenced in W&B)")
    click.echo(f"W&B run: {run_dir}")
    if mode == "offline":
        click.echo(f"upload it with: wandb sync {run_dir}")


PATH_ARGUMENT = click.argument("path", type=click.Path(path_type=Path))


def _checked_rl_data(
    root: Path,
    pipeline: Any,
    artifact: str,
    layout: dict[str, Path],
    tokenizer: Path | None,
) -> dict[str, Any]:
    """``data import rl``'s files checked against the pinned reader and the Gym configs of the
    stages that read ``artifact``; their statistics, token lengths with ``tokenizer`` or else
    the reading stage's model's tokenizer.json in the store where it has one."""
    from recipekit.datacheck import check_rl_files, gym_of_readers
    from recipekit.datacheck.readers import reading_stages, stage_tokenizer

    stages = reading_stages(pipeline, artifact)
    if tokenizer is None:
        tokenizer = stage_tokenizer(root, stages)
    return check_rl_files(
        layout, gym=gym_of_readers(stages), tokenizer=tokenizer, what="data import rl: reading"
    )


# Where `data import rl` puts its files in the version: the names the RL stages read
# (recipes/super35/rl.py: data.train.data_path = RunInput("data", "train.jsonl")).
RL_DATA_FILES = {"train": "train.jsonl", "val": "val.jsonl"}

IMPORT_STORE_NOTE = (
    "The version is made of hard links to PATH's files, so PATH must be on the store's "
    "filesystem (nothing is copied; change the files in place and the version is damaged: "
    "`recipekit store verify` says so). W&B records a reference to PATH; nothing is uploaded."
)


def _with_store_note(command: click.Command) -> None:
    command.help = f"{inspect.cleandoc(command.help or '')}\n\n{IMPORT_STORE_NOTE}"


@cli.group()
def data() -> None:
    """Register your own data as the artifact versions the stages read.

    The SFT and RL data used for Super 3.5 is not public: every stage runs on data you
    register under the artifact name it reads (`recipekit lineage` draws which). An import
    is the next version of that artifact in the cluster's artifact store (--cluster NAME, or
    --store PATH), with a manifest of every file, and a W&B dataset artifact: the stage that
    reads it then plans and submits with no other step.
    """


@data.group(name="import")
def data_import() -> None:
    """Register data at PATH in the artifact store (hard links) and as a W&B dataset."""


@data_import.command(name="sft", cls=ImportCommand, group="data", kind="sft")
@PATH_ARGUMENT
@_import_options
@reports_recipe_errors
def data_import_sft(path: Path, **options: Any) -> None:
    """Register Energon SFT data (a directory on the store's filesystem) as the next version
    of a dataset artifact; stages read NAME:latest (pinned to that version by `pipeline`).

    \b
    recipekit data import sft /lustre/.../energon/stage1 --cluster gb200-nvl72
    recipekit data import sft /lustre/.../energon/stage2 --cluster gb200-nvl72
        --name super35-sft-stage2-data

    The dataset is read first, as Energon and Megatron-Bridge read it: its .nv-meta (info,
    split.yaml, dataset.yaml), every shard it counts (present, not truncated, its samples and
    .tar.idx as recorded) and the first samples of each shard decoded. A failure is refused
    naming the file, shard or sample and the rule, exit 2, nothing registered. Samples per
    split go into the version's manifest.
    """
    _register("data", "sft", {"data": path}, **options)


_with_store_note(data_import_sft)


@data_import.command(name="rl", cls=ImportCommand, group="data", kind="rl")
@PATH_ARGUMENT
@click.option(
    "--val",
    type=click.Path(path_type=Path),
    help="Validation data (JSONL), the version's val.jsonl.",
)
@click.option(
    "--tokenizer",
    type=click.Path(path_type=Path),
    help="A tokenizer.json (or a folder holding one) to count prompt tokens with; by default "
    "the reading stage's model's, where the store holds it.",
)
@_import_options
@reports_recipe_errors
def data_import_rl(path: Path, val: Path | None, tokenizer: Path | None, **options: Any) -> None:
    """Register RL prompts (JSONL on the store's filesystem) as the next version of a dataset
    artifact: PATH is its train.jsonl, --val its val.jsonl (the files the RL stages read).

    \b
    recipekit data import rl /lustre/.../rlvr/train.jsonl --val /lustre/.../rlvr/val.jsonl
        --cluster gb200-nvl72

    Every line is read first (a progress bar): a row the pinned NeMo-RL or NeMo Gym would fail
    on (not JSON, a missing or wrong-typed field, an agent the stage's Gym config does not
    define, a missing image) is refused naming file, line and field, exit 2, nothing
    registered. Rows per agent and prompt lengths go into the version's manifest; `pipeline
    plan` reads them there.
    """
    paths = {"train": path, **({"val": val} if val is not None else {})}
    folders = [
        Issue(f"{role} path", "is a directory", value=str(p), hint="give the JSONL file")
        for role, p in paths.items()
        if p.is_dir()
    ]
    if folders:
        raise RecipeError(folders, context="data import rl")
    _register("data", "rl", paths, entries=RL_DATA_FILES, tokenizer=tokenizer, **options)


_with_store_note(data_import_rl)


@cli.group()
def model() -> None:
    """Register a checkpoint trained elsewhere as the artifact version a stage reads."""


@model.group(name="import")
def model_import() -> None:
    """Register the checkpoint at PATH in the artifact store (hard links) and as a W&B model.

    Each stage reads `:latest` of its input artifact (or a pinned version, --set
    run.model=NAME:v3); `recipekit pipeline` pins the version it resolved.
    """


def _model_import(kind: str, what: str) -> None:
    @model_import.command(name=kind, cls=ImportCommand, group="model", kind=kind)
    @PATH_ARGUMENT
    @_import_options
    @reports_recipe_errors
    def register(path: Path, **options: Any) -> None:
        _register("model", kind, {"checkpoint": path}, **options)

    register.help = (
        f"Register {what} checkpoint (a directory on the store's filesystem) as the next "
        "version of a model artifact; stages read NAME:latest.\n\n"
        f"{IMPORT_STORE_NOTE}\n\n"
        f"\b\nrecipekit model import {kind} /lustre/.../checkpoints/{kind} --cluster gb200-nvl72"
    )


for _kind, _what in (
    ("pretrain", "a pretrained"),
    ("sft", "a supervised fine-tuned"),
    ("rl", "an RL-trained"),
):
    _model_import(_kind, _what)


# The commands a job script runs on the nodes: `pipeline submit` makes this Pex the launcher
# of every run it stages.
for _command in IN_ALLOCATION:
    cli.add_command(_command)

cli.add_command(pipeline)
cli.add_command(store)
cli.add_command(upgrade)


def main() -> None:
    from recipekit.launch.launcher_venv import leave_launcher_venv

    leave_launcher_venv(os.environ)
    common.RUNS_AS_MAIN = True
    cli.main(prog_name="recipekit")
