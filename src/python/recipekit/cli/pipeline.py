"""``recipekit pipeline``: plan, submit and follow a chain of stages (a recipe folder).

The recipe's stages never chain by themselves: each is submitted on its own, reading ``:latest``
of what the one before published. ``pipeline`` is the opt-in way to run a chain.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from recipekit.cli.common import format_option, reports_recipe_errors

FOLDER = click.argument(
    "folder", type=click.Path(exists=True, path_type=Path), metavar="FOLDER|FILE.py"
)
RANGE = [
    click.option("--from", "start", metavar="STAGE", help="Start at STAGE (and what needs it)."),
    click.option("--until", metavar="STAGE", help="End at STAGE (and what it needs)."),
    click.option(
        "--set",
        "overrides",
        multiple=True,
        metavar="STAGE:PATH=VALUE",
        help="Override one stage's key or input, e.g. --set rlvr:grpo.max_num_steps=200 or "
        "--set teacher-vision:run.model=super35-rl-rlvr-model:step-130.",
    ),
]


def _range(fn: Any) -> Any:
    for option in reversed(RANGE):
        fn = option(fn)
    return fn


def _chain(folder: Path) -> Any:
    from recipekit.pipeline.chain import load_chain

    root = Path.cwd()
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    return load_chain(folder, root)


@click.group()
def pipeline() -> None:
    """Run a recipe folder's stages as one chain (e.g. recipes/super35).

    \b
      recipekit pipeline plan recipes/super35 --until eval
      recipekit pipeline submit recipes/super35 --cluster gb200_nvl72 \
          --from rlvr --until mopd-single-stage
      recipekit pipeline status recipes/super35 --cluster gb200_nvl72

    Stages run in dependency order, each as its own Slurm job that waits (afterok) for the jobs
    of the stages it reads from, and reads its inputs from the artifact store when it starts.
    """


RERUN = click.option(
    "--rerun",
    multiple=True,
    metavar="STAGE",
    help="Run STAGE even when it is up to date (and so its readers).",
)
STEP_TIMES = click.option(
    "--step-time",
    "step_times",
    multiple=True,
    metavar="STAGE=SECONDS",
    help="Seconds a training step of STAGE takes on this cluster (repeat per stage): the plan "
    "says how many continuations to expect, and submit refuses, before anything is "
    "submitted, a stage needing more than Slurm's MaxBatchRequeue. Default: measured in an "
    "earlier attempt of the stage on this cluster.",
)


def _step_times(given: tuple[str, ...], chain: Any) -> dict[str, float]:
    """``STAGE=SECONDS`` options as stage -> seconds, every stage one of the chain's."""
    from recipekit.errors import Issue, RecipeError, did_you_mean

    found: dict[str, float] = {}
    issues = []
    for option in given:
        stage, sep, text = option.partition("=")
        try:
            seconds = float(text) if sep else 0.0
        except ValueError:
            seconds = 0.0
        if not sep or not seconds > 0 or seconds == float("inf"):
            issues.append(Issue(f"--step-time {option}", "expected STAGE=SECONDS, seconds > 0"))
        elif stage not in chain.stages:
            issues.append(
                Issue(
                    f"--step-time {option}",
                    f"no stage {stage!r} in pipeline {chain.pipeline.name}",
                    hint=did_you_mean(stage, chain.stages),
                )
            )
        else:
            found[stage] = seconds
    if issues:
        raise RecipeError(issues, context="pipeline")
    return found


STORE_CLUSTER = click.option(
    "--cluster",
    metavar="NAME",
    help="Read the artifact store of this cluster profile: which stages are up to date.",
)


@pipeline.command(name="plan")
@FOLDER
@_range
@STORE_CLUSTER
@RERUN
@STEP_TIMES
@format_option
@reports_recipe_errors
def plan_command(
    folder: Path,
    start: str | None,
    until: str | None,
    overrides: tuple[str, ...],
    cluster: str | None,
    rerun: tuple[str, ...],
    step_times: tuple[str, ...],
    output_format: str,
) -> None:
    """Plan every stage of the chain, in order: inputs, selected steps, hash, nodes, and its
    action key: up to date (the version), or why it runs (with --cluster, the store is read,
    and each stage that runs says how it runs there: Ray's wait, its save deadline, the
    continuations to expect)."""
    from recipekit.datacheck.plan import chain_findings
    from recipekit.errors import RecipeError
    from recipekit.pipeline.actions import NoStore, damaged_inputs, plan_actions
    from recipekit.pipeline.chain import plan_chain
    from recipekit.pipeline.submit import chain_images, chain_records
    from recipekit.pipeline.tokenizers import tokenizer_warnings

    chain = _chain(folder)
    steps = _step_times(step_times, chain)
    profile = _find_profile(cluster)
    records = chain_records(profile)
    stored = records.names() if records is not None else None
    planned = plan_chain(chain, chain.between(start, until), overrides, stored=stored)
    images = chain_images(profile) if profile is not None else None
    actions = plan_actions(chain, planned, records or NoStore(), rerun=rerun, images=images)
    damaged = damaged_inputs(records.root, actions) if records is not None else []
    if damaged:
        raise RecipeError(damaged, context="pipeline plan: a stage would read a damaged input")
    # What the data versions' recorded statistics mean for the stages that read them (issue
    # 43): read from their manifests, never the files.
    data = chain_findings(records.root, planned, actions) if records is not None else None
    if data is not None and data.errors:
        raise RecipeError(list(data.errors), context="pipeline plan: the framework would fail")
    notes = [] if data is None else [issue.render() for issue in data.notes]
    # A tokenizer or chat template that changes from a stage to the next (issue 43): a warning.
    lineage = [issue.render() for issue in tokenizer_warnings(planned)]
    if output_format == "json":
        pairs = zip(planned, actions, strict=True)
        rows = [{**p.as_json(), "action": a.as_json()} for p, a in pairs]
        shown = {"pipeline": chain.pipeline.name, "stages": rows, "data": notes, "lineage": lineage}
        click.echo(json.dumps(shown, indent=2))
        return
    click.echo(f"pipeline {chain.pipeline.name} ({folder}): {len(planned)} stages in order\n")
    for number, (entry, action) in enumerate(zip(planned, actions, strict=True), start=1):
        click.echo(_stage_lines(number, entry))
        click.echo(_action_lines(action, entry.lineage.output))
        if profile is not None and action.runs:
            click.echo(_run_lines(entry, profile, steps.get(entry.name)))
    if notes:
        click.echo("\ndata (the versions' recorded statistics):")
        click.echo("\n".join(f"  {note}" for note in notes))
    if lineage:
        click.echo("\nlineage (the tokenizer and chat template from stage to stage):")
        click.echo("\n".join(f"  WARNING: {warning}" for warning in lineage))
    if records is None:
        click.echo("\n(no artifact store read: give --cluster to see which stages are up to date)")


def _find_profile(cluster: str | None) -> Any:
    from recipekit.launch.profiles import find_profile

    return find_profile(cluster) if cluster else None


def _action_lines(action: Any, output: str | None) -> str:
    from recipekit.review.keydiff import changes_text

    key = (action.key or "")[:12]
    if not action.runs:
        return f"       {'UP TO DATE':<26} {output}:v{action.version}, key {key}"
    lines = [f"       {'RUNS':<26} {action.reason}, key {key}"]
    lines += changes_text(list(action.changes), indent="         ")
    lines += [f"         {change}" for change in action.changed_inputs]
    return "\n".join(lines)


def _run_lines(entry: Any, profile: Any, step_time: float | None) -> str:
    """How a stage that runs will run on the profile (``recipekit plan --cluster``'s block)."""
    from recipekit.launch.time_budget import run_outline
    from recipekit.pipeline.submit import profile_for_stage

    if entry.plan is None or entry.plan.stage.framework.launch == "delegated":
        return ""
    lines = run_outline(entry.plan, profile_for_stage(entry, profile), step_time_s=step_time)
    return "\n".join(f"         {line}" for line in lines)


def _stage_lines(number: int, entry: Any) -> str:
    from recipekit.lineage.refs import ArtifactRef, artifact_path

    plan, lineage = entry.plan, entry.lineage
    if plan is None:
        head = "(no recipe: cannot run)"
    else:
        hw = plan.stage.hardware
        launch = plan.stage.framework.launch
        head = f"{hw.num_nodes} x {hw.node.name}, {launch}, plan {plan.hash[:12]}"
    lines = [f"{number:>3}. {entry.name:<34} {head}"]
    if lineage.blocked:
        lines.append(f"       BLOCKED: {lineage.blocked}")
    for role, source in lineage.inputs.items():
        where = f"  {artifact_path(source)}" if isinstance(source, ArtifactRef) else ""
        lines.append(f"       {role:<26} <- {source}{where}")
    if lineage.output is not None:
        kept = ", ".join(f"step-{s}" for s in lineage.keep_steps)
        note = f"  (keeps {kept}: later stages select it)" if kept else ""
        lines.append(f"       {'output':<26} -> {lineage.output}{note}")
    elif lineage.output_note:
        lines.append(f"       {'output':<26} -> {lineage.output_note}")
    return "\n".join(lines)


CLUSTER = click.option(
    "--cluster",
    required=True,
    metavar="NAME",
    help="A cluster profile: a name from recipes/clusters.py, or MODULE:ATTR / FILE.py:ATTR.",
)


@pipeline.command(name="submit")
@FOLDER
@CLUSTER
@_range
@RERUN
@STEP_TIMES
@reports_recipe_errors
def submit_command(
    folder: Path,
    cluster: str,
    start: str | None,
    until: str | None,
    overrides: tuple[str, ...],
    rerun: tuple[str, ...],
    step_times: tuple[str, ...],
) -> None:
    """Submit the stages that run: one job each, after the jobs of the stages it reads from.

    A stage whose action key and input versions already made a whole version of its output is
    up to date and not submitted; the stages reading it are pinned to that version. --rerun
    STAGE runs one anyway.

    A stage whose framework submits its own job (evaluation) has its client run here, told to
    make that job wait for the stages it reads from (afterok).

    Refuses before anything is submitted: a blocked stage, a stage with no recipe, a stage the
    cluster cannot run, a delegated stage whose client is not here or that a later stage
    reads from, an artifact store that is not mounted here, or a stage that would need more
    continuations than the cluster requeues a job (where its step time is known: --step-time,
    or measured in an earlier attempt).
    """
    from recipekit.launch.profiles import find_profile
    from recipekit.pipeline.submit import submit_chain

    chain = _chain(folder)
    submitted, actions = submit_chain(
        chain,
        chain.between(start, until),
        find_profile(cluster),
        overrides,
        echo=lambda line: click.echo(f"  | {line}"),
        rerun=rerun,
        step_times=_step_times(step_times, chain),
    )
    for action in actions:
        if not action.runs:
            output = chain.stages[action.stage].lineage.output
            key = (action.key or "")[:12]
            click.echo(f"{action.stage:<34} up to date: {output}:v{action.version}, key {key}")
    for entry in submitted:
        after = f" after {', '.join(entry.after)}" if entry.after else ""
        job = f"job {entry.job_id}" if entry.job_id else f"handed to {entry.delegated_to}"
        click.echo(f"{entry.name:<34} {job}{after}  {entry.run.path}")


@pipeline.command(name="status")
@FOLDER
@CLUSTER
@_range
@format_option
@click.option(
    "--svg",
    "svg_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also draw the lineage with each stage coloured by its state, as SVG.",
)
@click.option(
    "--html",
    "html_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also write that drawing and this text as one self-contained HTML page.",
)
@reports_recipe_errors
def status_command(
    folder: Path,
    cluster: str,
    start: str | None,
    until: str | None,
    overrides: tuple[str, ...],
    output_format: str,
    svg_file: Path | None,
    html_file: Path | None,
) -> None:
    """Each stage's job and state, and the versions of its output in the artifact store.

    A stage is shown as the last `pipeline submit` that covered it left it (its record beside
    the runs): the job it submitted, or up to date, naming the older job that made its
    version. A stage no submission covered is up to date only when its action key says so.

    --svg/--html draw the whole pipeline from the same records: up to date, queued, running,
    done, failed, lost node and requeued, blocked or skipped, with each stage's job id, elapsed
    time, newest saved step of its total and newest store version.
    """
    from recipekit.launch.profiles import find_profile
    from recipekit.pipeline.chain import plan_chain
    from recipekit.pipeline.submit import as_submitted, chain_status

    chain = _chain(folder)
    planned = plan_chain(chain, chain.between(start, until), overrides)
    profile = find_profile(cluster)
    planned, sources = as_submitted(chain, planned, profile, overrides)
    rows = chain_status(planned, profile, sources)
    text = "\n".join(_status_lines(rows))
    if output_format == "json":
        click.echo(json.dumps(rows, indent=2))
    else:
        click.echo(text)
    if svg_file is None and html_file is None:
        return
    from recipekit.pipeline.status import status_svg

    svg = status_svg(chain, planned, rows)
    if svg_file is not None:
        svg_file.write_text(svg)
        click.echo(f"wrote {svg_file}", err=True)
    if html_file is not None:
        from recipekit.review.html_report import lineage_section, page, text_section

        title = f"pipeline {chain.pipeline.name}: status on {cluster}"
        sections = [lineage_section(svg, with_status=True), text_section("status", "Jobs", text)]
        html_file.write_text(page(title, sections))
        click.echo(f"wrote {html_file}", err=True)


def _status_lines(rows: list[dict[str, Any]]) -> list[str]:
    lines = []
    for row in rows:
        job = f"job {row['job']} {row['state']}" if row["job"] else row["state"]
        action = row.get("action")
        if not row["job"] and action is not None and not action["runs"]:
            job = f"up to date ({action.get('version', 'its output')}), not submitted"
            if row.get("made_by"):
                job += f"; made by job {row['made_by']['job']}"
        if row.get("restarts"):
            job += f" (requeued and restarted {row['restarts']} time(s))"
        if row.get("lost_nodes"):
            job += f"; lost node(s) {', '.join(row['lost_nodes'])}"
        if row.get("continued"):
            job += f"; {row['continued']}"
        lines.append(f"{row['stage']:<34} {job}")
        for version in row.get("versions", []):
            step = f" step-{version['step']}" if version["step"] is not None else ""
            kept = " (kept)" if version["kept"] else ""
            lines.append(f"       {row['output']}:{version['version']}{step}{kept}")
    return lines
