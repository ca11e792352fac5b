"""The store only moves forward: an index restored, deleted or damaged never costs a committed
version; a version holds its own bytes (no link out of it, ever); its manifest is sealed by its
own digest; the store's own names are reserved; a first version that failed is not published.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from recipekit.lineage import store as store_module
from recipekit.lineage.store import (
    StoredVersion,
    StoreError,
    check_version,
    committed_versions,
    import_version,
    init_store,
    input_problem,
    publish,
    recover,
    versions,
)

DATA = "super35-sft-data"
MODEL = "super35-rl-rlvr-model"
RUN = "rlvr-66b782458180"


def _source(where: Path, tag: str = "") -> Path:
    source = where / f"source{tag}"
    (source / "shards").mkdir(parents=True, exist_ok=True)
    (source / "train.jsonl").write_text(f'{{"prompt": "2+2?{tag}"}}\n')
    (source / "shards" / "00.bin").write_bytes(os.urandom(500))
    return source


def _four_versions(tmp_path: Path) -> tuple[Path, list[StoredVersion], list[bytes]]:
    """A store with v0..v3 of DATA, and versions.json as it was after each commit."""
    store = tmp_path / "store"
    init_store(store)
    indexes = []
    for number in range(4):
        import_version(store, DATA, _source(tmp_path, str(number)), name=f"blend-{number}")
        indexes.append((store / DATA / "versions.json").read_bytes())
    return store, versions(store, DATA), indexes


def _whole(store: Path, artifact: str) -> list[str]:
    """Every problem of every listed version, read byte for byte, and of its links."""
    listed = versions(store, artifact)
    problems = [p for v in listed for p in check_version(store, artifact, v).problems]
    return problems + store_module.link_problems(store, artifact, listed)


# --- an index that is behind, gone or damaged ------------------------------------------------


def test_an_older_index_restored_loses_no_committed_version(tmp_path: Path) -> None:
    store, listed, indexes = _four_versions(tmp_path)
    (store / DATA / "versions.json").write_bytes(indexes[1])  # "restore versions.json"
    said = recover(store, DATA)
    assert said == [
        "rebuilt versions.json from 4 completion markers: it listed v0..v1, the markers and "
        "links show v0..v3; it was behind (an older copy restored?)"
    ]
    assert versions(store, DATA) == listed
    assert _whole(store, DATA) == []
    # The next import is v4: v1 is never reused for other bytes.
    assert import_version(store, DATA, _source(tmp_path, "x"), name="blend-x").version == 4


def test_a_deleted_index_is_rebuilt_from_the_markers_and_links(tmp_path: Path) -> None:
    store, listed, _ = _four_versions(tmp_path)
    (store / DATA / "versions.json").unlink()
    assert recover(store, DATA) == [
        "rebuilt versions.json from 4 completion markers: it was missing"
    ]
    assert versions(store, DATA) == listed and _whole(store, DATA) == []


def _damages() -> dict[str, Callable[[list[dict[str, Any]]], list[dict[str, Any]]]]:
    """Ways to damage an index that leave it valid JSON."""

    def changed(key: str, value: Any, at: int = 2) -> Callable[[Any], Any]:
        return lambda entries: [{**e, key: value} if i == at else e for i, e in enumerate(entries)]

    return {
        "empty": lambda entries: [],
        "last dropped": lambda entries: entries[:-1],
        "middle dropped": lambda entries: entries[:1] + entries[2:],
        "swapped": lambda entries: [entries[1], entries[0], *entries[2:]],
        "duplicated": lambda entries: [*entries, entries[-1]],
        "phantom added": lambda entries: [
            *entries,
            {**entries[-1], "version": len(entries), "path": "blend-9"},
        ],
        "other path": changed("path", "blend-0"),
        "other step": changed("step", 7),
        "other run": changed("run", "x"),
        "kept flipped": changed("kept", True),
        "path escaping": changed("path", "../elsewhere"),
        "path an alias": changed("path", "latest"),
        "number a string": changed("version", "2"),
        "number a bool": changed("version", True, at=1),
        "negative number": changed("version", -1, at=0),
    }


@pytest.mark.parametrize("damage", sorted(_damages()))
def test_an_index_damaged_in_any_json_valid_way_keeps_every_version(
    tmp_path: Path, damage: str
) -> None:
    store, listed, _ = _four_versions(tmp_path)
    index = store / DATA / "versions.json"
    entries = json.loads(index.read_text())["versions"]
    index.write_text(json.dumps({"versions": _damages()[damage](entries)}))
    said = recover(store, DATA)
    assert len(said) == 1 and said[0].startswith("rebuilt versions.json from 4"), said
    assert versions(store, DATA) == listed
    assert _whole(store, DATA) == []
    assert sorted(p.name for p in (store / DATA / ".versions").iterdir()) == [
        f"v{n}.json" for n in range(4)
    ]
    assert import_version(store, DATA, _source(tmp_path, "x"), name="blend-x").version == 4


def test_verify_says_what_it_found_and_rebuilt(tmp_path: Path) -> None:
    store, listed, indexes = _four_versions(tmp_path)
    (store / DATA / "versions.json").write_bytes(indexes[0])
    verified = _store_cli("verify", str(store), DATA)
    assert verified.exit_code == 0, verified.output
    assert "it listed v0, the markers and links show v0..v3" in verified.output
    assert [f"{DATA}:v{n} ok" in verified.output for n in range(4)] == [True] * 4
    assert versions(store, DATA) == listed


def test_a_gap_below_a_published_version_is_an_error_that_changes_nothing(
    tmp_path: Path,
) -> None:
    store, _, indexes = _four_versions(tmp_path)
    (store / DATA / ".versions" / "v1.json").unlink()
    (store / DATA / "versions.json").write_bytes(indexes[0])
    before = sorted(str(p) for p in (store / DATA).rglob("*"))
    with pytest.raises(StoreError, match="v1 has no completion marker"):
        recover(store, DATA)
    assert sorted(str(p) for p in (store / DATA).rglob("*")) == before


def test_a_deleted_marker_of_an_indexed_linked_version_keeps_the_version(
    tmp_path: Path,
) -> None:
    store, listed, _ = _four_versions(tmp_path)
    (store / DATA / ".versions" / "v3.json").unlink()
    assert recover(store, DATA) == []
    assert versions(store, DATA) == listed
    assert "v3 has no completion marker" in str(input_problem(store, DATA, "v3"))


# --- a first version that failed --------------------------------------------------------------


class _Killed(BaseException):
    """Stands for the process dying at a phase (what is left is what a kill leaves, and the
    import's own clean-up runs as the next command's recovery would)."""


@pytest.mark.parametrize("phase", ["files", "moved", "marker", "links"])
@pytest.mark.parametrize("fault", ["killed", "no space"])
def test_a_first_version_that_failed_before_its_index_is_never_published(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, phase: str, fault: str
) -> None:
    store = tmp_path / "store"
    init_store(store)

    def hook(reached: str) -> None:
        if reached == phase:
            if fault == "killed":
                raise _Killed
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(store_module, "_phase", hook)
    with pytest.raises((_Killed, StoreError)):
        import_version(store, DATA, _source(tmp_path), name="blend-1")
    monkeypatch.undo()
    recover(store, DATA)
    assert versions(store, DATA) == []
    assert not list((store / DATA / ".versions").glob("*.json"))
    assert not (store / DATA / "v0").is_symlink() and not (store / DATA / "blend-1").exists()
    assert import_version(store, DATA, _source(tmp_path), name="blend-1").version == 0


def test_a_marker_left_without_index_or_link_is_not_published(tmp_path: Path) -> None:
    # What a first publish killed after its markers leaves: markers, no index, no links.
    store = tmp_path / "store"
    init_store(store)
    for step in (10, 20):
        saved = store / MODEL / RUN / f"step_{step}"
        saved.mkdir(parents=True)
        (saved / "w.bin").write_bytes(b"w" * step)
    publish(store, MODEL, RUN)
    for name in ("versions.json", "v0", "v1", "latest", "step-10", "step-20"):
        (store / MODEL / name).unlink()
    assert recover(store, MODEL) == [
        "removed the marker of v0, which was never published",
        "removed the marker of v1, which was never published",
    ]
    assert versions(store, MODEL) == []
    assert [v.step for v in publish(store, MODEL, RUN)] == [10, 20]


# --- a version holds its own bytes -------------------------------------------------------------


def test_an_import_through_a_link_stores_what_it_leads_to(tmp_path: Path) -> None:
    store = tmp_path / "store"
    init_store(store)
    real = _source(tmp_path)
    (tmp_path / "named").mkdir()
    linked_dir = tmp_path / "named" / "blend"
    linked_dir.symlink_to(os.path.relpath(real, linked_dir.parent))
    linked_file = tmp_path / "named" / "train.jsonl"
    linked_file.symlink_to("../source/train.jsonl")
    import_version(store, DATA, linked_dir, name="whole")
    import_version(store, DATA, linked_file, name="one")
    whole, one = store / DATA / "whole", store / DATA / "one"
    assert not any(p.is_symlink() for p in whole.rglob("*")) and (whole / "train.jsonl").is_file()
    assert not (one / "train.jsonl").is_symlink()
    assert (one / "train.jsonl").read_text() == (real / "train.jsonl").read_text()
    assert _whole(store, DATA) == []


def test_a_link_leading_out_of_an_import_is_refused_however_it_is_spelt(tmp_path: Path) -> None:
    store = tmp_path / "store"
    init_store(store)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("x")
    for target in ("../../outside/secret", str(outside / "secret"), "up/../secret"):
        source = _source(tmp_path, target.replace("/", "_"))
        (source / "up").symlink_to(outside)
        (source / "escape").symlink_to(target)
        with pytest.raises(StoreError, match="outside what is imported"):
            import_version(store, DATA, source, name="blend")
        assert versions(store, DATA) == []


def test_a_file_swapped_for_a_link_to_the_same_bytes_outside_is_damage(tmp_path: Path) -> None:
    store = tmp_path / "store"
    init_store(store)
    import_version(store, DATA, _source(tmp_path), name="blend")
    [version] = versions(store, DATA)
    stored = store / DATA / "blend" / "train.jsonl"
    outside = tmp_path / "copy.jsonl"
    shutil.copy2(stored, outside)
    stored.unlink()
    stored.symlink_to(outside)
    marker = (store / DATA / ".versions" / "v0.json").read_bytes()
    for content in (False, True):
        state = check_version(store, DATA, version, content=content)
        assert f"{stored} is a link; its manifest lists a file" in state.problems
    verified = _store_cli("verify", str(store), DATA)
    assert verified.exit_code == 1 and "is a link; its manifest lists a file" in verified.output
    assert "is a link" in str(input_problem(store, DATA, "latest"))
    # Nothing of the outside file was recorded.
    assert (store / DATA / ".versions" / "v0.json").read_bytes() == marker


def test_a_folder_swapped_for_a_link_to_a_copy_outside_is_damage(tmp_path: Path) -> None:
    store = tmp_path / "store"
    init_store(store)
    import_version(store, DATA, _source(tmp_path), name="blend")
    [version] = versions(store, DATA)
    shards = store / DATA / "blend" / "shards"
    copy = tmp_path / "shards-copy"
    shutil.copytree(shards, copy)
    shutil.rmtree(shards)
    shards.symlink_to(copy)
    problems = check_version(store, DATA, version).problems
    assert any("is a link to" in p and "not a folder of the version" in p for p in problems)
    # The version's own folder swapped for a link to a copy of it.
    whole = store / DATA / "blend"
    shutil.rmtree(copy)
    shards.unlink()
    shutil.copytree(_source(tmp_path) / "shards", shards)
    moved = tmp_path / "blend-copy"
    whole.rename(moved)
    whole.symlink_to(moved)
    problems = check_version(store, DATA, version).problems
    assert any("not the version's own folder" in p for p in problems), problems


def test_a_checkpoint_holding_a_link_out_of_it_is_not_published(tmp_path: Path) -> None:
    store = tmp_path / "store"
    init_store(store)
    saved = store / MODEL / RUN / "step_10"
    saved.mkdir(parents=True)
    (saved / "w.bin").write_bytes(b"w")
    (saved / "shared").symlink_to("../../../elsewhere")
    with pytest.raises(StoreError, match="outside the checkpoint"):
        publish(store, MODEL, RUN)
    assert versions(store, MODEL) == []
    assert not list((store / MODEL / ".versions").glob("*.json"))


# --- the manifest is sealed; the store's names are its own ----------------------------------


def test_a_manifest_edited_in_a_json_valid_way_is_a_damaged_marker(tmp_path: Path) -> None:
    store = tmp_path / "store"
    init_store(store)
    import_version(store, DATA, _source(tmp_path), name="blend")
    stored = store / DATA / "blend" / "train.jsonl"
    stored.write_text('{"prompt": "other"}\n')
    marker_file = store / DATA / ".versions" / "v0.json"
    body = json.loads(marker_file.read_text())
    # The edit that would make the changed file pass: its size and sha256 rewritten.
    import hashlib

    for entry in body["files"]:
        if entry["name"] == "train.jsonl":
            entry["size"] = stored.stat().st_size
            entry["sha256"] = hashlib.sha256(stored.read_bytes()).hexdigest()
    marker_file.write_text(json.dumps(body))
    assert "has a damaged completion marker" in str(input_problem(store, DATA, "latest"))
    # Nor does dropping the digest make it pass as a marker of the first format's.
    marker_file.write_text(json.dumps({k: v for k, v in body.items() if k != "digest"}))
    assert "has a damaged completion marker" in str(input_problem(store, DATA, "latest"))


@pytest.mark.parametrize(
    "name", ["versions.json", ".versions", ".partial", ".lock", "v3", "latest", "kept"]
)
def test_the_stores_own_names_are_reserved(tmp_path: Path, name: str) -> None:
    store = tmp_path / "store"
    init_store(store)
    with pytest.raises(StoreError, match="store"):
        import_version(store, DATA, _source(tmp_path), name=name)
    assert not (store / DATA / name).is_dir()


def test_committed_versions_names_the_evidence(tmp_path: Path) -> None:
    store, listed, _ = _four_versions(tmp_path)
    assert committed_versions(store / DATA) == (listed, [])


def _store_cli(*args: str) -> Any:
    from click.testing import CliRunner

    from recipekit.cli.recipekit_cli import cli

    return CliRunner().invoke(cli, ["store", *args])
