from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from recipekit.lineage.store import (
    RUN_PLACEHOLDER,
    import_version,
    init_store,
    is_store,
    output_dir,
    publish,
    resolve_run,
    store_output,
    store_paths,
    versions,
)

ARTIFACT = "super35-rl-rlvr-model"
RUN = "rlvr-66b782458180"


def _save(root: Path, step: int, run: str = RUN) -> Path:
    """What NeMo-RL leaves after saving a step: step_N/ with weights in it."""
    saved = root / ARTIFACT / run / f"step_{step}"
    (saved / "policy").mkdir(parents=True)
    (saved / "policy" / "weights.bin").write_bytes(f"step {step}".encode())
    return saved


def _read(root: Path, alias: str) -> str:
    return (root / ARTIFACT / alias / "policy" / "weights.bin").read_text()


def test_every_saved_step_becomes_a_version_with_step_and_latest_aliases(tmp_path: Path) -> None:
    init_store(tmp_path)
    _save(tmp_path, 10)
    _save(tmp_path, 20)
    added = publish(tmp_path, ARTIFACT, RUN)
    assert [(v.version, v.step) for v in added] == [(0, 10), (1, 20)]
    assert _read(tmp_path, "step-10") == "step 10" and _read(tmp_path, "v0") == "step 10"
    assert _read(tmp_path, "latest") == "step 20"
    # Relative links: the store reads the same at its host path and at /artifacts.
    assert os.readlink(tmp_path / ARTIFACT / "latest") == f"{RUN}/step_20"
    moved = tmp_path.parent / "mounted-elsewhere"
    shutil.copytree(tmp_path, moved, symlinks=True)
    assert _read(moved, "step-20") == "step 20"

    # Publishing again finds only what is new; latest moves as steps appear.
    assert publish(tmp_path, ARTIFACT, RUN) == []
    _save(tmp_path, 30)
    [third] = publish(tmp_path, ARTIFACT, RUN)
    assert (third.version, third.step) == (2, 30)
    assert _read(tmp_path, "latest") == "step 30"
    listed = json.loads((tmp_path / ARTIFACT / "versions.json").read_text())["versions"]
    assert [v["step"] for v in listed] == [10, 20, 30]
    assert [v.step for v in versions(tmp_path, ARTIFACT)] == [10, 20, 30]


def test_a_pinned_step_survives_the_frameworks_keep_policy(tmp_path: Path) -> None:
    saved = _save(tmp_path, 120)
    [version] = publish(tmp_path, ARTIFACT, RUN, keep_steps=(120,))
    assert version.kept and version.path == f"{RUN}/kept/step_120"
    # keep_top_k deletes old checkpoints: the kept copy (hard links) is untouched.
    shutil.rmtree(saved)
    assert _read(tmp_path, "step-120") == "step 120"
    kept_file = tmp_path / ARTIFACT / RUN / "kept" / "step_120" / "policy" / "weights.bin"
    assert kept_file.stat().st_nlink == 1  # the framework's copy is gone, the bytes are not


def test_a_second_run_adds_versions_after_the_first(tmp_path: Path) -> None:
    _save(tmp_path, 10)
    publish(tmp_path, ARTIFACT, RUN)
    _save(tmp_path, 10, run="rlvr-000000000000")
    [added] = publish(tmp_path, ARTIFACT, "rlvr-000000000000")
    assert added.version == 1 and added.run == "rlvr-000000000000"
    assert os.readlink(tmp_path / ARTIFACT / "step-10") == "rlvr-000000000000/step_10"


def test_imported_data_is_a_version_and_marks_the_store(tmp_path: Path) -> None:
    source = tmp_path / "blend"
    source.mkdir()
    (source / "train.jsonl").write_text("{}\n")
    store = tmp_path / "store"
    assert not is_store(store)
    version = import_version(store, "super35-sft-data", source, name="import-1")
    assert is_store(store) and version.version == 0 and version.step is None
    assert (store / "super35-sft-data" / "latest" / "train.jsonl").read_text() == "{}\n"


def test_plan_paths_in_the_store_and_the_run_name() -> None:
    out = output_dir(ARTIFACT)
    assert out == f"/artifacts/{ARTIFACT}/{RUN_PLACEHOLDER}"
    assert resolve_run(out, RUN) == f"/artifacts/{ARTIFACT}/{RUN}"
    plan = {
        "stage": "rlvr",
        "hash": "66b782458180" + "0" * 52,
        "inputs": {"model": "/artifacts/super35-sft-model/latest", "tokenizer": "/hf/x"},
        "outputs": {"checkpoints": out},
    }
    assert store_output(plan) == (ARTIFACT, RUN)
    assert set(store_paths(plan)) == {"model", "checkpoints"}
    assert store_output({"stage": "x", "hash": "0" * 64, "outputs": {"c": "/shared/ckpt"}}) is None


def test_a_finished_run_without_steps_is_one_version_of_its_whole_directory(
    tmp_path: Path,
) -> None:
    init_store(tmp_path)
    artifact, run = "super35-rl-mopd-phase2-hf-model", "hf-export-0123456789ab"
    written = tmp_path / artifact / run
    written.mkdir(parents=True)
    # While it runs, the export's half-written files are no version.
    (written / "config.json").write_text("{}")
    assert publish(tmp_path, artifact, run) == []
    [version] = publish(tmp_path, artifact, run, finished=True)
    assert (version.step, version.path, version.aliases) == (None, run, ["v0"])
    assert os.readlink(tmp_path / artifact / "latest") == run
    # Publishing again (a requeued job's record step) adds nothing.
    assert publish(tmp_path, artifact, run, finished=True) == []


def test_a_finished_run_that_wrote_nothing_publishes_nothing(tmp_path: Path) -> None:
    init_store(tmp_path)
    (tmp_path / "model" / "run").mkdir(parents=True)
    assert publish(tmp_path, "model", "run", finished=True) == []
    assert versions(tmp_path, "model") == []
