"""The generated rule-site tables (tools/generate_rule_sites.py) are what the catalogue's
anchors give in the pinned sources, and every rule a check cites is one of them."""

from __future__ import annotations

from pathlib import Path

import pytest

from recipekit import rule_catalogue, rule_sites
from tools import generate_rule_sites as generator

CHECKOUT = generator.CHECKOUT


@pytest.mark.parametrize("framework", sorted(generator.PACKAGES))
def test_each_table_is_what_the_generator_writes(framework: str, reference_dir: Path) -> None:
    absent = generator.absent(framework, reference_dir)
    if absent:
        # Only files GitHub alone serves can be absent (fetch-reference without GitHub).
        pytest.skip(f"{len(absent)} GitHub-only pinned files absent, e.g. {absent[0]}")
    written = (CHECKOUT / generator.output(framework)).read_text()
    assert written == generator.table_text(
        framework, reference_dir
    ), f"{generator.output(framework)} is stale: run python3 tools/generate_rule_sites.py"


@pytest.mark.parametrize("framework", sorted(generator.PACKAGES))
def test_each_table_holds_only_catalogued_rules_of_its_framework(framework: str) -> None:
    sites = rule_sites.sites(generator.PACKAGES[framework])
    entries = {e.id: e for e in rule_catalogue.load(framework)}
    assert sites
    for rule, (label, file, line) in sites.items():
        assert rule in entries, rule
        assert (entries[rule].source, entries[rule].file) == (label, file)
        assert line > 0
