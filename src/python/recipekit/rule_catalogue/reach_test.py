"""The sweep covers every module the stages' entry points reach (issue 40): recomputed from the
pinned files at each NeMo-RL label, every reached module is pinned (or named below with why
not), and every rule site of a reached module that reads a config (the upgrade's own test for a
new site, ``recipekit.upgrade.rules._reads_config``) has a catalogue entry, or is one of the
sites still to triage that ``reach_backlog.toml`` names."""

from __future__ import annotations

import functools
import os
import tomllib
from pathlib import Path

import pytest

from recipekit import rule_catalogue
from recipekit.upgrade.rules import _reads_config
from recipekit.upstream import anchors
from recipekit.upstream.reach import Reach
from tools import sweep_reach
from tools.generated_modules import absent_pins

CHECKOUT = Path(os.environ.get("RECIPEKIT_CHECKOUT") or Path(__file__).resolve().parents[4])
REFERENCE = Path(os.environ.get("RECIPEKIT_REFERENCE_DIR") or CHECKOUT / ".reference")
LABELS = tuple(sweep_reach.ENTRY_POINTS)
# (label, path) -> why a reached module is not pinned.
NOT_PINNED = sweep_reach.HELD_BACK
BACKLOG = Path(__file__).with_name("reach_backlog.toml")

Site = tuple[str, str, str]  # (label, file, anchor)


def _pinned(label: str) -> set[str]:
    manifest = tomllib.loads((CHECKOUT / "3rdparty/reference/manifest.toml").read_text())
    return {path for path, _ in manifest["sources"][label]["files"]}


def _skip_if_absent(label: str) -> None:
    absent = absent_pins(REFERENCE, (label,))
    if absent:
        pytest.skip(f"{len(absent)} pinned files of {label} absent here, e.g. {absent[0]}")


@functools.cache
def _reach(label: str) -> Reach:
    """What the entry points reach, reading only pinned files."""
    return sweep_reach.reach_pinned(label, REFERENCE, _pinned(label))


@functools.cache
def config_sites(label: str) -> dict[Site, anchors.RuleSite]:
    """Every rule site that reads a config in the reached, pinned modules of ``label``."""
    found = {}
    for path in _reach(label).modules:
        if path in _reach(label).unread:
            continue
        text = (REFERENCE / label / path).read_text(encoding="utf-8")
        for site in anchors.rule_sites(text):
            if _reads_config(site):
                found[(label, path, site.anchor)] = site
    return found


def uncatalogued(label: str, entries: tuple[rule_catalogue.RuleEntry, ...]) -> set[Site]:
    catalogued = {(e.source, e.file, e.anchor) for e in entries if not e.from_issue}
    return set(config_sites(label)) - catalogued


def backlog() -> set[Site]:
    rows = tomllib.loads(BACKLOG.read_text()).get("site", [])
    return {(row["source"], row["file"], row["anchor"]) for row in rows}


def test_the_trees_name_each_entry_point() -> None:
    trees = sweep_reach.trees()
    assert set(LABELS) <= set(trees)
    for label, entry_points in sweep_reach.ENTRY_POINTS.items():
        assert set(entry_points) <= set(trees[label]), label


@pytest.mark.parametrize("label", LABELS)
def test_every_module_an_entry_point_reaches_is_pinned(label: str) -> None:
    _skip_if_absent(label)
    reached = _reach(label)
    unpinned = [
        path
        for path in reached.modules
        if path not in _pinned(label) and (label, path) not in NOT_PINNED
    ]
    assert not unpinned, f"reached, not pinned: {unpinned}: run python3 tools/sweep_reach.py --pin"
    # A reason for a module that is pinned by now, or no longer reached, is stale.
    stale = [p for (lab, p) in NOT_PINNED if lab == label and p not in reached.unread]
    assert not stale, stale


@pytest.mark.parametrize("label", LABELS)
def test_every_config_reading_rule_site_of_a_reached_module_is_catalogued(label: str) -> None:
    _skip_if_absent(label)
    missing = uncatalogued(label, rule_catalogue.load())
    listed = {site for site in backlog() if site[0] == label}
    new = sorted(missing - listed)
    sites = config_sites(label)
    assert not new, "no catalogue entry for:\n" + "\n".join(
        f"  {file}:{sites[(lab, file, anchor)].line} {anchor} ({sites[(lab, file, anchor)].kind})"
        for lab, file, anchor in new
    )
    # The backlog only shrinks: a site catalogued since, or gone upstream, leaves it.
    done = sorted(listed - missing)
    assert not done, f"catalogued or gone, remove from {BACKLOG.name}: {done}"


def test_an_uncatalogued_site_is_found() -> None:
    """The check can fail: drop one entry of a swept module and its site is reported."""
    label = LABELS[0]
    _skip_if_absent(label)
    entries = rule_catalogue.load()
    sites = config_sites(label)
    dropped = next(e for e in entries if (e.source, e.file, e.anchor) in sites)
    rest = tuple(e for e in entries if e.id != dropped.id)
    assert (label, dropped.file, dropped.anchor) in uncatalogued(label, rest)


def test_the_trees_are_the_mirrors_listing() -> None:
    """trees.toml is what tools/sweep_reach.py --pin reads from the mirror, where one is here."""
    manifest = tomllib.loads((CHECKOUT / "3rdparty/reference/manifest.toml").read_text())
    mirrors = [CHECKOUT / m for m in manifest["fetch"]["mirrors"] if (CHECKOUT / m).is_dir()]
    if not mirrors or not all((mirrors[0] / label).is_dir() for label in LABELS):
        pytest.skip("no mirror of the NeMo-RL sources here")
    for label in LABELS:
        assert sweep_reach.trees()[label] == tuple(sweep_reach.mirror_tree(mirrors[0] / label))
