from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from recipekit.lineage import store as store_module
from recipekit.lineage.store import (
    RUN_PLACEHOLDER,
    StoreError,
    check_version,
    import_version,
    init_store,
    input_problem,
    is_store,
    keep_version,
    manifest_digest,
    output_dir,
    publish,
    read_marker,
    recover,
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
    init_store(tmp_path)
    saved = _save(tmp_path, 120)
    [version] = publish(tmp_path, ARTIFACT, RUN, keep_steps=(120,))
    assert version.kept and version.path == f"{RUN}/kept/step_120"
    # keep_top_k deletes old checkpoints: the kept copy (hard links) is untouched.
    shutil.rmtree(saved)
    assert _read(tmp_path, "step-120") == "step 120"
    kept_file = tmp_path / ARTIFACT / RUN / "kept" / "step_120" / "policy" / "weights.bin"
    assert kept_file.stat().st_nlink == 1  # the framework's copy is gone, the bytes are not


def test_a_second_run_adds_versions_after_the_first(tmp_path: Path) -> None:
    init_store(tmp_path)
    _save(tmp_path, 10)
    publish(tmp_path, ARTIFACT, RUN)
    _save(tmp_path, 10, run="rlvr-000000000000")
    [added] = publish(tmp_path, ARTIFACT, "rlvr-000000000000")
    assert added.version == 1 and added.run == "rlvr-000000000000"
    assert os.readlink(tmp_path / ARTIFACT / "step-10") == "rlvr-000000000000/step_10"


def test_imported_data_is_a_version(tmp_path: Path) -> None:
    source = tmp_path / "blend"
    source.mkdir()
    (source / "train.jsonl").write_text("{}\n")
    store = tmp_path / "store"
    init_store(store)
    assert is_store(store)
    version = import_version(store, "super35-sft-data", source, name="import-1")
    assert version.version == 0 and version.step is None
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


# --- whole or absent -------------------------------------------------------------------------


def _imported(tmp_path: Path, name: str = "blend-1") -> tuple[Path, str]:
    source = tmp_path / "source"
    (source / "shards").mkdir(parents=True, exist_ok=True)
    (source / "train.jsonl").write_text('{"prompt": "2+2?"}\n')
    (source / "shards" / "00.bin").write_bytes(b"\x00\x01" * 1000)
    store = tmp_path / "store"
    init_store(store)
    import_version(store, DATA, source, name=name)
    return store, name


DATA = "super35-sft-data"


def test_every_version_has_a_manifest_that_verify_checks(tmp_path: Path) -> None:
    store, name = _imported(tmp_path)
    [version] = versions(store, DATA)
    marker = json.loads((store / DATA / ".versions" / "v0.json").read_text())
    assert sorted(f["name"] for f in marker["files"]) == ["shards/00.bin", "train.jsonl"]
    assert {f["name"]: f["size"] for f in marker["files"]}["shards/00.bin"] == 2000
    # An import records the digest of its manifest: the identity its readers are keyed by.
    assert marker["meta"] == {"manifest_digest": manifest_digest(marker["files"])}
    assert marker["path"] == name
    assert check_version(store, DATA, version).whole
    assert input_problem(store, DATA, "latest") is None

    # Truncated to 0 bytes: the size says so, without reading the data.
    shard = store / DATA / name / "shards" / "00.bin"
    shard.write_bytes(b"")
    problem = input_problem(store, DATA, "v0")
    assert problem is not None and f"{shard} is 0 bytes, its manifest says 2000" in problem
    # The same size, other bytes: the write moved the file's stat, so the cheap check (submit,
    # preflight, pipeline plan) reads that file and finds the hash changed.
    shard.write_bytes(b"\x00\x02" * 1000)
    problem = input_problem(store, DATA, "v0")
    assert problem is not None and f"{shard} does not hold what its manifest's sha256" in problem
    [damaged] = check_version(store, DATA, version).problems
    assert damaged == f"{shard} does not hold what its manifest's sha256 says"


def test_the_cheap_check_finds_a_same_size_byte_flip_and_reads_only_changed_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, name = _imported(tmp_path)
    [version] = versions(store, DATA)
    marker = read_marker(store / DATA, 0)
    assert marker is not None
    stats = {f["name"]: f for f in marker["files"]}
    assert {"mtime_ns", "ino", "ctime_ns"} <= set(stats["shards/00.bin"])
    # The stat is not the content's identity: the digest is what it was before it was kept.
    bare = [
        {k: v for k, v in f.items() if k in ("name", "size", "sha256")} for f in marker["files"]
    ]
    assert manifest_digest(marker["files"]) == manifest_digest(bare)
    hashed = _counting_hashes(monkeypatch)
    assert check_version(store, DATA, version, content=False).whole
    assert hashed == []  # nothing changed: one stat per file, no byte read
    shard = store / DATA / name / "shards" / "00.bin"
    data = bytearray(shard.read_bytes())
    data[1500] ^= 0xFF
    before = shard.stat()
    shard.write_bytes(bytes(data))
    os.utime(shard, ns=(before.st_atime_ns, before.st_mtime_ns))  # mtime set back: ctime tells
    state = check_version(store, DATA, version, content=False)
    assert state.problems == (f"{shard} does not hold what its manifest's sha256 says",)
    assert hashed == [shard]
    # Touched, the same bytes: read once, and whole.
    data[1500] ^= 0xFF
    shard.write_bytes(bytes(data))
    assert check_version(store, DATA, version, content=False).whole


def test_a_manifest_from_before_stats_were_recorded_is_checked_by_size(tmp_path: Path) -> None:
    store, name = _imported(tmp_path)
    marker_file = store / DATA / ".versions" / "v0.json"
    body = json.loads(marker_file.read_text())
    body["files"] = [
        {k: v for k, v in f.items() if k not in store_module.STAT_KEYS} for f in body["files"]
    ]
    marker_file.write_text(json.dumps(_before_digests(body)))
    [version] = versions(store, DATA)
    assert check_version(store, DATA, version, content=False).whole
    assert input_problem(store, DATA, "latest") is None
    (store / DATA / name / "train.jsonl").write_text("x")
    assert "train.jsonl is 1 bytes" in str(input_problem(store, DATA, "latest"))


def _before_digests(body: dict[str, Any]) -> dict[str, Any]:
    """A marker as the store wrote it before markers carried their own digest (format 1)."""
    return {**{k: v for k, v in body.items() if k != "digest"}, "format": 1}


def _counting_hashes(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The files the store reads and hashes from now on, in order."""
    hashed: list[Path] = []
    real_hash = store_module._hash_file

    def counting(path: Path, *args: Any) -> str:
        hashed.append(path)
        return real_hash(path, *args)

    monkeypatch.setattr(store_module, "_hash_file", counting)
    return hashed


def test_an_emptied_or_deleted_version_is_refused(tmp_path: Path) -> None:
    store, name = _imported(tmp_path)
    for file in (store / DATA / name).rglob("*.*"):
        file.unlink()
    problem = input_problem(store, DATA, "latest")
    assert problem is not None and "train.jsonl is missing" in problem
    shutil.rmtree(store / DATA / name)
    problem = input_problem(store, DATA, "latest")
    assert problem is not None and "was deleted" in problem
    [version] = versions(store, DATA)
    assert check_version(store, DATA, version).gone


def test_names_are_names_never_paths(tmp_path: Path) -> None:
    store, _ = _imported(tmp_path)
    source = tmp_path / "source"
    before = sorted(p.name for p in (store / DATA).iterdir())
    bad_names = ("/abs/x", "../x", "a/b", ".hidden", "v1", "step-3", "latest", "kept", "")
    for bad in (*bad_names, "import-v1", "import-v0-2"):
        with pytest.raises(StoreError) as caught:
            import_version(store, DATA, source, name=bad)
        assert caught.value.issues[0].path == "--name", bad
    for bad_artifact in ("../x", "a/b", "/abs"):
        with pytest.raises(StoreError):
            import_version(store, bad_artifact, source, name="ok")
    assert sorted(p.name for p in (store / DATA).iterdir()) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["source", "store"]
    # A link leaving what is imported would read outside the store.
    (source / "escape").symlink_to("/etc/passwd")
    with pytest.raises(StoreError, match="outside what is imported"):
        import_version(store, DATA, source, name="with-link")
    assert not (store / DATA / "with-link").exists()
    assert not list((store / DATA / ".partial").glob("*"))


def test_an_import_without_a_name_never_trips_on_a_taken_default(tmp_path: Path) -> None:
    # `store import ... --name import-v1` wedged every later `data import` (which names its
    # folder import-vN): the name is the store's now, and a folder that has it already (made
    # before it was reserved) is passed over.
    store, _ = _imported(tmp_path)
    with pytest.raises(StoreError, match="import-vN is the name the store gives"):
        import_version(store, DATA, tmp_path / "source", name="import-v1")
    shutil.copytree(store / DATA / "blend-1", store / DATA / "import-v1")
    version = import_version(store, DATA, tmp_path / "source")
    assert version.path == "import-v1-2"
    assert import_version(store, DATA, tmp_path / "source").path == "import-v2"
    assert all(check_version(store, DATA, v).whole for v in versions(store, DATA))


def test_a_missing_store_is_an_error_giving_the_command(tmp_path: Path) -> None:
    missing = tmp_path / "typo"
    with pytest.raises(StoreError, match=f"recipekit store init {missing}"):
        import_version(missing, DATA, tmp_path, name="x")
    with pytest.raises(StoreError, match="no such directory"):
        versions(missing, DATA)
    assert not missing.exists()
    with pytest.raises(StoreError, match="a store path is a path, not int"):
        versions(42, DATA)  # type: ignore[arg-type]


def test_a_damaged_index_is_an_error_and_recovery_rebuilds_it(tmp_path: Path) -> None:
    store, name = _imported(tmp_path)
    import_version(store, DATA, tmp_path / "source", name="blend-2")
    index = store / DATA / "versions.json"
    index.write_text(index.read_text()[:20])
    with pytest.raises(StoreError, match="the index is damaged"):
        versions(store, DATA)
    assert recover(store, DATA) == [
        "rebuilt versions.json from 2 completion markers: it could not be read"
    ]
    assert [v.path for v in versions(store, DATA)] == [name, "blend-2"]


def test_a_killed_import_leaves_nothing_a_retry_trips_on(tmp_path: Path) -> None:
    store, _ = _imported(tmp_path)
    # What an import killed after moving its copy in (before the index) leaves.
    artifact = store / DATA
    shutil.copytree(artifact / "blend-1", artifact / ".partial" / "half")
    shutil.copytree(artifact / "blend-1", artifact / "blend-2")
    (artifact / ".partial" / "import.json").write_text('{"name": "blend-2", "version": 1}')
    (artifact / ".versions" / "v1.json").write_text("{")
    version = import_version(store, DATA, tmp_path / "source", name="blend-2")
    assert version.version == 1
    assert all(check_version(store, DATA, v).whole for v in versions(store, DATA))
    assert not list((artifact / ".partial").glob("*"))


def test_links_behind_the_index_are_refused_and_repaired(tmp_path: Path) -> None:
    store, _ = _imported(tmp_path)
    import_version(store, DATA, tmp_path / "source", name="blend-2")
    latest = store / DATA / "latest"
    latest.unlink()
    latest.symlink_to("blend-1")
    problem = input_problem(store, DATA, "latest")
    assert problem is not None and "interrupted import or publish" in problem
    assert recover(store, DATA) == ["pointed latest at their versions"]
    assert input_problem(store, DATA, "latest") is None


def test_a_pinned_version_is_kept_from_its_runs_keep_policy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    init_store(tmp_path)
    for step in (10, 20, 30):
        _save(tmp_path, step)
    publish(tmp_path, ARTIFACT, RUN)
    kept = keep_version(tmp_path, ARTIFACT, 1, pinned_by="teacher-reasoning: run.model")
    assert (kept.path, kept.kept) == (f"{RUN}/kept/step_20", True)
    # The framework's keep_top_k deletes the step as it saves newer ones: the pin stays whole.
    shutil.rmtree(tmp_path / ARTIFACT / RUN / "step_20")
    shutil.rmtree(tmp_path / ARTIFACT / RUN / "step_10")
    assert input_problem(tmp_path, ARTIFACT, "v1") is None
    assert input_problem(tmp_path, ARTIFACT, "step-20") is None
    assert _read(tmp_path, "v1") == "step 20"
    # The links made and removed moved the files' ctime, not their bytes: the manifest records
    # the kept files' stat, so the cheap check still reads nothing.
    hashed = _counting_hashes(monkeypatch)
    assert check_version(tmp_path, ARTIFACT, versions(tmp_path, ARTIFACT)[1], content=False).whole
    assert hashed == []
    assert check_version(tmp_path, ARTIFACT, versions(tmp_path, ARTIFACT)[1], content=True).whole
    # Asking again changes nothing; a version already deleted cannot be kept, and says why.
    assert keep_version(tmp_path, ARTIFACT, 1, pinned_by="x") == kept
    with pytest.raises(StoreError) as caught:
        keep_version(tmp_path, ARTIFACT, 0, pinned_by="teacher-vision: run.model")
    assert caught.value.render() == (
        f"{ARTIFACT}:v0: pinned by teacher-vision: run.model, cannot be kept: "
        f"{tmp_path / ARTIFACT / RUN / 'step_10'} is gone (its run's keep policy deleted it "
        f"first) (pin another version of {ARTIFACT} (recipekit store list shows them))"
    )


def test_keeping_interrupted_after_the_marker_is_finished_by_the_next_recovery(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    init_store(tmp_path)
    _save(tmp_path, 10)
    publish(tmp_path, ARTIFACT, RUN)

    def killed(phase: str) -> None:
        if phase == "marker":
            raise KeyboardInterrupt  # as a kill: nothing after this phase runs

    monkeypatch.setattr(store_module, "_phase", killed)
    with pytest.raises(KeyboardInterrupt):
        keep_version(tmp_path, ARTIFACT, 0, pinned_by="teacher-reasoning: run.model")
    monkeypatch.undo()
    [listed] = versions(tmp_path, ARTIFACT)
    assert not listed.kept  # the index was not committed
    assert recover(tmp_path, ARTIFACT) == [
        f"pointed v0 at its kept copy {RUN}/kept/step_10",
        "pointed latest, step-10, v0 at their versions",
    ]
    [listed] = versions(tmp_path, ARTIFACT)
    assert listed.kept and os.readlink(tmp_path / ARTIFACT / "v0") == f"{RUN}/kept/step_10"
    shutil.rmtree(tmp_path / ARTIFACT / RUN / "step_10")
    assert input_problem(tmp_path, ARTIFACT, "latest") is None


def test_a_megatron_checkpoint_still_being_written_is_not_published(tmp_path: Path) -> None:
    """Megatron-Bridge writes iter_<N>'s shards in place and its train state last: a publish
    while the run goes must not record the half-written iteration as a whole version."""
    init_store(tmp_path)
    run = tmp_path / "super35-sft-model" / "sft-0123456789ab"
    writing = run / "iter_0000100"
    writing.mkdir(parents=True)
    (writing / "shard_0.distcp").write_bytes(b"half of")
    assert publish(tmp_path, "super35-sft-model", run.name) == []
    (writing / "shard_1.distcp").write_bytes(b"the weights")
    (writing / "train_state.pt").write_bytes(b"iteration 100")
    [version] = publish(tmp_path, "super35-sft-model", run.name)
    assert version.step == 100
    marker = read_marker(tmp_path / "super35-sft-model", version.version)
    assert marker is not None
    assert {entry["name"] for entry in marker["files"]} >= {"shard_0.distcp", "shard_1.distcp"}


def test_publish_and_verify_say_how_far_their_hashing_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Both read every byte of a checkpoint (minutes for a large one): off a terminal (a job's
    # log, CI) each says what it hashes, the bytes of the total and the rate, on stderr.
    from click.testing import CliRunner

    from recipekit.cli.store import store

    init_store(tmp_path)
    _save(tmp_path, 40)
    publish(tmp_path, ARTIFACT, RUN)
    logged = capsys.readouterr().err
    assert f"store publish {ARTIFACT}:v0 (hashing {RUN}/step_40): started (7 B)" in logged
    assert "done: 7 B of 7 B (100%)" in logged
    done = CliRunner().invoke(store, ["verify", str(tmp_path), ARTIFACT])
    assert done.exit_code == 0, done.output
    assert f"store verify {ARTIFACT}: done: 7 B of 7 B (100%)" in done.stderr
    assert done.stdout == f"{ARTIFACT}:v0 ok\n"


def _store_cli(*args: str) -> Any:
    from click.testing import CliRunner

    from recipekit.cli.recipekit_cli import cli

    return CliRunner().invoke(cli, ["store", *args])


def test_store_list_marks_a_damaged_or_missing_version(tmp_path: Path) -> None:
    store, name = _imported(tmp_path)
    for other in ("blend-2", "blend-3", "blend-4"):
        import_version(store, DATA, tmp_path / "source", name=other)
    listed = _store_cli("list", str(store), DATA)
    assert listed.exit_code == 0 and "DAMAGED" not in listed.output, listed.output
    shard = store / DATA / "blend-2" / "shards" / "00.bin"
    shard.write_bytes(b"")  # truncated
    for file in (store / DATA / "blend-3").rglob("*.*"):
        file.unlink()  # emptied
    shutil.rmtree(store / DATA / "blend-4")  # deleted
    flipped = store / DATA / name / "train.jsonl"
    flipped.write_text(flipped.read_text().replace("2+2", "2+3"))  # the same size
    lines = _store_cli("list", str(store), DATA).output.splitlines()
    assert lines[0].endswith(f"DAMAGED: {flipped} does not hold what its manifest's sha256 says")
    assert lines[1].endswith(f"DAMAGED: {shard} is 0 bytes, its manifest says 2000")
    assert "blend-3  DAMAGED: " in lines[2] and "is missing (and 1 more)" in lines[2]
    assert lines[3].endswith(f"MISSING ({store / DATA / 'blend-4'} is gone)")


def test_store_list_of_an_unknown_artifact_is_one_line_with_a_suggestion(tmp_path: Path) -> None:
    store, _ = _imported(tmp_path)
    result = _store_cli("list", str(store), "super35-sft-dta")
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: ARTIFACT: the artifact store {store} holds no artifact 'super35-sft-dta' "
        f"(did you mean '{DATA}'?)\n"
    )
    assert _store_cli("list", str(store), "nothere").exit_code == 2
    assert _store_cli("list", str(tmp_path / "typo"), DATA).exit_code == 2


def test_verify_records_the_stat_of_files_whose_bytes_did_not_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A store copied elsewhere (a restore, a move to other storage): every inode is new, so
    # the cheap check reads every file, until store verify, having read them whole, records
    # their stat. A manifest from before stats were recorded gets them the same way.
    store, _ = _imported(tmp_path)
    moved = tmp_path / "moved"
    shutil.copytree(store, moved, symlinks=True)
    body = json.loads((moved / DATA / ".versions" / "v0.json").read_text())
    body["files"][0] = {
        k: v for k, v in body["files"][0].items() if k not in store_module.STAT_KEYS
    }
    (moved / DATA / ".versions" / "v0.json").write_text(json.dumps(_before_digests(body)))
    hashed = _counting_hashes(monkeypatch)
    [version] = versions(moved, DATA)
    assert check_version(moved, DATA, version, content=False).whole
    assert len(hashed) == 1  # the file whose manifest has its stat; the other by size only
    verified = _store_cli("verify", str(moved), DATA)
    assert verified.exit_code == 0
    assert f"{DATA}:v0 ok (the stat of 2 unchanged files recorded)" in verified.output
    hashed.clear()
    assert check_version(moved, DATA, version, content=False).whole
    assert hashed == []
    assert f"{DATA}:v0 ok\n" in _store_cli("verify", str(moved), DATA).stdout
