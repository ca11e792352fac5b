"""The status drawing colours each stage of the real Super 3.5 chain by the state its records
(rows as ``chain_status`` reads them from run directories, Slurm and the store) give it."""

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from recipekit.lineage.drawing import STATE_STYLE
from recipekit.lineage.status import StageState
from recipekit.pipeline.chain import Chain, load_chain, plan_chain
from recipekit.pipeline.status import stage_state, stage_statuses, status_svg

SVG = "{http://www.w3.org/2000/svg}"
ROOT = Path(__file__).resolve().parents[4]


def _version(number: int, step: int | None) -> dict[str, object]:
    return {"version": f"v{number}", "step": step, "run": f"run-{number}", "kept": False}


# One stage in each state a job can be in, as chain_status reports it.
ROWS: list[dict[str, Any]] = [
    {
        "stage": "pretrain-tiny",
        "job": "11",
        "state": "COMPLETED",
        "restarts": 0,
        "elapsed": "00:04:10",
        "lost_nodes": [],
        "versions": [_version(1, 20)],
    },
    {
        "stage": "sft-tiny",
        "job": None,
        "state": "not submitted",
        "versions": [_version(2, 20)],
        "action": {"runs": False, "reason": "up to date", "version": "v2"},
    },
    {
        "stage": "rlvr",
        "job": "12",
        "state": "RUNNING",
        "restarts": 1,
        "elapsed": "00:01:02",
        "lost_nodes": ["node2"],
        "versions": [_version(1, 2), _version(2, 4)],
    },
    {
        "stage": "teacher-reasoning",
        "job": "13",
        "state": "RUNNING",
        "restarts": 0,
        "elapsed": "00:03:10",
        "lost_nodes": [],
        "versions": [_version(1, 2)],
    },
    {
        "stage": "mopd-single-stage",
        "job": "14",
        "state": "PENDING",
        "restarts": 0,
        "elapsed": "00:00:00",
        "lost_nodes": [],
        "versions": [],
    },
    {
        "stage": "sft",
        "job": "15",
        "state": "FAILED",
        "restarts": 0,
        "elapsed": "00:00:09",
        "lost_nodes": [],
        "versions": [],
    },
    {"stage": "teacher-agentic", "job": None, "state": "not submitted", "versions": []},
]
EXPECTED = {
    "pretrain-tiny": StageState.DONE,
    "sft-tiny": StageState.UP_TO_DATE,
    "rlvr": StageState.REQUEUED,
    "teacher-reasoning": StageState.RUNNING,
    "mopd-single-stage": StageState.QUEUED,
    "sft": StageState.FAILED,
    "teacher-agentic": StageState.BLOCKED,
    "eval": StageState.SKIPPED,  # outside the planned stages
}


@pytest.fixture(scope="module")
def chain() -> Chain:
    return load_chain(Path("recipes/super35"), ROOT)


def test_each_state_has_its_colour_and_its_details(chain: Chain) -> None:
    planned = plan_chain(chain, [row["stage"] for row in ROWS])
    statuses = stage_statuses(chain, planned, ROWS)
    assert {name: statuses[name].state for name in EXPECTED} == EXPECTED
    assert set(statuses) == set(chain.order())
    root = ET.fromstring(status_svg(chain, planned, ROWS).encode())
    groups = {g.attrib["id"]: g for g in root.iter(f"{SVG}g") if "id" in g.attrib}
    for name, state in EXPECTED.items():
        group = groups[f"stage:{name}"]
        assert f"state-{state.name.lower().replace('_', '-')}" in group.attrib["class"]
        shape = next(e for e in group.iter() if e.tag in (f"{SVG}path", f"{SVG}polygon"))
        assert shape.attrib["fill"] == STATE_STYLE[state][0], name
    texts = " | ".join(t.text or "" for t in groups["stage:rlvr"].iter(f"{SVG}text"))
    # The job id, its run time, the newest saved step of the run's total, the store version.
    total = statuses["rlvr"].total_steps
    assert total is not None and total > 4
    assert "LOST NODE, REQUEUED · job 12 · 00:01:02" in texts
    assert f"step 4 / {total} · store v2" in texts
    assert "requeued 1x; lost node2" in texts


def test_a_job_slurm_forgot_is_judged_by_the_store() -> None:
    gone = {"job": "9", "state": "UNKNOWN (no longer known to the controller)"}
    assert stage_state({**gone, "versions": [_version(1, 6)]}, blocked=False)[0] is (
        StageState.UP_TO_DATE
    )
    assert stage_state({**gone, "versions": []}, blocked=False)[0] is StageState.FAILED
    finished = {"job": "9", "state": "COMPLETED", "restarts": 1, "lost_nodes": ["n1"]}
    state, note = stage_state(finished, blocked=False)
    assert state is StageState.DONE and "requeued 1x" in note


def test_a_stage_not_submitted_is_up_to_date_only_when_its_action_does_not_run() -> None:
    held = {"job": None, "state": "not submitted", "versions": [_version(1, 6)]}
    runs = {"runs": True, "reason": "an input changed"}
    assert stage_state({**held, "action": runs}, blocked=False) == (
        StageState.SKIPPED,
        "not submitted; it runs: an input changed",
    )
    # No action read (no store on this host): a version alone does not say up to date.
    assert stage_state(held, blocked=False)[0] is StageState.SKIPPED
    done = {"runs": False, "reason": "up to date", "version": "v1"}
    assert stage_state({**held, "action": done}, blocked=False) == (
        StageState.UP_TO_DATE,
        "not submitted; the store holds its output (v1)",
    )
