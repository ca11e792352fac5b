"""vLLM 0.25.1's own verdicts on its engine config classes, replayed: ``recipekit.vllm.guards``
must agree with vLLM on every case of ``verdicts/vllm-0.25.1.json``
(``tools/record_vllm_verdicts.py`` built each class with the case's arguments and recorded where
it raised).

For each case and class: where vLLM built it, the replay reports no error; where vLLM raised at
a check the replay evaluates (live, mirrored by no hand-written rule), that is the first error
the replay reports; where vLLM raised at a check the replay cannot evaluate, every error the
replay reports comes after it (vLLM stops at its first).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from recipekit.upstream.replay import described, located
from recipekit.vllm.guards import built_with, reached, tables
from tools.record_vllm_verdicts import BESIDES, CASES

FIXTURE = Path(__file__).parent / "verdicts" / "vllm-0.25.1.json"


@cache
def fixture() -> dict[str, Any]:
    return dict(json.loads(FIXTURE.read_text()))


def _order(name: str) -> dict[str, tuple[int, bool]]:
    """file:line -> (its place in the class's program, whether the replay evaluates it there
    for the generic check: live and mirrored by no other rule)."""
    steps = located(tables()[name]["program"])
    return {described(s)[0]: (i, s[-1] and not described(s)[2]) for i, s in enumerate(steps)}


def test_the_fixture_holds_every_case_recorded_by_vllm() -> None:
    assert fixture()["recorded_with"]["vllm"] == "0.25.1"
    assert [c["id"] for c in fixture()["cases"]] == list(CASES)
    assert all("verdict" in case for case in fixture()["cases"])


@pytest.mark.parametrize("case", fixture()["cases"], ids=[c["id"] for c in fixture()["cases"]])
def test_the_replay_agrees_with_vllm(case: dict[str, Any]) -> None:
    # The recorded arguments are still what the table builds: else re-record.
    for name, kwargs in case["classes"].items():
        assert built_with(name, case["vllm_kwargs"]) | BESIDES.get(name, {}) == kwargs
    found = [b for b in reached(case["vllm_kwargs"]) if not b.warns]
    for name, verdict in case["verdict"].items():
        order = _order(name)
        ours = sorted((order[b.where][0], b.where) for b in found if b.config == name)
        if verdict is None:
            assert not ours, f"vLLM builds {name}; the replay refuses it at {ours}"
            continue
        theirs = f"{verdict['file']}:{verdict['line']}"
        place, evaluated = order.get(theirs, (-1, False))
        if evaluated:
            assert ours and ours[0][1] == theirs, (theirs, ours)
        else:
            assert all(at > place for at, _ in ours), (theirs, ours)


def test_the_cases_break_checks_the_replay_evaluates() -> None:
    # The fixture is no oracle unless vLLM refused some cases at checks the replay evaluates.
    evaluated = {
        f"{v['file']}:{v['line']}"
        for case in fixture()["cases"]
        for name, v in case["verdict"].items()
        if v and _order(name).get(f"{v['file']}:{v['line']}", (0, False))[1]
    }
    assert len(evaluated) >= 5, evaluated
