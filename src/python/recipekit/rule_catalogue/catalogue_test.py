"""The catalogue's own rules: valid entries, checks that run, anchors that name one rule site."""

from __future__ import annotations

import functools
import importlib
import os
import re
import tomllib
from pathlib import Path

import pytest

from recipekit import job_rules, rule_catalogue
from recipekit.checking import MIRRORED
from recipekit.lineage.checkpoint_stamp import PLAN_RULES
from recipekit.nemo_evaluator.framework import NEMO_EVALUATOR
from recipekit.nemo_rl.framework import NEMO_RL_GRPO
from recipekit.nemo_rl.framework_super35 import NEMO_RL_SUPER35
from recipekit.parallelism import LAYOUT_RULES
from recipekit.upstream.anchors import RuleSite, rule_sites
from tools import rule_catalogue as generator

# pants.toml ([test] extra_env_vars) names the checkout and its .reference/.
CHECKOUT = Path(os.environ.get("RECIPEKIT_CHECKOUT") or Path(__file__).resolve().parents[4])
REFERENCE = Path(os.environ.get("RECIPEKIT_REFERENCE_DIR") or CHECKOUT / ".reference")
ENTRIES = rule_catalogue.load()


def _frameworks_running(source: str, framework: str) -> list[object]:
    """The framework objects whose checks may mirror a rule of ``source``."""
    if source == "nemo-rl/super-v3":
        return [NEMO_RL_GRPO]
    if source.startswith("nemo-rl/") or source.startswith("vllm/"):
        # GRPO's, and the other entry points' on super-v3.5-posttraining (xtoken distillation).
        from recipekit.nemo_rl import algorithms

        return [NEMO_RL_SUPER35] + [
            value
            for value in vars(algorithms).values()
            if isinstance(value, algorithms.NemoRLRun)
            and value.version == algorithms.SUPER35_VERSION
        ]
    if source == rule_catalogue.ISSUE_SOURCE and framework == "nemo-rl":
        return [NEMO_RL_GRPO, NEMO_RL_SUPER35]
    if source.startswith("nemo-evaluator/") or (
        source == rule_catalogue.ISSUE_SOURCE and framework == "nemo-evaluator"
    ):
        return [NEMO_EVALUATOR]
    # Megatron-Core / Megatron-Bridge rules run under every Megatron-Bridge framework object and
    # NeMo-RL's Megatron policy (any of its entry points).
    modules = ("recipekit.megatron_bridge.framework", "recipekit.nemo_rl.algorithms")
    return [
        value
        for module in modules
        for value in vars(importlib.import_module(module)).values()
        if hasattr(value, "error_checks")
        and hasattr(value, "warning_checks")
        and not isinstance(value, type)
    ]


def _resolve(dotted: str) -> object:
    module, _, name = dotted.rpartition(".")
    return getattr(importlib.import_module(module), name)


def test_the_catalogue_loads_with_unique_ids() -> None:
    assert {"nemo-rl", "vllm", "nemo-evaluator"} <= set(rule_catalogue.present())
    assert len({e.id for e in ENTRIES}) == len(ENTRIES)


def _entry(**changes: object) -> rule_catalogue.RuleEntry:
    fields: dict[str, object] = {
        "framework": "vllm",
        "id": "vllm.config.x",
        "source": "vllm/v0.25.1",
        "kind": "raise",
        "phase": "setup",
        "keys": (),
        "condition": "c",
        "file": "f.py",
        "anchor": "f#0123456789ab",
        "reason": "needs-job",
        "detail": "d",
    }
    return rule_catalogue.RuleEntry(**(fields | changes))  # type: ignore[arg-type]


def test_an_entry_needs_exactly_one_of_check_and_reason() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        _entry(reason="", detail="")
    with pytest.raises(ValueError, match="exactly one"):
        _entry(check="recipekit.x.y")


def test_a_reason_is_one_of_the_closed_set_and_comes_with_its_detail() -> None:
    with pytest.raises(ValueError, match="reason"):
        _entry(reason="not yet classified")
    with pytest.raises(ValueError, match="detail"):
        _entry(detail=" ")
    assert {e.reason for e in ENTRIES if not e.check} == set(rule_catalogue.REASONS)


def test_ids_carry_no_line_numbers() -> None:
    for numbered in ("vllm.config.917", "vllm.config.setup.assert-917"):
        with pytest.raises(ValueError, match="ends in a number"):
            _entry(id=numbered)
    _entry(id="vllm.config.fp8-needs-cuda")  # a number inside a word is no line
    assert not [
        e.id
        for e in ENTRIES
        if any(segment.isdigit() or re.search(r"-\d+$", segment) for segment in e.id.split("."))
    ]


def test_an_upstream_entry_names_its_anchor_and_takes_its_commit_from_the_manifest() -> None:
    with pytest.raises(ValueError, match="anchor"):
        _entry(anchor="")
    manifest = tomllib.loads((CHECKOUT / "3rdparty/reference/manifest.toml").read_text())
    for entry in ENTRIES:
        if entry.from_issue:
            continue
        if entry.source in manifest["sources"]:
            assert entry.commit == manifest["sources"][entry.source]["commit"], entry.id
        else:
            # A wheel: its version, under the label the manifest gives it.
            assert entry.source in manifest["wheels"], entry.id
            assert entry.commit == entry.source.split("/", 1)[1]


@pytest.mark.parametrize("entry", [e for e in ENTRIES if e.check], ids=lambda e: e.id)
def test_each_check_runs_in_a_framework_of_its_source(entry: rule_catalogue.RuleEntry) -> None:
    check = _resolve(entry.check)
    if check in PLAN_RULES or check in job_rules.PLAN_RULES:
        return  # the plan, submit and preflight run it for every stage
    runs = _frameworks_running(entry.source, entry.framework)
    if check in LAYOUT_RULES:
        # The layout rules run through each framework's one layout check.
        check = (
            [
                c
                for f in runs
                for c in (*f.error_checks, *f.warning_checks)  # type: ignore[attr-defined]
                if c.__name__ == "parallel_layout_holds"
            ][:1]
            or [check]
        )
        check = check[0]
    assert any(
        check in f.error_checks or check in f.warning_checks  # type: ignore[attr-defined]
        for f in runs
    ), f"{entry.check} is in no error or warning checks of {entry.source}"


def _citing_checks() -> dict[str, tuple[str, ...]]:
    """Every check of the modules the catalogue names that cites its rules through
    ``recipekit.checking.cites``: its dotted name -> the rule ids it cites."""
    modules = {e.check.rpartition(".")[0] for e in ENTRIES if e.check}
    return {
        f"{module}.{name}": getattr(value, MIRRORED)
        for module in sorted(modules)
        for name, value in vars(importlib.import_module(module)).items()
        if hasattr(value, MIRRORED) and value.__module__ == module
    }


def test_each_rule_a_check_cites_is_one_the_catalogue_gives_it() -> None:
    """A check cites (``recipekit.checking.cites``) only rules whose catalogue entry names it as
    their check: one that cited another rule's line would quote the wrong reason. (The other
    way need not hold: where upstream states one rule in several places, one check mirrors
    every entry and cites the one its message quotes.)"""
    citing = _citing_checks()
    # That the search finds them at all (the replay of NeMo-RL's runners and the workers they
    # build took over about 50).
    assert len(citing) > 100
    by_id = {e.id: e for e in ENTRIES}
    wrong = [
        f"{check} cites {rule}, which the catalogue "
        + (f"gives to {by_id[rule].check}" if rule in by_id else "does not hold")
        for check, rules in citing.items()
        for rule in rules
        if rule not in by_id or by_id[rule].check != check
    ]
    assert not wrong, wrong


def _pinned() -> set[tuple[str, str]]:
    import tomllib

    manifest = tomllib.loads((CHECKOUT / "3rdparty/reference/manifest.toml").read_text())
    # A wheel's files are pinned by the wheel's sha256 (Megatron-Core's, under its version).
    unpacked = {
        (label, path)
        for label, wheel in manifest.get("wheels", {}).items()
        for path in wheel["files"]
    }
    return unpacked | {
        (label, path)
        for label, source in manifest["sources"].items()
        for path, _ in source.get("files", [])
    }


PINNED = _pinned()
# Cited files that CI cannot fetch: GitHub is out of its reach and the mirror it reads
# (../shared/reference) lacks them. The manifest's unmirrored files are pinned, and their
# anchors checked wherever they are fetched. (The GRPO entry points are pinned since the mirror
# holds them: tools/sweep_reach.py.)
NOT_IN_THE_MIRROR = {
    (label, path)
    for label, source in tomllib.loads((CHECKOUT / "3rdparty/reference/manifest.toml").read_text())[
        "sources"
    ].items()
    for path in source.get("unmirrored", [])
}
CITED = [e for e in ENTRIES if not e.from_issue and (e.source, e.file) in PINNED]


def test_every_cited_file_is_pinned_or_named_as_out_of_the_mirror() -> None:
    unpinned = {
        (e.source, e.file)
        for e in ENTRIES
        if not e.from_issue and not e.source.startswith(("megatron-core/", "megatron-bridge/"))
    } - PINNED
    assert unpinned <= NOT_IN_THE_MIRROR, sorted(unpinned - NOT_IN_THE_MIRROR)


@functools.cache
def _rule_sites(path: Path) -> list[RuleSite]:
    return rule_sites(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("entry", CITED, ids=lambda e: e.id)
def test_each_anchor_names_one_rule_site_of_its_kind(entry: rule_catalogue.RuleEntry) -> None:
    # An assert, a raise, a warning, or (kind keyword) a call spreading **kwargs.
    path = REFERENCE / entry.source / entry.file
    if not path.is_file() and (entry.source, entry.file) in NOT_IN_THE_MIRROR:
        pytest.skip(f"{entry.file} is unmirrored and not fetched here (no GitHub)")
    assert path.is_file(), f"{path} is pinned but not fetched: run tools/fetch-reference"
    sites = [s for s in _rule_sites(path) if s.anchor == entry.anchor]
    assert len(sites) == 1, f"{entry.file} holds {len(sites)} rule sites {entry.anchor}"
    assert sites[0].kind == entry.kind, (entry.kind, sites[0])
    # The line comes from the anchor, in one place.
    assert rule_catalogue.locate_line(entry, REFERENCE) == sites[0].line


def test_the_guide_generates_the_coverage_table() -> None:
    """The user's guide writes the table from coverage_table() on every build (docs/_ext/
    recipekit_pages.py) and includes it in its run-time rules page: nothing to keep in step."""
    page = (CHECKOUT / "docs" / "reference" / "rules.md").read_text(encoding="utf-8")
    assert "_generated/rule-coverage-part.md" in page
    table = generator.coverage_table()
    for framework in rule_catalogue.present():
        assert f"| {framework} | " in table


def _test_texts() -> str:
    """Every test file of the checkout but this one (which names no check)."""
    here = Path(__file__).resolve().name
    return "\n".join(
        path.read_text(encoding="utf-8")
        for root in ("src/python", "recipes")
        for path in sorted((CHECKOUT / root).rglob("*_test.py"))
        if path.name != here
    )


def test_every_catalogued_check_is_named_by_a_test_file() -> None:
    """A mirrored rule is tested: some test file names its check (breaking it, or listing it
    among the checks its tests break). A new catalogue entry without a test fails here."""
    text = _test_texts()
    untested = sorted(
        {
            e.check
            for e in ENTRIES
            if e.check and not re.search(rf"\b{re.escape(e.check.rsplit('.', 1)[1])}\b", text)
        }
    )
    assert not untested, f"no test file names these checks: {untested}"


def test_a_rule_site_has_one_home() -> None:
    # Several entries may share a site only where each mirrors a different part of it with a
    # check (the engine call that takes vllm_kwargs: its top-level keys, its nested configs); an
    # entry that excuses a site another entry mirrors contradicts it.
    sites: dict[tuple[str, str, str], list[rule_catalogue.RuleEntry]] = {}
    for entry in ENTRIES:
        if entry.anchor:
            sites.setdefault((entry.source, entry.file, entry.anchor), []).append(entry)
    shared = {site: found for site, found in sites.items() if len(found) > 1}
    excused = {
        site[2]: [e.id for e in found]
        for site, found in shared.items()
        if any(e.check is None for e in found)
    }
    assert excused == {}
