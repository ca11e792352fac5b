"""``recipekit upgrade``: move one pinned framework source to a new commit."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from recipekit.cli.common import reports_recipe_errors

EXIT_DECISIONS = 1


@click.command()
@click.argument("label")
@click.option("--to", "commit", required=True, metavar="COMMIT", help="The new commit (40 hex).")
@click.option(
    "--source",
    "source_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="A checkout (or unpacked tree) of the repository at COMMIT; without it, GitHub.",
)
@click.option(
    "--report",
    "report_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the report (Markdown) here; default: print it.",
)
@click.option(
    "--html",
    "html_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also write the report as a page of recipekit's HTML report.",
)
@reports_recipe_errors
def upgrade(
    label: str,
    commit: str,
    source_dir: Path | None,
    report_file: Path | None,
    html_file: Path | None,
) -> None:
    """Move the manifest source LABEL (e.g. nemo-rl/super-v3) to COMMIT, as a change to review.

    Run it in the checkout's root. It edits the working tree so that `git diff` is the whole
    change: the manifest's commit and blob ids, .reference/, every generated module and typed
    base read from the pinned files, and recipes that name a renamed key. It compiles every
    stage before and after, and writes one report grouped by what a reviewer decides: upstream
    keys (added, removed, renamed with evidence, defaults changed, and which stages set or
    inherit them), rules (moved: re-anchored; changed; vanished; new failure sites), stages
    (compiled-config diff, plan errors and warnings, memory), migrations.

    Record a decision in 3rdparty/reference/upgrades/<label>@<commit>.toml as
    [[decision]] subject = "<as the report prints it>", note = "<what and why>".

    \b
    Exit status: 0 nothing needs a decision (or all are recorded), 1 the report lists open
    decisions, 2 a usage error (nothing is changed).

    \b
    recipekit upgrade nemo-rl/super-v3 --to 81aa43dda4765b0429cf31dab44441e4e4383911 \\
        --source ../shared/reference/nemo-rl/v0.7.0 --report upgrade.md
    """
    from recipekit.upgrade import report
    from recipekit.upgrade.run import upgrade as run_upgrade

    outcome = run_upgrade(
        Path.cwd(), label, commit, source_dir, say=lambda line: click.echo(line, err=True)
    )
    text = report.markdown(outcome)
    if report_file is None:
        click.echo(text, nl=False)
    else:
        report_file.write_text(text)
        click.echo(f"wrote {report_file}", err=True)
    if html_file is not None:
        html_file.write_text(report.html(outcome))
        click.echo(f"wrote {html_file}", err=True)
    pending = report.undecided(outcome)
    click.echo(f"{len(pending)} decisions open", err=True)
    if pending:
        sys.exit(EXIT_DECISIONS)
