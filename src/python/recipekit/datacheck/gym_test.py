"""NeMo Gym JSONL read before it is registered (issue 43): NeMo Gym's own example rows from its
0.7.0 wheel (pinned in 3rdparty/reference/manifest.toml), each kind of bad row refused through
`recipekit data import rl` and `store import` with nothing written, statistics in the manifest,
and generated rows that never make the checker fail with a traceback."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recipekit.datacheck import check_rl_files, gym_of_readers
from recipekit.datacheck.conftest import assert_refused, run_cli, tree, word_tokenizer, write_jsonl
from recipekit.datacheck.gym import check_jsonl, gym_rows
from recipekit.errors import RecipeError
from recipekit.lineage.store import read_marker, versions
from tools import generate_gym_rows as generator

GYM = "nemo-gym/0.7.0"
RLVR_DATA = "super35-rl-rlvr-data"
# genrm_compare's example rows carry agent_ref (genrm_simple_agent), as NeMo-RL super-v3.5
# needs (nemo_rl/environments/nemo_gym.py:676 reads row["agent_ref"]["name"]); rlvr's Gym
# config names genrm_compare.yaml (recipes/super35/rl.py).
GENRM_EXAMPLE = "resources_servers/genrm_compare/data/example.jsonl"
# math_with_judge's example rows have none: NeMo Gym's data preparation adds it.
MATH_EXAMPLE = "resources_servers/math_with_judge/data/example.jsonl"
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32


def test_the_table_is_what_the_tool_reads_from_the_pinned_sources(reference_dir: Path) -> None:
    for path, text in generator.generate(reference_dir).items():
        committed = (generator.CHECKOUT / path).read_text()
        assert committed == text, f"{path} is stale: run python3 {generator.TOOL}"


def test_the_table_names_where_each_field_is_read() -> None:
    reads = {r["field"]: r for r in gym_rows()["reads"]}
    assert reads["agent_ref.name"]["sites"][0] == "nemo_rl/environments/nemo_gym.py:676"
    assert reads["responses_create_params"]["sites"] == ["nemo_rl/experience/rollouts.py:2230"]
    assert reads[""]["sites"] == [
        "nemo_rl/data/datasets/response_datasets/nemogym_dataset.py:36",
        "nemo_rl/data/processors.py:792",
    ]
    request = gym_rows()["request"]
    assert request["forbids_extra"] is True
    assert request["keys"]["input"]["required"] is True
    assert request["keys"]["max_output_tokens"]["type"] == "int | None"


def test_rlvrs_gym_config_defines_the_agents() -> None:
    from recipes.super35.rl import rlvr

    gym = gym_of_readers([rlvr])
    assert gym.agents is not None
    assert {"genrm_simple_agent", "mcqa_simple_agent", "math_with_judge_simple_agent"} <= gym.agents


# --- through the CLI ---------------------------------------------------------------------


def _row(agent: str = "mcqa_simple_agent", **params: Any) -> dict[str, Any]:
    """A row as NeMo-RL super-v3.5 indexes it: agent_ref.name (nemo_gym.py:676) and
    responses_create_params with its input (rollouts.py:2230, :441)."""
    return {
        "agent_ref": {"type": "responses_api_agents", "name": agent},
        "responses_create_params": {
            "input": [{"role": "user", "content": "What is 2+2?"}],
            **params,
        },
        "expected_answer": "4",
    }


def test_nemo_gyms_example_rows_import_with_their_statistics(
    store: Path, tmp_path: Path, reference_dir: Path
) -> None:
    example = (reference_dir / GYM / GENRM_EXAMPLE).read_text()
    train = tmp_path / "train.jsonl"
    train.write_text(example)
    result = run_cli("data", "import", "rl", str(train), "--store", str(store))
    assert result.exit_code == 0, result.output
    marker = read_marker(store / RLVR_DATA, 0)
    assert marker is not None
    stats = marker["meta"]["content"]["train.jsonl"]
    rows = [json.loads(line) for line in example.splitlines()]
    assert stats["rows"] == len(rows) == 5
    assert stats["agents"] == {"genrm_simple_agent": 5}
    assert stats["format"] == "nemo-gym-jsonl"
    assert 0 < stats["prompt_chars"]["p50"] <= stats["prompt_chars"]["max"]
    # The store's guarantees hold: the manifest digest is still recorded beside the content.
    assert marker["meta"]["manifest_digest"]


def test_rows_without_agent_ref_are_refused_naming_line_and_field(
    store: Path, tmp_path: Path, reference_dir: Path
) -> None:
    train = tmp_path / "train.jsonl"
    train.write_text((reference_dir / GYM / MATH_EXAMPLE).read_text())
    before = tree(store)
    result = run_cli("data", "import", "rl", str(train), "--store", str(store))
    assert result.exit_code == 2, result.output
    last = result.stderr.strip().splitlines()[-1]
    assert last == (
        f"error: {train}:1: agent_ref: missing (a JSON object naming the row's agent; "
        "nemo_rl/environments/nemo_gym.py:676) (and 4 more lines refused) "
        "(nothing was registered)"
    )
    assert tree(store) == before


BAD: dict[str, tuple[list[Any], int, str]] = {
    "unparsable": (['{"agent_ref": '], 1, "not JSON"),
    "blank line": ([_row(), ""], 2, "a blank line"),
    "not an object": ([_row(), [1, 2]], 2, "is an array, not a JSON object"),
    "missing field": (
        [{"agent_ref": {"name": "mcqa_simple_agent"}}],
        1,
        "responses_create_params: missing",
    ),
    "wrong type": (
        [_row(), {**_row(), "responses_create_params": "What is 2+2?"}],
        2,
        "responses_create_params: is a string, not dict",
    ),
    "wrong-typed max_output_tokens": (
        [_row(max_output_tokens="1024")],
        1,
        "responses_create_params.max_output_tokens: is a string, not int | None",
    ),
    "a key NeMo Gym refuses": (
        [_row(max_tokens=1024)],
        1,
        "responses_create_params.max_tokens: NeMo Gym's request type declares no such key",
    ),
    "unknown agent": ([_row(agent="mcqa_simple_agnet")], 1, "agent_ref.name: 'mcqa_simple_agnet'"),
    "missing media": (
        [
            {
                **_row(),
                "responses_create_params": {
                    "input": [
                        {
                            "role": "user",
                            "content": [
                                {"type": "input_text", "text": "Where is the cat?"},
                                {"type": "input_image", "image_url": "/nonexistent/cat.png"},
                            ],
                        }
                    ]
                },
            }
        ],
        1,
        "responses_create_params.input[0].content[1].image_url: image /nonexistent/cat.png is "
        "missing",
    ),
    "empty file": ([], 0, "holds no rows"),
}


@pytest.mark.parametrize("kind", list(BAD))
def test_each_bad_kind_is_refused_with_nothing_written(
    store: Path, tmp_path: Path, kind: str
) -> None:
    rows, line, said = BAD[kind]
    train = write_jsonl(tmp_path / "train.jsonl", rows) if rows else tmp_path / "train.jsonl"
    if not rows:
        train.write_text("")
    before = tree(store)
    result = run_cli("data", "import", "rl", str(train), "--store", str(store))
    assert_refused(result, train, line, said, before, store)


def test_store_import_reads_rl_data_first(store: Path, tmp_path: Path) -> None:
    folder = tmp_path / "blend"
    folder.mkdir()
    write_jsonl(folder / "train.jsonl", [_row(), _row(agent="my_own_agent")])
    write_jsonl(folder / "val.jsonl", [_row(), "{"])
    before = tree(store)
    result = run_cli("store", "import", str(store), RLVR_DATA, str(folder), "--name", "b1")
    assert result.exit_code == 2, result.output
    assert f"{folder / 'val.jsonl'}:2: not JSON" in result.stderr.strip().splitlines()[-1]
    assert tree(store) == before
    write_jsonl(folder / "val.jsonl", [_row()])
    result = run_cli("store", "import", str(store), RLVR_DATA, str(folder), "--name", "b1")
    assert result.exit_code == 0, result.output
    [version] = versions(store, RLVR_DATA)
    marker = read_marker(store / RLVR_DATA, version.version)
    assert marker is not None
    # No stage is known to store import: any agent passes here, and the plan checks it.
    content = marker["meta"]["content"]
    assert content["train.jsonl"]["agents"] == {"mcqa_simple_agent": 1, "my_own_agent": 1}


def test_local_images_are_read(tmp_path: Path) -> None:
    image = tmp_path / "cat.png"
    image.write_bytes(PNG)
    not_image = tmp_path / "cat.txt"
    not_image.write_text("meow")

    def with_image(url: str) -> dict[str, Any]:
        part = {"type": "input_image", "image_url": url}
        return {
            **_row(),
            "responses_create_params": {"input": [{"role": "user", "content": [part]}]},
        }

    good = write_jsonl(tmp_path / "good.jsonl", [with_image(str(image)), with_image("cat.png"),
                                             with_image(image.as_uri())])  # fmt: skip
    assert check_jsonl(good)["rows"] == 3
    bad = write_jsonl(tmp_path / "bad.jsonl", [with_image(str(not_image))])
    with pytest.raises(RecipeError, match="is no image file PIL reads"):
        check_jsonl(bad)


def test_prompt_tokens_with_a_tokenizer_built_here(tmp_path: Path) -> None:
    saved = word_tokenizer(tmp_path / "tokenizer.json", ["What", "is", "2", "+", "?"])
    long_row = {**_row(), "responses_create_params": {"input": "What is " * 50}}
    train = write_jsonl(tmp_path / "train.jsonl", [_row(), _row(), long_row])
    content = check_rl_files({"train.jsonl": train}, tokenizer=saved)
    tokens = content["train.jsonl"]["prompt_tokens"]
    # "What is 2+2?" -> What, is, 2, +, 2, ? (6 tokens); the long row 100.
    assert (tokens["max"], tokens["p50"]) == (100, 6)
    assert tokens["longest"] == [100, 6, 6]
    assert tokens["tokenizer"].startswith("sha256:")


# --- generated rows ----------------------------------------------------------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=12,
)
NEAR_ROWS = st.fixed_dictionaries(
    {},
    optional={
        "agent_ref": st.one_of(JSON, st.fixed_dictionaries({"name": JSON})),
        "responses_create_params": st.one_of(
            JSON,
            st.fixed_dictionaries(
                {"input": st.one_of(JSON, st.lists(JSON, max_size=3))},
                optional={"max_output_tokens": JSON, "temperature": JSON, "bogus": JSON},
            ),
        ),
        "extra": JSON,
    },
)


def _pinned_reader_accepts(row: Any) -> None:
    """What NeMo-RL super-v3.5 does with a row before the Gym call, step by step: it raises
    where the rollout would."""
    assert isinstance(row, dict)
    params = row.get("responses_create_params")  # rollouts.py:2229
    if not isinstance(params, dict):  # rollouts.py:2230
        raise TypeError("responses_create_params")
    limit = params.get("max_output_tokens")  # rollouts.py:2238
    _ = min(limit, 10) if limit is not None else 10
    _ = row["agent_ref"]["name"]  # nemo_gym.py:676
    hash(row["agent_ref"]["name"])  # a Counter key (nemo_gym.py:676)
    messages = params["input"]
    if isinstance(messages, list):
        for message in messages:
            message.get("role")  # rollouts.py:441


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rows=st.lists(st.one_of(NEAR_ROWS, JSON), min_size=1, max_size=4), raw=st.binary(max_size=20)
)
def test_generated_rows_never_traceback_and_what_passes_the_reader_takes(
    tmp_path: Path, rows: list[Any], raw: bytes
) -> None:
    path = tmp_path / "rows.jsonl"
    body = "".join(json.dumps(r) + "\n" for r in rows).encode()
    path.write_bytes(body + (raw if b"\n" not in raw else b""))
    try:
        check_jsonl(path)
    except RecipeError as exc:
        assert len(exc.render().splitlines()) == 1
        return
    for line in path.read_bytes().splitlines():
        _pinned_reader_accepts(json.loads(line))


def test_a_row_nested_past_the_parser_is_refused(tmp_path: Path) -> None:
    deep = write_jsonl(tmp_path / "deep.jsonl", ["[" * 100_000 + "]" * 100_000])
    with pytest.raises(RecipeError, match=f"{deep}:1: "):
        check_jsonl(deep)
    assert os.path.exists(deep)


def test_store_verify_content_reads_a_stored_version_again(store: Path, tmp_path: Path) -> None:
    from recipekit.lineage.store import import_version

    good = tmp_path / "good"
    good.mkdir()
    write_jsonl(good / "train.jsonl", [_row(), _row()])
    result = run_cli("store", "import", str(store), RLVR_DATA, str(good), "--name", "g")
    assert result.exit_code == 0, result.output
    # A version registered before imports read their data (import_version writes what it is
    # given): verify --content finds the row the framework would fail on.
    old = tmp_path / "old"
    old.mkdir()
    write_jsonl(old / "train.jsonl", [_row(), {"responses_create_params": {"input": "hi"}}])
    import_version(store, RLVR_DATA, old, name="old")
    result = run_cli("store", "verify", str(store), f"{RLVR_DATA}:v0", "--content")
    assert result.exit_code == 0, result.output
    assert f"{RLVR_DATA}:v0 content ok: train.jsonl, 2 rows" in result.stdout
    result = run_cli("store", "verify", str(store), f"{RLVR_DATA}:v1", "--content")
    assert result.exit_code == 1, result.output
    assert (
        f"{RLVR_DATA}:v1 CONTENT: {store / RLVR_DATA / 'old' / 'train.jsonl'}:2: agent_ref: missing"
        in (result.stdout)
    )
