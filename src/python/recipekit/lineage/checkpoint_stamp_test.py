"""A checkpoint is stamped with the model and layout that wrote it; resuming it under another
model is refused, under another layout only with run.reshard=true (issue 24)."""

# The catalogued checks these tests break, which the rule catalogue's meta-test finds by
# name (recorded from the checks that produced an issue while these tests ran):
# resume_verdict.

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
import pytest

from recipekit.errors import RecipeError
from recipekit.launch.preflight import stamp_checkpoint_directory
from recipekit.lineage.checkpoint_stamp import (
    MARKER_KEY,
    STAMP_FILE,
    CheckpointStamp,
    StampError,
    planned_run_verdict,
    read_stamp,
    write_stamp,
)
from recipekit.lineage.store import import_version, init_store
from recipekit.plan import make_plan
from recipes.super35.rl import rlvr
from recipes.super35.sft import sft


def _stamp_like(plan: Any, **changes: Any) -> CheckpointStamp:
    """The stamp a run of ``plan`` writes, with some fields changed (another run's)."""
    stamp = CheckpointStamp.of_plan(plan.as_json())
    layout = {**stamp.layout, **changes.pop("layout", {})}
    return attrs.evolve(stamp, layout=layout, stage="an-earlier-run", **changes)


def _problems(stage: Any, overrides: list[str]) -> list[str]:
    with pytest.raises(RecipeError) as caught:
        make_plan(stage, overrides)
    return [issue.render() for issue in caught.value.issues]


def test_resuming_another_models_checkpoint_is_refused(tmp_path: Path) -> None:
    directory = tmp_path / "ckpt"
    write_stamp(directory, _stamp_like(make_plan(rlvr), model="nemotron-3-nano-30b"))
    [problem] = _problems(rlvr, [f"checkpointing.checkpoint_dir={directory}"])
    assert problem.startswith("checkpointing.checkpoint_dir = ")
    assert "holds a checkpoint of nemotron-3-nano-30b" in problem
    assert "NeMo-RL #415" in problem
    # Leave to reshard does not cover another model.
    assert _problems(rlvr, [f"checkpointing.checkpoint_dir={directory}", "run.reshard=true"])


def test_resuming_under_another_layout_needs_run_reshard(tmp_path: Path) -> None:
    planned = make_plan(rlvr)
    tp = planned.as_json()["layout"]["tensor_parallel"]
    directory = tmp_path / "ckpt"
    write_stamp(directory, _stamp_like(planned, layout={"tensor_parallel": tp * 2}))
    moved = f"checkpointing.checkpoint_dir={directory}"
    [problem] = _problems(rlvr, [moved])
    assert f"this plan changes TP {tp * 2} -> {tp}" in problem
    assert "--set run.reshard=true" in problem

    allowed = make_plan(rlvr, [moved, "run.reshard=true"])
    [note] = [w for w in allowed.warnings if "resharded" in w.message]
    assert note.path == "checkpointing.checkpoint_dir"
    assert f"resharded (TP {tp * 2} -> {tp})" in note.message
    assert allowed.as_json()["lineage"]["reshard"] is True


def test_the_same_model_and_layout_resume_cleanly(tmp_path: Path) -> None:
    directory = tmp_path / "ckpt"
    write_stamp(directory, _stamp_like(make_plan(rlvr)))
    plan = make_plan(rlvr, [f"checkpointing.checkpoint_dir={directory}"])
    assert not [w for w in plan.warnings if "resharded" in w.message]


def test_weights_of_another_layout_load_but_not_of_another_model(tmp_path: Path) -> None:
    planned = make_plan(sft)
    weights = tmp_path / "weights"
    write_stamp(weights, _stamp_like(planned, layout={"pipeline_parallel": 7}))
    make_plan(sft, [f"checkpoint.pretrained_checkpoint={weights}"])  # resharded on load

    write_stamp(weights, _stamp_like(planned, model="nemotron-3-super-120b"))
    [problem] = _problems(sft, [f"checkpoint.pretrained_checkpoint={weights}"])
    assert problem.startswith("checkpoint.pretrained_checkpoint = ")

    # checkpoint.load resumes the whole state: the layout counts there.
    resumed = tmp_path / "resumed"
    write_stamp(resumed, _stamp_like(planned, layout={"pipeline_parallel": 7}))
    [problem] = _problems(sft, [f"checkpoint.load={resumed}"])
    assert "PP 7 -> " in problem


def test_a_damaged_stamp_is_an_error_not_a_fresh_directory(tmp_path: Path) -> None:
    directory = tmp_path / "ckpt"
    directory.mkdir()
    (directory / STAMP_FILE).write_text("{not json")
    with pytest.raises(StampError):
        read_stamp(directory)
    [problem] = _problems(rlvr, [f"checkpointing.checkpoint_dir={directory}"])
    assert "damaged" in problem


def test_run_reshard_is_a_boolean() -> None:
    [problem] = _problems(rlvr, ["run.reshard=maybe"])
    assert problem == "run.reshard = 'maybe': is true or false"
    [problem] = _problems(rlvr, ["run.resahrd=true"])
    assert "did you mean 'reshard'" in problem


def test_the_head_node_stamps_where_the_run_saves(tmp_path: Path) -> None:
    plan = make_plan(rlvr).as_json()
    plan["outputs"] = {"checkpoints": str(tmp_path / "runs" / "${oc.env:RECIPEKIT_RUN}")}
    written = stamp_checkpoint_directory(plan)
    assert written is not None and written.parent == tmp_path / "runs"
    assert written.name.startswith("rlvr-")
    assert read_stamp(written) == CheckpointStamp.of_plan(plan)
    assert json.loads((written / STAMP_FILE).read_text())["model"] == plan["model"]


def test_a_store_version_is_checked_by_the_stamp_its_marker_records(tmp_path: Path) -> None:
    store, saved = tmp_path / "store", tmp_path / "saved"
    saved.mkdir()
    (saved / "weights.bin").write_bytes(b"\0" * 16)
    init_store(store)
    plan = make_plan(rlvr).as_json()
    other = attrs.evolve(CheckpointStamp.of_plan(plan), model="nemotron-3-nano-30b")
    import_version(store, "super35-sft-model", saved, meta={MARKER_KEY: other.as_json()})
    plan["checkpoints"] = {
        "resumes": {},
        "starts": {"policy.model_name": "/artifacts/super35-sft-model/latest"},
    }
    [issue] = planned_run_verdict(plan, root=store, visible_only=True).errors
    assert issue.path == "policy.model_name"
    assert "nemotron-3-nano-30b" in issue.message

    # A version made before stamps existed is not refused (nothing says who wrote it).
    import_version(store, "super35-sft-model", saved)
    assert planned_run_verdict(plan, root=store, visible_only=True).errors == ()
