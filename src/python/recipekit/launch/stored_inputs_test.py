"""submit and the job's preflight refuse an input version the store holds damaged, naming
the file; preflight finishes the aliases an interrupted import or publish left behind."""

from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path

import pytest

from recipekit.hardware import B200_NODE
from recipekit.launch import preflight
from recipekit.launch.preflight import NodeContext
from recipekit.launch.profile import ArtifactStore, ClusterProfile, Mount, Pyxis
from recipekit.launch.submit import stored_input_issues
from recipekit.lineage import store as store_module
from recipekit.lineage.store import import_version, init_store
from recipekit.shared_files import exclusive

DATA = "super35-sft-data"
IMAGE = "nvcr.io/your-org/nemo-rl@sha256:" + "0" * 64


def _plan(selector: str) -> dict[str, object]:
    return {"inputs": {"data": f"/artifacts/{DATA}/{selector}", "tokenizer": "/hf/tokenizer"}}


def test_submit_refuses_a_truncated_or_deleted_input_version(tmp_path: Path) -> None:
    store, source = tmp_path / "store", tmp_path / "blend"
    source.mkdir()
    (source / "train.jsonl").write_text('{"prompt": "2+2?"}\n')
    init_store(store)
    import_version(store, DATA, source, name="blend-1")
    assert stored_input_issues(_plan("latest"), store) == []
    # Not published yet: a pipeline's earlier stage will; preflight checks it on the nodes.
    assert stored_input_issues(_plan("v7"), store) == []

    shard = store / DATA / "blend-1" / "train.jsonl"
    shard.write_text("")
    [issue] = stored_input_issues(_plan("v0"), store)
    assert issue.path == "inputs.data"
    assert f"{shard} is 0 bytes, its manifest says 19" in issue.message

    shutil.rmtree(store / DATA / "blend-1")
    [issue] = stored_input_issues(_plan("latest"), store)
    assert "was deleted" in issue.message and "blend-1 is gone" in issue.message


def test_submit_refuses_a_same_size_byte_flip(tmp_path: Path) -> None:
    store, source = tmp_path / "store", tmp_path / "blend"
    source.mkdir()
    (source / "train.jsonl").write_text('{"prompt": "2+2?"}\n')
    init_store(store)
    import_version(store, DATA, source, name="blend-1")
    shard = store / DATA / "blend-1" / "train.jsonl"
    shard.write_text('{"prompt": "2+3?"}\n')  # the same 19 bytes
    [issue] = stored_input_issues(_plan("latest"), store)
    assert f"{shard} does not hold what its manifest's sha256 says" in issue.message


def _killed_at_the_index(tmp_path: Path) -> Path:
    """A store where the import of blend-2 was killed once its index was written (the
    version exists) and before its aliases were renamed into place."""
    store, source = tmp_path / "store", tmp_path / "blend"
    source.mkdir()
    (source / "train.jsonl").write_text('{"prompt": "2+2?"}\n')
    init_store(store)
    import_version(store, DATA, source, name="blend-1")
    import_version(store, DATA, source, name="blend-2")
    artifact = store / DATA
    for alias in ("latest", "v1"):  # as _commit leaves them: made, not yet renamed
        (artifact / alias).rename(artifact / f".{alias}.link.tmp")
    (artifact / "latest").symlink_to("blend-1")
    assert os.readlink(artifact / ".latest.link.tmp") == "blend-2"
    return store


def _node(tmp_path: Path, store: Path, selector: str) -> NodeContext:
    profile = ClusterProfile(
        name="local",
        node=B200_NODE,
        partition="gpu",
        container=Pyxis(image=IMAGE, mounts=(Mount(str(tmp_path), str(tmp_path)),)),
        runs_dir=str(tmp_path),
        artifact_store=ArtifactStore(path=str(store)),
    )
    plan = {"inputs": {"data": f"/artifacts/{DATA}/{selector}"}}
    return NodeContext(
        plan=plan,
        profile=profile,
        node_index=0,
        node_name="node-1",
        node_address="127.0.0.1",
        run_path=str(tmp_path),
    )


def test_preflight_finishes_the_links_an_import_killed_at_its_index_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _killed_at_the_index(tmp_path)
    # The node sees the store at /artifacts; here it is at its host path.
    monkeypatch.setattr(preflight, "ARTIFACTS_ROOT", str(store))
    ctx = _node(tmp_path, Path("/shared/artifacts"), "latest")
    # Another import or publish holding the artifact's lock finishes the links itself: the
    # node waits for that a while, then says so with the store's own path, not a placeholder.
    monkeypatch.setattr(store_module, "REPAIR_WAIT_S", 0.5)
    with exclusive(store / DATA / ".lock"):
        problem = preflight.inputs_exist(ctx)
    assert problem is not None and "does not point at v1 (blend-2)" in problem
    assert f"recipekit store verify /shared/artifacts {DATA} repairs it" in problem
    assert "STORE" not in problem
    assert preflight.inputs_exist(ctx) is None
    assert os.readlink(store / DATA / "latest") == "blend-2"
    assert os.readlink(store / DATA / "v1") == "blend-2"
    assert not list((store / DATA).glob(".*.link.tmp"))


def test_preflight_refuses_a_same_size_byte_flip(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, source = tmp_path / "store", tmp_path / "blend"
    source.mkdir()
    (source / "train.jsonl").write_text('{"prompt": "2+2?"}\n')
    init_store(store)
    import_version(store, DATA, source, name="blend-1")
    monkeypatch.setattr(preflight, "ARTIFACTS_ROOT", str(store))
    ctx = _node(tmp_path, Path("/shared/artifacts"), "v0")
    assert preflight.inputs_exist(ctx) is None
    shard = store / DATA / "blend-1" / "train.jsonl"
    shard.write_text('{"prompt": "2+3?"}\n')
    problem = preflight.inputs_exist(ctx)
    assert problem is not None and "does not hold what its manifest's sha256 says" in problem


def test_nodes_repairing_at_once_each_pass_preflight(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every node of the job finds the links behind at once; the one that takes the lock
    # repairs them, and the others, finding the lock held, wait for that and pass.
    store = _killed_at_the_index(tmp_path)
    monkeypatch.setattr(preflight, "ARTIFACTS_ROOT", str(store))
    ctx = _node(tmp_path, Path("/shared/artifacts"), "latest")

    def other_node() -> None:
        with exclusive(store / DATA / ".lock"):
            time.sleep(0.5)
            store_module._recover(store / DATA)

    repairing = threading.Thread(target=other_node)
    repairing.start()
    time.sleep(0.1)
    try:
        assert preflight.inputs_exist(ctx) is None
    finally:
        repairing.join()


def test_submit_names_the_store_it_was_given_in_the_hint(tmp_path: Path) -> None:
    store = _killed_at_the_index(tmp_path)
    [issue] = stored_input_issues(_plan("latest"), store)
    assert f"recipekit store verify {store} {DATA} repairs it" in issue.message
