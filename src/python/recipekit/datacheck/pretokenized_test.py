"""Pre-tokenised data is tied to the tokenizer that made it (issue 43): a .bin/.idx pair written by
megatron-core's own IndexedDatasetBuilder (testdata/make_indexed_fixture.py) imports with its
tokenizer's sha256 and sequence length in the manifest; without a tokenizer, with one whose
vocabulary its ids overrun, or damaged, it is refused (exit 2, nothing written); at plan, a stage
whose model has another tokenizer or a longer sequence refuses it, naming both."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest
from click.testing import Result

from recipekit.datacheck.conftest import assert_refused, run_cli, tree, word_tokenizer
from recipekit.datacheck.plan import lock_findings
from recipekit.lineage.store import read_marker

FIXTURE = Path(__file__).parent / "testdata" / "indexed"
WORDS = ["the", "cat", "sat", "on", "a", "mat", "and", "slept"]  # ids 1-8, as the fixture's
ARTIFACT = "pretrain-tokens"


@pytest.fixture
def data(tmp_path: Path) -> Path:
    folder = tmp_path / "tokens"
    folder.mkdir()
    for suffix in (".bin", ".idx"):
        shutil.copy(FIXTURE.with_suffix(suffix), folder / f"part-0{suffix}")
    return folder


def _import(store: Path, data: Path, *args: str) -> Result:
    return run_cli("store", "import", str(store), ARTIFACT, str(data), "--name", "t", *args)


def test_imports_with_its_tokenizer_and_sequence_length(
    store: Path, data: Path, tmp_path: Path
) -> None:
    tokenizer = word_tokenizer(tmp_path / "tokenizer.json", WORDS)
    result = _import(store, data, "--tokenizer", str(tokenizer), "--seq-length", "4096")
    assert result.exit_code == 0, result.output
    marker = read_marker(store / ARTIFACT, 0)
    assert marker is not None
    stats = marker["meta"]["content"]["part-0.bin"]
    digest = hashlib.sha256(tokenizer.read_bytes()).hexdigest()
    assert stats == {
        "format": "megatron-indexed",
        "rows": 3,
        "documents": 3,
        "tokens": 11,
        "dtype": "int32",
        "max_sequence_tokens": 5,
        "largest_id_sampled": 8,
        "tokenizer": f"sha256:{digest}",
        "vocab_size": 9,
        "seq_length": 4096,
    }


def test_refused_without_its_tokenizer(store: Path, data: Path) -> None:
    before = tree(store)
    result = _import(store, data)
    assert result.exit_code == 2, result.output
    assert "is tied to the tokenizer that made it" in result.stderr
    assert tree(store) == before


def test_refused_with_a_tokenizer_its_ids_overrun(store: Path, data: Path, tmp_path: Path) -> None:
    smaller = word_tokenizer(tmp_path / "tokenizer.json", WORDS[:4])
    before = tree(store)
    result = _import(store, data, "--tokenizer", str(smaller))
    assert_refused(
        result,
        data / "part-0.bin",
        0,
        "holds token id 8, and the tokenizer given has 5 ids",
        before,
        store,
    )


@pytest.mark.parametrize(
    ("damage", "file", "said"),
    [
        ("truncated bin", "part-0.bin", "its index counts 11 int32 token ids (44 bytes)"),
        ("truncated idx", "part-0.idx", "a truncated or foreign index"),
        ("foreign idx", "part-0.idx", "is not a Megatron index"),
    ],
)
def test_a_damaged_pair_is_refused(
    store: Path, data: Path, tmp_path: Path, damage: str, file: str, said: str
) -> None:
    target = data / file
    if damage == "foreign idx":
        target.write_bytes(b"TNTIDX\x00\x00" + target.read_bytes()[8:])
    else:
        target.write_bytes(target.read_bytes()[:-4])
    tokenizer = word_tokenizer(tmp_path / "tokenizer.json", WORDS)
    before = tree(store)
    result = _import(store, data, "--tokenizer", str(tokenizer))
    assert_refused(result, target, 0, said, before, store)


def test_a_stage_with_another_tokenizer_or_a_longer_sequence_refuses_it(tmp_path: Path) -> None:
    (tmp_path / "made").mkdir()
    made = word_tokenizer(tmp_path / "made" / "tokenizer.json", WORDS)
    content = {
        "part-0.bin": {
            "format": "megatron-indexed",
            "tokenizer": f"sha256:{hashlib.sha256(made.read_bytes()).hexdigest()}",
            "seq_length": 4096,
        }
    }
    bridge = {"model": {"seq_length": 4096}, "dataset": {"seq_length": 4096}}
    assert lock_findings("pretrain", bridge, content, made.parent).errors == ()
    other = tmp_path / "other"
    other.mkdir()
    word_tokenizer(other / "tokenizer.json", [*WORDS, "dog"])
    longer = {"model": {"seq_length": 8192}, "dataset": {"seq_length": 8192}}
    errors = lock_findings("pretrain", longer, content, other).errors
    assert [e.path for e in errors] == [
        "pretrain: part-0.bin",
        "pretrain: model.seq_length",
        "pretrain: dataset.seq_length",
    ]
    assert "was tokenised with tokenizer sha256:" in errors[0].message
    assert f"the stage's model ({other / 'tokenizer.json'}) has sha256:" in errors[0].message
    assert errors[1].message.startswith(
        "is 8192, and part-0.bin was prepared for sequences of 4096"
    )
    # NeMo-RL's sequence length, and no tokenizer to compare: said, not refused.
    found = lock_findings("sft", {"policy": {"max_total_sequence_length": 2048}}, content, None)
    assert (len(found.errors), len(found.notes)) == (0, 1)
