"""NeMo-RL's SFT and preference JSONL read as the pinned NeMo-RL reads it (issue 43).

Four formats, each the rows one dataset class of NeMo-RL super-v3.5-posttraining reads
(``chat_rows.json``, written by tools/generate_chat_rows.py from the pinned sources):

- ``nemo-rl-messages`` (``dataset_name: openai_format``, and ``ResponseDataset`` rows that carry
  ``messages``): a ``messages`` list whose last message is the assistant's, optional ``tools``;
- ``nemo-rl-response`` (``ResponseDataset``): ``input`` and ``output`` text;
- ``nemo-rl-preference`` (``PreferenceDataset``, DPO and RM): ``context`` messages and exactly two
  ``completions``, each a ``rank`` and a ``completion`` message list, the ranks different;
- ``nemo-rl-binary-preference`` (``BinaryPreferenceDataset``): ``prompt`` (text or messages),
  ``chosen`` and ``rejected`` text.

Every message is an object with a string ``role`` (``get_formatted_message_log`` compares it) and
its ``content`` text or a list of parts. A refusal names the line, the field as a path
(``messages[2].role``), the rule and the source line; a missing key that a key of the row nearly
spells gets a "did you mean". What passes is measured: rows per role sequence (the conversations'
shapes, which the plan renders the stage's chat template on) and each row's length in characters
and, with a tokenizer, tokens: the whole conversation (for a pair, its longer side), which is what
the processors compare with ``data.max_input_seq_length``.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

import attrs

from recipekit.datacheck.scan import Measured, Refusal, json_type

MESSAGES = "nemo-rl-messages"
RESPONSE = "nemo-rl-response"
PREFERENCE = "nemo-rl-preference"
BINARY_PREFERENCE = "nemo-rl-binary-preference"
FORMATS = (MESSAGES, RESPONSE, PREFERENCE, BINARY_PREFERENCE)


@cache
def chat_rows() -> dict[str, Any]:
    """What tools/generate_chat_rows.py read from the pinned NeMo-RL and Megatron-Bridge."""
    loaded: dict[str, Any] = json.loads((Path(__file__).parent / "chat_rows.json").read_text())
    return loaded


def _is(value: Any, kind: str) -> bool:
    return any(
        isinstance(value, {"str": str, "list": list, "dict": dict}[part.strip()])
        for part in kind.split("|")
    )


def _hint(missing: str, row: Mapping[str, Any]) -> str:
    """``; did you mean 'mesages'?`` where a key of the row nearly spells the missing one."""
    close = difflib.get_close_matches(missing, [k for k in row if isinstance(k, str)], n=1)
    return f"; the row has {close[0]!r}: a misspelling?" if close else ""


def _message_refusal(field: str, message: Any) -> Refusal | None:
    table = chat_rows()["messages"]
    if not isinstance(message, dict):
        return Refusal(0, field, f"is {json_type(message)}, not a message object")
    if "role" not in message:
        return Refusal(
            0,
            f"{field}.role",
            f"missing (every message's role is compared: {table['role']['sites'][0]}"
            f"{_hint('role', message)})",
        )
    if not isinstance(message["role"], str):
        return Refusal(
            0,
            f"{field}.role",
            f"is {json_type(message['role'])}, not a string ({table['role']['sites'][0]})",
        )
    content = message.get("content")
    if content is None and message["role"] == "assistant" and message.get("tool_calls"):
        return None  # an assistant turn that only calls tools
    if "content" not in message:
        return Refusal(
            0,
            f"{field}.content",
            f"missing (the chat template renders it{_hint('content', message)})",
        )
    if isinstance(content, list):
        for number, part in enumerate(content):
            if not isinstance(part, dict):
                return Refusal(
                    0,
                    f"{field}.content[{number}]",
                    f"is {json_type(part)}, not a content part object",
                )
        return None
    if not isinstance(content, str):
        return Refusal(
            0, f"{field}.content", f"is {json_type(content)}, not text or a list of parts"
        )
    return None


def _messages_refusal(field: str, messages: list[Any], *, empty_ok: bool = False) -> Refusal | None:
    if not messages and not empty_ok:
        return Refusal(0, field, "is empty: there is no conversation to train on")
    for index, message in enumerate(messages):
        problem = _message_refusal(f"{field}[{index}]", message)
        if problem is not None:
            return problem
    return None


def row_refusal(row: Any, name: str) -> Refusal | None:
    """The first reason the pinned reader of format ``name`` would fail on ``row``, or None."""
    spec = chat_rows()["formats"][name]
    if not isinstance(row, dict):
        return Refusal(0, "", f"is {json_type(row)}, not a JSON object ({spec['class']})")
    for read in spec["keys"].values():
        key = read["key"]
        if key not in row:
            if read.get("optional"):
                continue
            return Refusal(0, key, f"missing (read at {read['sites'][0]}{_hint(key, row)})")
        if not _is(row[key], read["type"]):
            return Refusal(
                0, key, f"is {json_type(row[key])}, not {read['type']} ({read['sites'][0]})"
            )
    if name == MESSAGES:
        key = spec["keys"]["messages"]["key"]
        problem = _messages_refusal(key, row[key])
        if problem is not None:
            return problem
        last = spec["last_role"]
        if row[key][-1]["role"] != last["role"]:
            return Refusal(
                0,
                f"{key}[{len(row[key]) - 1}].role",
                f"is {row[key][-1]['role']!r}: the last message must be the {last['role']}'s "
                f"(asserted at {last['site']})",
            )
    elif name == PREFERENCE:
        return _preference_refusal(row, spec)
    elif name == BINARY_PREFERENCE:
        prompt = spec["keys"]["prompt"]["key"]
        if isinstance(row[prompt], list):
            return _messages_refusal(prompt, row[prompt])
    return None


def _preference_refusal(row: Mapping[str, Any], spec: Mapping[str, Any]) -> Refusal | None:
    rules = spec["completions"]
    problem = _messages_refusal("context", row["context"], empty_ok=True)
    if problem is not None:
        return problem
    completions = row["completions"]
    if len(completions) != rules["count"]:
        return Refusal(
            0,
            "completions",
            f"holds {len(completions)}, not {rules['count']}: DPO and RM train on pairs "
            f"(asserted at {rules['count_site']})",
        )
    for index, completion in enumerate(completions):
        field = f"completions[{index}]"
        if not isinstance(completion, dict):
            return Refusal(0, field, f"is {json_type(completion)}, not an object")
        for key, site in (("rank", rules["rank_site"]), ("completion", rules["completion_site"])):
            if key not in completion:
                return Refusal(
                    0, f"{field}.{key}", f"missing (read at {site}{_hint(key, completion)})"
                )
        rank = completion["rank"]
        if isinstance(rank, bool) or not isinstance(rank, int | float):
            return Refusal(
                0, f"{field}.rank", f"is {json_type(rank)}, not a number ({rules['rank_site']})"
            )
        if not isinstance(completion["completion"], list):
            return Refusal(
                0,
                f"{field}.completion",
                f"is {json_type(completion['completion'])}, not a message list "
                f"({rules['completion_site']})",
            )
        problem = _messages_refusal(f"{field}.completion", completion["completion"])
        if problem is not None:
            return problem
    if completions[0]["rank"] == completions[1]["rank"]:
        return Refusal(
            0,
            "completions[1].rank",
            f"ties completions[0].rank ({completions[0]['rank']!r}): NeMo-RL raises "
            f"NotImplementedError on a tie ({rules['tie_site']})",
        )
    return None


def _text(messages: list[dict[str, Any]]) -> str:
    parts: list[str] = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts += [p["text"] for p in content if isinstance(p.get("text"), str)]
    return "\n".join(parts)


def _roles(messages: list[dict[str, Any]]) -> str:
    return ",".join(str(m["role"]) for m in messages)


def conversations(row: Mapping[str, Any], name: str) -> list[list[dict[str, Any]]]:
    """The conversations a checked row is trained as (a pair: both sides)."""
    keys = {k: v["key"] for k, v in chat_rows()["formats"][name]["keys"].items()}
    if name == MESSAGES:
        return [list(row[keys["messages"]])]
    if name == RESPONSE:
        return [[{"role": "user", "content": row[keys["input"]]},
                 {"role": "assistant", "content": row[keys["output"]]}]]  # fmt: skip
    if name == PREFERENCE:
        return [list(row["context"]) + list(c["completion"]) for c in row["completions"]]
    prompt = row[keys["prompt"]]
    context = prompt if isinstance(prompt, list) else [{"role": "user", "content": prompt}]
    return [
        [*context, {"role": "assistant", "content": row[keys[side]]}]
        for side in ("chosen", "rejected")
    ]


@attrs.frozen
class ChatRows:
    """One of the SFT and preference formats (a :class:`~recipekit.datacheck.scan.RowFormat`)."""

    name: str
    groups_key: str = "roles"
    length_key: str = "conversation"
    measured: str = (
        "message text only (a pair: its longer side): the chat template's tokens are not included"
    )

    def line_rule(self) -> tuple[str, str]:
        return "every line is one JSON object", chat_rows()["formats"][self.name]["class"]

    def refusal(self, row: Any, folder: Path) -> Refusal | None:
        return row_refusal(row, self.name)

    def measure(self, row: Any) -> Measured:
        sides = conversations(row, self.name)
        return Measured(_roles(sides[0]), tuple(_text(side) for side in sides))


def detect(row: Any) -> str | None:
    """The format a file's first row is in, by the keys its reader needs (None: none fits)."""
    if not isinstance(row, dict):
        return None
    if "responses_create_params" in row or "agent_ref" in row:
        from recipekit.datacheck.gym import FORMAT

        return FORMAT
    for name in (MESSAGES, PREFERENCE, BINARY_PREFERENCE, RESPONSE):
        keys = chat_rows()["formats"][name]["keys"].values()
        if all(read["key"] in row for read in keys if not read.get("optional")):
            return name
    return None


def required_keys() -> dict[str, list[str]]:
    """Each format's required keys, to say what a row that fits none lacks."""
    return {
        name: [r["key"] for r in spec["keys"].values() if not r.get("optional")]
        for name, spec in chat_rows()["formats"].items()
    }
