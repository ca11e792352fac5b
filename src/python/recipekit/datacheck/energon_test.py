"""Megatron-Bridge's Energon datasets read before they are registered (issue 43): a dataset made by
Energon's own ``prepare`` (testdata/energon-chatml.tar, written by testdata/make_energon_fixture.py
with megatron-energon 7.4.1) imports through ``data import sft`` with its samples per split in the
manifest; each kind of damage is refused (exit 2) naming the file, shard or sample and the rule,
with nothing written to the store; ``store verify --content`` reads a stored version again."""

from __future__ import annotations

import json
import shutil
import tarfile
from pathlib import Path

import pytest

from recipekit.datacheck.conftest import assert_refused, run_cli, tree
from recipekit.datacheck.energon import FORMAT, check_energon, expand, part_refusal
from recipekit.datacheck.plan import DataFindings, energon_findings
from recipekit.errors import RecipeError
from recipekit.lineage.store import import_version, read_marker

FIXTURE = Path(__file__).parent / "testdata" / "energon-chatml.tar"
SFT_DATA = "super35-sft-data"


def unpack_fixture(where: Path) -> Path:
    """The prepared dataset unpacked at ``where`` (its files as energon prepare wrote them)."""
    where.mkdir(parents=True)
    with tarfile.open(FIXTURE) as packed:
        packed.extractall(where, filter="data")
    return where


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    """A copy of the prepared dataset, on the store's filesystem (the import hard-links it)."""
    return unpack_fixture(tmp_path / "energon")


def test_the_fixture_is_energons_own_output(dataset: Path) -> None:
    info = json.loads((dataset / ".nv-meta" / ".info.json").read_text())
    assert info["energon_version"] == "7.4.1"
    # energon prepare collapses a split's shard names into a brace pattern (bracecollapse).
    assert "train-shard-{000000..000001}.tar" in (dataset / ".nv-meta" / "split.yaml").read_text()


def test_a_prepared_dataset_imports_with_its_samples_per_split(store: Path, dataset: Path) -> None:
    result = run_cli("data", "import", "sft", str(dataset), "--store", str(store))
    assert result.exit_code == 0, result.output
    marker = read_marker(store / SFT_DATA, 0)
    assert marker is not None
    stats = marker["meta"]["content"]["."]
    assert stats["format"] == FORMAT
    assert stats["splits"] == {
        "train": {"shards": 2, "samples": 5},
        "val": {"shards": 1, "samples": 2},
    }
    assert (stats["shards"], stats["rows"], stats["decoded"]) == (3, 7, 7)
    assert stats["sample_type"].endswith("task_encoder_utils.ChatMLWebdataset")
    # The conversations' role sequences: the plan renders the stage's chat template on them.
    assert stats["roles"] == {"user,assistant": 7}
    result = run_cli("store", "verify", str(store), f"{SFT_DATA}:v0", "--content")
    assert result.exit_code == 0, result.output
    assert "content ok: Energon dataset ., 3 shards, 7 samples (train 5, val 2)" in result.output


def _member(shard: Path, suffix: str, number: int = 0) -> tarfile.TarInfo:
    with tarfile.open(shard) as tar:
        return [m for m in tar.getmembers() if m.name.endswith(suffix)][number]


def _overwrite(shard: Path, member: tarfile.TarInfo, payload: bytes) -> None:
    """A member's bytes replaced in place, its size kept: the tar and its index stay as energon
    prepare wrote them, only the sample's content changes."""
    assert len(payload) == member.size
    with shard.open("r+b") as handle:
        handle.seek(member.offset_data)
        handle.write(payload)


def _no_nv_meta(root: Path) -> tuple[Path, str]:
    shutil.rmtree(root / ".nv-meta")
    return root / ".nv-meta", "missing: not an Energon dataset"


def _listed_shard_missing(root: Path) -> tuple[Path, str]:
    (root / "train-shard-000001.tar").unlink()
    return root / "train-shard-000001.tar", "missing: .info.json counts 2 samples in shard"


def _truncated_shard(root: Path) -> tuple[Path, str]:
    shard = root / "train-shard-000000.tar"
    cut = _member(shard, ".conversation.json", 1)
    with shard.open("r+b") as handle:
        handle.truncate(cut.offset_data + 10)
    return shard, "truncated: member train-000000-001.conversation.json ends at byte"


def _shard_cut_between_samples(root: Path) -> tuple[Path, str]:
    shard = root / "train-shard-000000.tar"
    with shard.open("r+b") as handle:
        handle.truncate(_member(shard, ".image.png", 2).offset)
    return shard, "holds 2 samples, and .info.json records 3"


def _json_member_broken(root: Path) -> tuple[Path, str]:
    shard = root / "val-shard-000000.tar"
    member = _member(shard, ".conversation.json", 1)
    _overwrite(shard, member, b"[{" + b" " * (member.size - 2))
    return shard, (
        "sample 'val-000000-001' (sample 1 of the shard): val-000000-001.conversation.json "
        "does not parse as JSON"
    )


def _image_member_broken(root: Path) -> tuple[Path, str]:
    shard = root / "train-shard-000001.tar"
    member = _member(shard, ".image.png")
    _overwrite(shard, member, b"GIF89a" + b"\x00" * (member.size - 6))
    return shard, "train-000001-000.image.png is no png image"


def _empty_split(root: Path) -> tuple[Path, str]:
    split = root / ".nv-meta" / "split.yaml"
    split.write_text("split_parts:\n  train: []\n  val:\n  - val-shard-000000.tar\n")
    return split, "split 'train' lists no shards: Energon raises EmptyDatasetError"


def _field_map_names_a_missing_part(root: Path) -> tuple[Path, str]:
    dataset_yaml = root / ".nv-meta" / "dataset.yaml"
    dataset_yaml.write_text(dataset_yaml.read_text().replace("image.png", "image.jpg"))
    return root / "train-shard-000000.tar", "field 'imgs' needs part image.jpg"


def _index_of_another_shard(root: Path) -> tuple[Path, str]:
    index = root / "train-shard-000000.tar.idx"
    index.write_bytes((root / "train-shard-000001.tar.idx").read_bytes())
    return index, "indexes 2 samples, and .info.json records 3"


DAMAGE = {
    "no .nv-meta": _no_nv_meta,
    "a listed shard missing": _listed_shard_missing,
    "a truncated shard": _truncated_shard,
    "a shard cut between samples": _shard_cut_between_samples,
    "a JSON member that does not parse": _json_member_broken,
    "an image member that is not its format": _image_member_broken,
    "an empty train split": _empty_split,
    "a field map naming a part the samples lack": _field_map_names_a_missing_part,
    "an index that is another shard's": _index_of_another_shard,
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_each_damage_is_refused_with_nothing_written(
    store: Path, dataset: Path, damage: str
) -> None:
    file, said = DAMAGE[damage](dataset)
    before = tree(store)
    result = run_cli("data", "import", "sft", str(dataset), "--store", str(store))
    assert_refused(result, file, 0, said, before, store)


def test_store_import_of_a_folder_with_nv_meta_reads_it_first(store: Path, dataset: Path) -> None:
    file, said = _json_member_broken(dataset)
    before = tree(store)
    result = run_cli("store", "import", str(store), SFT_DATA, str(dataset), "--name", "blend")
    assert_refused(result, file, 0, said, before, store)


def test_store_verify_content_refuses_a_version_stored_without_the_checks(
    store: Path, dataset: Path
) -> None:
    # A version registered before imports read Energon data: its files match its manifest, and
    # only reading them as Energon does finds the broken sample.
    file, said = _json_member_broken(dataset)
    import_version(store, SFT_DATA, {"": dataset}, name="before-the-checks", link=True)
    result = run_cli("store", "verify", str(store), f"{SFT_DATA}:v0", "--content")
    assert result.exit_code == 1, result.output
    stored = store / SFT_DATA / "before-the-checks" / file.name
    assert f"{SFT_DATA}:v0 CONTENT: {stored}: {said}" in result.output


def test_shard_names_expand_as_braceexpand_does() -> None:
    assert expand("a-{000..002}.tar") == ["a-000.tar", "a-001.tar", "a-002.tar"]
    assert expand("{a,b{1,2}}.tar") == ["a.tar", "b1.tar", "b2.tar"]
    assert expand("s{8..12..2}") == ["s8", "s10", "s12"]
    assert expand("plain.tar") == ["plain.tar"]


@pytest.mark.parametrize(
    ("part", "data", "said"),
    [
        ("json", b'{"a": 1}', None),
        ("conversation.json", b"{", "does not parse as JSON"),
        ("txt", b"\xff", "does not parse as UTF-8 text"),
        ("cls", b"seven", "does not parse as an integer"),
        ("jpg", b"\x89PNG\r\n\x1a\n", "is no jpg image"),
        # A pickled list of JPEG frames (Bridge's videohandler), walked and never unpickled.
        ("jpgs", b"\x80\x04\x95\n\x00\x00\x00\x00\x00\x00\x00]\x94C\x03\xff\xd8\xff\x94a.", None),
        ("jpgs", b"\x80\x04\x95\n\x00\x00\x00\x00\x00\x00\x00]\x94C\x03abc\x94a.", "no image"),
        ("pyd", b"\x80\x04K", "not a pickle"),
        ("wav", b"anything", None),
    ],
)
def test_parts_parse_as_the_webdataset_decoder_parses_them(
    part: str, data: bytes, said: str | None
) -> None:
    problem = part_refusal(part, data)
    assert (problem is None) if said is None else (problem is not None and said in problem)


def test_a_conversation_without_turns_is_refused(dataset: Path) -> None:
    shard = dataset / "train-shard-000000.tar"
    member = _member(shard, ".conversation.json")
    _overwrite(shard, member, b"[]" + b" " * (member.size - 2))
    with pytest.raises(RecipeError, match="holds no turns: cook_chatml_sample"):
        check_energon(dataset)


def test_a_stage_that_validates_refuses_data_without_a_val_split(dataset: Path) -> None:
    (dataset / ".nv-meta" / "split.yaml").write_text(
        "split_parts:\n  train:\n  - train-shard-{000000..000001}.tar\n  val: []\n"
    )
    content = {".": check_energon(dataset)}
    assert content["."]["splits"]["val"] == {"shards": 0, "samples": 0}
    path = "/artifacts/super35-sft-data/latest"
    validating = {"dataset": {"path": path, "do_validation": True}}
    [error] = energon_findings("sft", validating, content).errors
    assert error.path == "sft: dataset.do_validation"
    assert "lists no samples in split 'val': Energon fails" in error.message
    # The recipe's default validates: said, not refused; the Super 3.5 SFT stages turn it off.
    found = energon_findings("sft", {"dataset": {"path": path}}, content)
    assert (len(found.errors), len(found.notes)) == (0, 1)
    off = {"dataset": {"path": path, "do_validation": False}}
    assert energon_findings("sft", off, content) == DataFindings()


def _dataset_yaml(root: Path, field_map: str) -> None:
    (root / ".nv-meta" / "dataset.yaml").write_text(
        "__module__: megatron.energon\n__class__: VQAWebdataset\nfield_map:\n" + field_map
    )


def test_a_field_map_path_into_json_is_followed_as_energon_follows_it(dataset: Path) -> None:
    # Energon's own VQA sample type reading into the conversation, as its docs' field_map does.
    _dataset_yaml(
        dataset, "  image: image.png\n  context: conversation.json[0][content][1][text]\n"
    )
    assert check_energon(dataset)["rows"] == 7
    # An alternative that does not reach a value falls back to the next (field_access.py).
    _dataset_yaml(
        dataset, "  image: image.png\n  context: conversation.json[5],conversation.json[0]\n"
    )
    assert check_energon(dataset)["rows"] == 7
    _dataset_yaml(dataset, "  image: image.png\n  context: conversation.json[0][question]\n")
    with pytest.raises(
        RecipeError, match=r"reads conversation.json\[0\]\[question\], and 'question'"
    ):
        check_energon(dataset)


@pytest.mark.parametrize(
    ("file", "text", "said"),
    [
        (".info.json", "[1, 2]", "holds no shard_counts"),
        (".info.json", '{"shard_counts": {"train-shard-000000.tar": true}}', "not a positive"),
        (".info.json", '{"shard_counts": {"../elsewhere.tar": 3}}', "outside the dataset's folder"),
        (".info.json", "{", "does not parse as JSON"),
        ("split.yaml", "split_parts: [train]", "holds no split_parts"),
        ("split.yaml", "split_parts: {train: [3]}", "not a list of shard names"),
        ("split.yaml", "split_parts: {val: [val-shard-000000.tar]}", "has no train split"),
        ("split.yaml", "split_parts: {train: [nope.tar]}", "lists shard 'nope.tar', which"),
        ("dataset.yaml", "[]", "is not a mapping"),
        ("dataset.yaml", "__module__: x\n__class__: Y\nfield_map: [a]", "not a mapping of"),
    ],
)
def test_broken_metadata_is_refused_without_a_traceback(
    dataset: Path, file: str, text: str, said: str
) -> None:
    (dataset / ".nv-meta" / file).write_text(text)
    with pytest.raises(RecipeError) as refused:
        check_energon(dataset)
    [issue] = refused.value.issues
    assert issue.path == str(dataset / ".nv-meta" / file)
    assert said in issue.message
