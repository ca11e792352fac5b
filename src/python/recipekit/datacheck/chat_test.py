"""NeMo-RL's SFT and preference JSONL read before it is registered (issue 43): the rules are what
tools/generate_chat_rows.py reads from the pinned sources; a good file of each format imports
through `recipekit store import` with its statistics, each kind of bad row is refused (exit 2)
naming file, line and field with nothing written, and generated rows never make the checker
fail with a traceback while everything it accepts the pinned reader takes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recipekit.cli.store import DATA_FORMATS
from recipekit.datacheck import FORMAT, FORMATS, check_files
from recipekit.datacheck.chat import chat_rows
from recipekit.datacheck.conftest import assert_refused, run_cli, tree, word_tokenizer, write_jsonl
from recipekit.errors import RecipeError
from recipekit.lineage.store import read_marker, versions
from tools import generate_chat_rows as generator
from tools.generated_modules import absent_pins

ARTIFACT = "my-sft-data"


def test_the_table_is_what_the_tool_reads_from_the_pinned_sources(reference_dir: Path) -> None:
    # Megatron-Bridge's template rules are in files the team's mirror lacks (GitHub serves them).
    absent = absent_pins(reference_dir, (generator.NEMO_RL, generator.BRIDGE))
    if absent:
        pytest.skip(f"unmirrored and not fetched here (no GitHub): {', '.join(absent)}")
    for path, text in generator.generate(reference_dir).items():
        committed = (generator.CHECKOUT / path).read_text()
        assert committed == text, f"{path} is stale: run python3 {generator.TOOL}"


def test_the_table_names_where_each_rule_is_read() -> None:
    formats = chat_rows()["formats"]
    assert formats["nemo-rl-messages"]["dataset_name"] == "openai_format"
    assert formats["nemo-rl-messages"]["last_role"]["site"] == (
        "nemo_rl/data/datasets/response_datasets/oai_format_dataset.py:193"
    )
    assert formats["nemo-rl-preference"]["completions"]["count_site"] == (
        "nemo_rl/data/processors.py:249"
    )
    assert chat_rows()["truncation"]["sft"] == {
        "op": ">=",
        "site": "nemo_rl/data/processors.py:172",
        "passed": "examples/run_sft.py:99",
    }
    assert (FORMAT, *FORMATS) == DATA_FORMATS


def _chat(*turns: tuple[str, Any]) -> list[dict[str, Any]]:
    return [{"role": role, "content": content} for role, content in turns]


# One good row of each format, shaped as the pinned class's docstring and reader say.
GOOD: dict[str, dict[str, Any]] = {
    "nemo-rl-messages": {
        "messages": _chat(
            ("system", "You are a helpful assistant."),
            ("user", "What is the capital of France?"),
            ("assistant", "The capital of France is Paris."),
        )
    },
    "nemo-rl-response": {"input": "What is 2+2?", "output": "4"},
    "nemo-rl-preference": {
        "context": _chat(("user", "What's the capital of France?")),
        "completions": [
            {"rank": 0, "completion": _chat(("assistant", "Paris."))},
            {"rank": 1, "completion": _chat(("assistant", "London."))},
        ],
    },
    "nemo-rl-binary-preference": {"prompt": "What is 2+2?", "chosen": "4", "rejected": "5"},
}


@pytest.mark.parametrize("fmt", list(GOOD))
def test_a_good_file_of_each_format_imports_with_its_statistics(
    store: Path, tmp_path: Path, fmt: str
) -> None:
    data = write_jsonl(tmp_path / "train.jsonl", [GOOD[fmt]] * 3)
    result = run_cli("store", "import", str(store), ARTIFACT, str(data), "--name", "d")
    assert result.exit_code == 0, result.output
    [version] = versions(store, ARTIFACT)
    marker = read_marker(store / ARTIFACT, version.version)
    assert marker is not None
    stats = marker["meta"]["content"]["train.jsonl"]
    assert (stats["format"], stats["rows"]) == (fmt, 3)
    assert sum(stats["roles"].values()) == 3
    assert 0 < stats["conversation_chars"]["max"]


def _bad(fmt: str, **changes: Any) -> dict[str, Any]:
    row: dict[str, Any] = json.loads(json.dumps(GOOD[fmt]))
    for path, value in changes.items():
        *parents, last = path.split("__")
        target: Any = row
        for part in parents:
            target = target[int(part)] if part.isdigit() else target[part]
        if value is None:
            del target[int(last) if last.isdigit() else last]
        else:
            target[int(last) if last.isdigit() else last] = value
    return row


MESSAGES = GOOD["nemo-rl-messages"]
BAD: dict[str, tuple[str, list[Any], int, str]] = {
    "unparsable": ("nemo-rl-messages", [MESSAGES, '{"messages": ['], 2, "not JSON"),
    "not an object": ("nemo-rl-messages", [MESSAGES, [1]], 2, "is an array, not a JSON object"),
    "missing field, misspelt": (
        "nemo-rl-messages",
        [MESSAGES, {"mesages": MESSAGES["messages"]}],
        2,
        "messages: missing (read at nemo_rl/data/datasets/response_datasets/"
        "oai_format_dataset.py:188; the row has 'mesages': a misspelling?)",
    ),
    "wrong type": ("nemo-rl-messages", [{"messages": "hi"}], 1, "messages: is a string, not list"),
    "message without role": (
        "nemo-rl-messages",
        [MESSAGES, _bad("nemo-rl-messages", messages__1__role=None)],
        2,
        "messages[1].role: missing (every message's role is compared: "
        "nemo_rl/data/llm_message_utils.py:533)",
    ),
    "last message not the assistant's": (
        "nemo-rl-messages",
        [{"messages": _chat(("user", "hi"))}],
        1,
        "messages[0].role: is 'user': the last message must be the assistant's",
    ),
    "response without output": (
        "nemo-rl-response",
        [{"input": "What is 2+2?", "ouput": "4"}],
        1,
        "output: missing (read at nemo_rl/data/datasets/response_datasets/response_dataset.py:82;"
        " the row has 'ouput': a misspelling?)",
    ),
    "three completions": (
        "nemo-rl-preference",
        [
            {
                **GOOD["nemo-rl-preference"],
                "completions": [*GOOD["nemo-rl-preference"]["completions"], {"rank": 2}],
            }
        ],
        1,
        "completions: holds 3, not 2: DPO and RM train on pairs",
    ),
    "tied ranks": (
        "nemo-rl-preference",
        [GOOD["nemo-rl-preference"], _bad("nemo-rl-preference", completions__1__rank=0)],
        2,
        "completions[1].rank: ties completions[0].rank (0): NeMo-RL raises NotImplementedError",
    ),
    "string rank": (
        "nemo-rl-preference",
        [_bad("nemo-rl-preference", completions__0__rank="0")],
        1,
        "completions[0].rank: is a string, not a number",
    ),
    "rejected missing": (
        "nemo-rl-binary-preference",
        [_bad("nemo-rl-binary-preference", rejected=None)],
        1,
        "rejected: missing",
    ),
    "empty file": ("nemo-rl-messages", [], 0, "holds no rows"),
}


@pytest.mark.parametrize("kind", list(BAD))
def test_each_bad_kind_is_refused_naming_line_and_field_with_nothing_written(
    store: Path, tmp_path: Path, kind: str
) -> None:
    fmt, rows, line, said = BAD[kind]
    data = write_jsonl(tmp_path / "train.jsonl", rows)
    before = tree(store)
    result = run_cli(
        "store", "import", str(store), ARTIFACT, str(data), "--name", "d", "--format", fmt
    )
    assert_refused(result, data, line, said, before, store)


def test_a_file_of_no_known_format_says_what_each_needs(store: Path, tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "train.jsonl", [{"mesages": [], "prompt": "x"}])
    result = run_cli("store", "import", str(store), ARTIFACT, str(data), "--name", "d")
    assert result.exit_code == 2, result.output
    last = result.stderr.strip().splitlines()[-1]
    assert f"{data}:1: fits no format recipekit reads (its keys: mesages, prompt)" in last
    assert "nemo-rl-messages needs messages" in last
    assert "a misspelling? 'mesages' for 'messages'" in last


def test_conversation_tokens_with_a_tokenizer_built_here(tmp_path: Path) -> None:
    saved = word_tokenizer(tmp_path / "tokenizer.json", ["x"])
    pair = {
        "context": _chat(("user", "x " * 10)),
        "completions": [
            {"rank": 0, "completion": _chat(("assistant", "x " * 5))},
            {"rank": 1, "completion": _chat(("assistant", "x " * 30))},
        ],
    }
    data = write_jsonl(tmp_path / "pairs.jsonl", [pair, GOOD["nemo-rl-preference"]])
    content = check_files({"pairs.jsonl": data}, tokenizer=saved)
    tokens = content["pairs.jsonl"]["conversation_tokens"]
    # A pair counts its longer side: 10 context + 30 rejected tokens.
    assert tokens["longest"][0] == 40
    assert content["pairs.jsonl"]["roles"] == {"user,assistant": 2}


# --- generated rows ----------------------------------------------------------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)
MESSAGE = st.fixed_dictionaries(
    {},
    optional={
        "role": st.one_of(st.sampled_from(["user", "assistant", "system"]), JSON),
        "content": st.one_of(st.text(max_size=8), JSON),
    },
)
NEAR_ROWS = st.one_of(
    st.fixed_dictionaries(
        {}, optional={"messages": st.one_of(JSON, st.lists(MESSAGE, max_size=3))}
    ),
    st.fixed_dictionaries({}, optional={"input": JSON, "output": JSON}),
    st.fixed_dictionaries(
        {},
        optional={
            "context": st.one_of(JSON, st.lists(MESSAGE, max_size=2)),
            "completions": st.one_of(
                JSON,
                st.lists(
                    st.fixed_dictionaries(
                        {},
                        optional={
                            "rank": JSON,
                            "completion": st.one_of(JSON, st.lists(MESSAGE, max_size=2)),
                        },
                    ),
                    max_size=3,
                ),
            ),
        },
    ),
    st.fixed_dictionaries(
        {},
        optional={
            "prompt": st.one_of(JSON, st.lists(MESSAGE, max_size=2)),
            "chosen": JSON,
            "rejected": JSON,
        },  # fmt: skip
    ),
)


def _pinned_reader_accepts(row: dict[str, Any], fmt: str) -> None:
    """What NeMo-RL super-v3.5 does with a row before its chat template, step by step: it
    raises where the reader would."""
    if fmt == "nemo-rl-messages":
        messages = list(row["messages"])  # oai_format_dataset.py:188
        assert messages[-1]["role"] == "assistant"  # :193
    elif fmt == "nemo-rl-response":
        messages = _chat(("user", row["input"]), ("assistant", row["output"]))  # :81-82
    elif fmt == "nemo-rl-preference":
        assert len(row["completions"]) == 2  # processors.py:249
        first, second = row["completions"]
        if first["rank"] < second["rank"] or first["rank"] > second["rank"]:  # :253, :256
            pass
        else:
            raise NotImplementedError  # :260
        messages = row["context"] + first["completion"]  # :264
    else:
        prompt = row["prompt"]
        context = prompt if isinstance(prompt, list) else _chat(("user", prompt))  # :71
        messages = [*context, {"role": "assistant", "content": row["chosen"]}]
        _ = row["rejected"]
    for message in messages:
        assert isinstance(message["role"], str)  # llm_message_utils.py:533
        assert isinstance(message["content"], str | list)  # the template renders it


@settings(
    max_examples=300,
    deadline=None,
    # Nested rows of four formats: generating them is slow on a loaded host, never wrong.
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)
@given(rows=st.lists(NEAR_ROWS, min_size=1, max_size=3), fmt=st.sampled_from(FORMATS))
def test_generated_rows_never_traceback_and_what_passes_the_reader_takes(
    tmp_path: Path, rows: list[Any], fmt: str
) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    try:
        check_files({"rows.jsonl": path}, fmt=fmt)
    except RecipeError as exc:
        assert len(exc.render().splitlines()) == 1
        return
    for line in path.read_text().splitlines():
        _pinned_reader_accepts(json.loads(line), fmt)
