"""submit refuses an input version the store holds damaged, naming the file."""

from __future__ import annotations

import shutil
from pathlib import Path

from recipekit.launch.submit import stored_input_issues
from recipekit.lineage.store import import_version, init_store

DATA = "super35-sft-data"


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
