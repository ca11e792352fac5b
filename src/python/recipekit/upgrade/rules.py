"""What an upgrade does to the catalogued rules of one pinned source.

Each catalogue entry citing the source names its statement by an anchor (its scope and the
fingerprint of its normalised text: ``recipekit.upstream.anchors``). Comparing the rule sites
of each cited file before and after sorts the entries into moved (found elsewhere: nothing to
do, the line is derived), changed (the statement is gone and its scope holds a new one of the
same kind where it stood: a reviewer decides), and vanished; rule sites new in the swept files
that read a config and no entry covers are listed for triage, never catalogued silently.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path

import attrs

from recipekit.upgrade import pins
from recipekit.upstream import anchors
from recipekit.upstream.anchors import Changed, Moved, RuleSite, Vanished

CATALOGUE = Path("src/python/recipekit/rule_catalogue")
# Words in a statement that show it reads a config value (a new site worth triage).
CONFIG_WORDS = ("cfg", "config", '["', "['", ".get(")


@attrs.frozen
class CitedRule:
    id: str
    file: str
    anchor: str
    catalogue: str


@attrs.frozen
class RuleChanges:
    # (rule, how, the file it is in now: another one where upstream moved it between files)
    moved: tuple[tuple[CitedRule, Moved, str], ...] = ()
    changed: tuple[tuple[CitedRule, Changed], ...] = ()
    vanished: tuple[tuple[CitedRule, Vanished], ...] = ()
    # The cited file is gone at the new commit.
    file_gone: tuple[CitedRule, ...] = ()
    # (file, site): rule sites new in a swept file, reading a config, that no entry covers.
    new_sites: tuple[tuple[str, RuleSite], ...] = ()
    unmoved: int = 0


def cited_rules(checkout: Path, label: str, old: Mapping[str, bytes]) -> list[CitedRule]:
    """The catalogue entries citing ``label``, each with its anchor (read from the entry, or
    from the statement at its line where the entry predates anchors)."""
    found: list[CitedRule] = []
    sites: dict[str, list[RuleSite]] = {}
    for toml in sorted((checkout / CATALOGUE).glob("*.toml")):
        for raw in tomllib.loads(toml.read_text()).get("rule", []):
            if raw.get("source") != label or raw.get("file") not in old:
                continue
            anchor = raw.get("anchor", "")
            if not anchor and raw.get("line"):
                file_sites = sites.setdefault(raw["file"], _sites(old[raw["file"]]))
                site = anchors.site_at(file_sites, int(raw["line"]))
                anchor = site.anchor if site else ""
            if anchor:
                found.append(CitedRule(raw["id"], raw["file"], anchor, toml.name))
    return found


def _sites(data: bytes) -> list[RuleSite]:
    try:
        return anchors.rule_sites(data.decode())
    except (SyntaxError, UnicodeDecodeError):
        return []


def compare_rules(
    cited: Sequence[CitedRule], old: Mapping[str, bytes], new: Mapping[str, bytes | None]
) -> RuleChanges:
    moved: list[tuple[CitedRule, Moved, str]] = []
    changed: list[tuple[CitedRule, Changed]] = []
    vanished: list[tuple[CitedRule, Vanished]] = []
    gone: list[CitedRule] = []
    new_sites: list[tuple[str, RuleSite]] = []
    unmoved = 0
    by_file: dict[str, list[CitedRule]] = {}
    for rule in cited:
        by_file.setdefault(rule.file, []).append(rule)
    # Each file parsed once, old and new.
    old_sites = {p: _sites(d) for p, d in old.items() if p.endswith(".py")}
    new_sites_of = {p: _sites(d) for p, d in new.items() if d is not None and p.endswith(".py")}
    for path in sorted(old_sites):
        rules = by_file.get(path, [])
        if path not in new_sites_of:
            gone += rules
            continue
        before, after = old_sites[path], new_sites_of[path]
        comparison = anchors.compare(before, after, [r.anchor for r in rules])
        of = {r.anchor: r for r in rules}
        moved += [(of[m.anchor], m, path) for m in comparison.moved]
        changed += [(of[c.anchor], c) for c in comparison.changed]
        vanished += [(of[v.anchor], v) for v in comparison.vanished]
        unmoved += len(comparison.unmoved)
        old_texts = {(s.scope, s.text) for s in before}
        new_sites += [
            (path, site)
            for site in comparison.new
            if (site.scope, site.text) not in old_texts and _reads_config(site)
        ]
    # A statement that left its file may stand, the same, in another pinned file.
    elsewhere: dict[tuple[str, str], tuple[str, RuleSite]] = {}
    for path, sites in new_sites_of.items():
        for site in sites:
            elsewhere.setdefault((site.scope, site.text), (path, site))
    still_vanished = []
    for rule, gone_site in vanished:
        found = elsewhere.get((gone_site.old.scope, gone_site.old.text))
        if found is None or found[0] == rule.file:
            still_vanished.append((rule, gone_site))
        else:
            moved.append((rule, Moved(rule.anchor, gone_site.old, found[1]), found[0]))
    still_gone = []
    for rule in gone:
        before_site = anchors.locate(old_sites[rule.file], rule.anchor)
        found = (
            None if before_site is None else elsewhere.get((before_site.scope, before_site.text))
        )
        if found is None or before_site is None:
            still_gone.append(rule)
        else:
            moved.append((rule, Moved(rule.anchor, before_site, found[1]), found[0]))
    claimed = {(f, m.new.line) for _, m, f in moved}
    new_sites = [(p, s) for p, s in new_sites if (p, s.line) not in claimed]
    return RuleChanges(
        tuple(moved),
        tuple(changed),
        tuple(still_vanished),
        tuple(still_gone),
        tuple(new_sites),
        unmoved,
    )


def reanchor(checkout: Path, changes: RuleChanges) -> list[str]:
    """Each moved entry's catalogue block rewritten where it names a place: its ``file`` when
    the statement moved to another file, its ``line`` where the entry still gives one (the
    anchor itself never changes with a move). Returns the ids rewritten."""
    done = []
    for rule, how, path in changes.moved:
        toml = checkout / CATALOGUE / rule.catalogue
        text = toml.read_text()
        start = text.index(f'id = "{rule.id}"\n')
        end = text.find("[[rule]]", start)
        end = len(text) if end < 0 else end
        block = text[start:end]
        edited = block.replace(f'file = "{rule.file}"', f'file = "{path}"')
        edited = re.sub(r"^line = \d+$", f"line = {how.new.line}", edited, flags=re.MULTILINE)
        if edited != block:
            pins.replace_text(toml, text[:start] + edited + text[end:])
            done.append(rule.id)
    return done


def _reads_config(site: RuleSite) -> bool:
    return site.kind == "keyword" or any(word in site.shown for word in CONFIG_WORDS)
