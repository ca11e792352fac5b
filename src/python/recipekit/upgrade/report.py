"""The upgrade's report: Markdown for a pull request, grouped by the decisions a reviewer makes.

Each item that needs a decision carries a *subject* (``rule changed nemo-rl.grpo...``); once
its decision is recorded (``decisions.py``) the report shows the note instead, and a run whose
every item is decided exits 0.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import attrs

from recipekit.review import keydiff
from recipekit.upgrade.decisions import note_for
from recipekit.upgrade.keys import KeyChange
from recipekit.upgrade.run import Outcome

# Shown per table before "... and N more".
ROWS = 200


@attrs.frozen
class Decision:
    subject: str
    detail: str


def decisions(outcome: Outcome) -> list[Decision]:
    """Every item a reviewer must decide, in report order."""
    out: list[Decision] = []
    for failure in outcome.failed:
        out.append(Decision(f"regenerate {failure.split(':')[0]}", failure))
    if outcome.compile_error:
        out.append(Decision("recipes compile", outcome.compile_error.strip()[-600:]))
    for rule, changed in outcome.rules.changed:
        out.append(Decision(f"rule changed {rule.id}", f"{rule.file}:{changed.new.line}"))
    for rule, vanished in outcome.rules.vanished:
        out.append(Decision(f"rule vanished {rule.id}", f"{rule.file} (was :{vanished.old.line})"))
    for rule in outcome.rules.file_gone:
        out.append(Decision(f"rule vanished {rule.id}", f"{rule.file} is gone"))
    for path, site in outcome.rules.new_sites:
        out.append(Decision(f"new site {path} {site.anchor}", f"{path}:{site.line}"))
    for path in outcome.files_gone:
        out.append(Decision(f"file gone {path}", "the new commit has no such file"))
    for stage in outcome.stages:
        if stage.errors_after and stage.errors_after != stage.errors_before:
            out.append(Decision(f"stage error {stage.stage}", stage.errors_after.strip()))
        elif stage.config or stage.warnings_added:
            out.append(
                Decision(
                    f"stage changes {stage.stage}",
                    f"{len(stage.config)} config keys, {len(stage.warnings_added)} new warnings",
                )
            )
    for change in outcome.keys:
        if change.kind == "added":
            continue
        if change.dotted:
            users = outcome.key_users.get(change.dotted, ())
            migrated = any(m.old_key == change.dotted and m.applied for m in outcome.migrations)
            if users and not migrated and change.where in outcome.used_configs:
                out.append(Decision(f"key {change.kind} {change.dotted}", _key_text(change)))
        elif change.where in outcome.modelled and change.kind not in ("added", "class added"):
            # A whole class is named by itself; a key by its class and name.
            what = (
                change.where if change.kind.startswith("class") else f"{change.where}.{change.key}"
            )
            out.append(Decision(f"declared {change.kind} {what}", _key_text(change)))
    for migration in outcome.migrations:
        if not migration.applied:
            out.append(
                Decision(
                    f"migration {migration.old_key} -> {migration.new_key}",
                    f"{migration.why}: {', '.join(migration.files)}",
                )
            )
    unique: dict[str, Decision] = {}
    for decision in out:
        if decision.subject in unique:
            first = unique[decision.subject]
            if decision.detail not in first.detail:
                unique[decision.subject] = Decision(
                    first.subject, f"{first.detail}; {decision.detail}"
                )
        else:
            unique[decision.subject] = decision
    return list(unique.values())


def undecided(outcome: Outcome) -> list[Decision]:
    recorded = dict(outcome.recorded)
    return [d for d in decisions(outcome) if note_for(recorded, d.subject) is None]


def _key_text(change: KeyChange) -> str:
    if change.kind == "renamed":
        return f"{change.key} -> {change.renamed_to} ({change.evidence})"
    if change.kind == "class moved":
        return f"now {change.renamed_to}"
    if change.kind in ("type changed", "default changed"):
        return f"{change.key}: {change.old} -> {change.new}"
    return change.key


def markdown(outcome: Outcome) -> str:
    return "\n".join(_markdown(outcome)) + "\n"


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _table(
    header: list[str], rows: Sequence[Sequence[object]], *, rows_shown: int = ROWS
) -> Iterator[str]:
    if not rows:
        yield "None."
        return
    yield "| " + " | ".join(header) + " |"
    yield "|" + "---|" * len(header)
    for row in rows[:rows_shown]:
        yield "| " + " | ".join(_cell(c) for c in row) + " |"
    if len(rows) > rows_shown:
        yield f"\n... and {len(rows) - rows_shown} more."


def _markdown(outcome: Outcome) -> Iterator[str]:
    pending = undecided(outcome)
    recorded = outcome.recorded
    old, new = outcome.old_commit[:12], outcome.new_commit[:12]
    yield f"# Upgrade of `{outcome.label}`: `{old}` -> `{new}`"
    yield ""
    total = len(decisions(outcome))
    yield (
        f"{len(outcome.files_changed)} pinned files changed, {len(outcome.files_gone)} gone. "
        f"{total} items need a decision; {total - len(pending)} are recorded, "
        f"{len(pending)} are open."
    )
    if outcome.regenerated:
        yield ""
        yield "Regenerated: " + ", ".join(f"`{r}`" for r in outcome.regenerated) + "."
    yield ""
    yield "## Decisions open"
    yield ""
    yield from _table(
        ["subject", "detail"],
        [[f"`{d.subject}`", d.detail] for d in pending],
        rows_shown=len(pending),
    )
    if recorded:
        yield ""
        yield "## Decisions recorded"
        yield ""
        yield from _table(["subject", "note"], [[f"`{s}`", n] for s, n in sorted(recorded.items())])

    yield ""
    yield "## Upstream keys"
    yield ""
    yield "### Declared by config classes"
    yield ""
    declared = [c for c in outcome.keys if not c.dotted]
    yield from _table(
        ["change", "class", "key", "before", "after / evidence"],
        [
            [
                c.kind,
                f"`{c.where}`",
                f"`{c.key}`",
                c.old,
                c.renamed_to + " " + c.evidence if c.kind == "renamed" else c.new,
            ]
            for c in declared
        ],
    )
    yield ""
    yield "### Given by the pinned configs"
    yield ""
    given = [c for c in outcome.keys if c.dotted]
    yield from _table(
        ["change", "config", "key", "before", "after / evidence", "stages and recipes"],
        [
            [
                c.kind,
                f"`{c.where}`",
                f"`{c.key}`",
                c.old,
                f"`{c.renamed_to}` ({c.evidence})" if c.kind == "renamed" else c.new,
                ", ".join(outcome.key_users.get(c.dotted, ())) or "none",
            ]
            for c in given
        ],
    )

    yield ""
    yield "## Rules"
    yield ""
    changes = outcome.rules
    yield (
        f"{changes.unmoved} in place, {len(changes.moved)} moved (re-anchored: the line is "
        f"derived), {len(changes.changed)} changed, "
        f"{len(changes.vanished) + len(changes.file_gone)} vanished, "
        f"{len(changes.new_sites)} new failure sites on config values."
    )
    yield ""
    yield "### Changed (condition or message differs: review)"
    yield ""
    yield from _table(
        ["rule", "where", "before", "after"],
        [
            [f"`{r.id}`", f"{r.file}:{c.new.line}", f"`{c.old.shown}`", f"`{c.new.shown}`"]
            for r, c in changes.changed
        ],
    )
    yield ""
    yield "### Vanished"
    yield ""
    yield from _table(
        ["rule", "was"],
        [[f"`{r.id}`", f"{r.file}:{v.old.line} `{v.old.shown}`"] for r, v in changes.vanished]
        + [[f"`{r.id}`", f"{r.file} (file gone)"] for r in changes.file_gone],
    )
    yield ""
    yield "### New failure sites no entry covers (triage)"
    yield ""
    yield from _table(
        ["where", "kind", "statement"],
        [[f"{p}:{s.line}", s.kind, f"`{s.shown[:200]}`"] for p, s in changes.new_sites],
    )
    yield ""
    yield "### Moved"
    yield ""
    yield from _table(
        ["rule", "file", "from", "to"],
        [
            [f"`{r.id}`", r.file if f == r.file else f"{r.file} -> {f}", m.old.line, m.new.line]
            for r, m, f in changes.moved
        ],
    )

    yield ""
    yield "## Stages"
    yield ""
    if outcome.compile_error:
        yield "The recipes do not compile after the upgrade:"
        yield ""
        yield "```"
        yield outcome.compile_error.strip()[-3000:]
        yield "```"
    elif not outcome.stages:
        yield "No stage's compiled plan changes."
    stale = [f.split(":")[0] for f in outcome.failed if f.startswith("import-yaml --base")]
    if stale:
        yield ""
        yield (
            "Stages that start from a typed base the upgrade could not write again compiled "
            "from the old one: " + ", ".join(f"`{s}`" for s in stale) + "."
        )
    for stage in outcome.stages:
        yield f"### `{stage.stage}` ({stage.target})"
        yield ""
        if stage.errors_after != stage.errors_before:
            yield "Plan errors after the upgrade:" if stage.errors_after else "Plan errors gone:"
            yield ""
            yield "```"
            yield (stage.errors_after or stage.errors_before).rstrip()
            yield "```"
            yield ""
        for title, items in (
            ("Warnings that appear", stage.warnings_added),
            ("Warnings that go", stage.warnings_gone),
        ):
            if items:
                yield f"{title}:"
                yield ""
                yield from (f"- {_cell(w)}" for w in items)
                yield ""
        if stage.memory:
            yield "Memory (GiB a GPU, by phase):"
            yield ""
            yield "```"
            yield from keydiff.changes_text(list(stage.memory))
            yield "```"
            yield ""
        if stage.config:
            yield f"Compiled plan ({len(stage.config)} keys):"
            yield ""
            yield "```"
            yield from keydiff.changes_text(list(stage.config))
            yield "```"
            yield ""

    yield ""
    yield "## Migrations"
    yield ""
    yield from _table(
        ["key", "renamed to", "files", "applied"],
        [
            [
                f"`{m.old_key}`",
                f"`{m.new_key}`",
                ", ".join(m.files),
                "yes" if m.applied else f"no: {m.why}",
            ]
            for m in outcome.migrations
        ],
    )


def html(outcome: Outcome) -> str:
    """The same report as one page of recipekit's HTML report (``recipekit.review.html_report``)."""
    from html import escape

    from recipekit.review.html_report import Section, diff_section, page

    def table(header: list[str], rows: Sequence[Sequence[object]]) -> str:
        if not rows:
            return "<p>None.</p>"
        head = "".join(f"<th>{escape(h)}</th>" for h in header)
        body = "".join(
            "<tr>" + "".join(f"<td>{escape(str(c))}</td>" for c in row) + "</tr>" for row in rows
        )
        return f"<table><tr>{head}</tr>{body}</table>"

    recorded = dict(outcome.recorded)
    every = decisions(outcome)
    changes = outcome.rules
    sections = [
        Section(
            "decisions",
            f"Decisions ({len(undecided(outcome))} open of {len(every)})",
            table(
                ["subject", "detail", "decision"],
                [[d.subject, d.detail, note_for(recorded, d.subject) or "open"] for d in every],
            ),
        ),
        Section(
            "keys",
            "Upstream keys",
            table(
                ["change", "where", "key", "before", "after / evidence"],
                [
                    [c.kind, c.where, c.key, c.old, f"{c.renamed_to} {c.evidence}".strip() or c.new]
                    for c in outcome.keys
                ],
            ),
        ),
        Section(
            "rules",
            "Rules",
            table(
                ["decision", "rule", "where", "before", "after"],
                [
                    ["changed", r.id, f"{r.file}:{c.new.line}", c.old.shown, c.new.shown]
                    for r, c in changes.changed
                ]
                + [
                    ["vanished", r.id, f"{r.file}:{v.old.line}", v.old.shown, ""]
                    for r, v in changes.vanished
                ]
                + [["new site", "", f"{p}:{s.line}", "", s.shown] for p, s in changes.new_sites]
                + [
                    ["moved", r.id, f"{f}:{m.new.line}", f"{r.file}:{m.old.line}", ""]
                    for r, m, f in changes.moved
                ],
            ),
        ),
        diff_section(
            f"{outcome.label} {outcome.old_commit[:12]} -> {outcome.new_commit[:12]}",
            {stage.stage: list(stage.config) for stage in outcome.stages},
        ),
        Section(
            "migrations",
            "Migrations",
            table(
                ["key", "renamed to", "files", "applied"],
                [
                    [m.old_key, m.new_key, ", ".join(m.files), "yes" if m.applied else m.why]
                    for m in outcome.migrations
                ],
            ),
        ),
    ]
    return page(f"Upgrade of {outcome.label}", sections)
