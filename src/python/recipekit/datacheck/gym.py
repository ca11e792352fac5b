"""NeMo Gym JSONL (the RL stages' ``train.jsonl``/``val.jsonl``) read as the pinned NeMo-RL reads
it, before it is registered (issue 43).

NeMo-RL keeps each raw line and parses it only when the datum is reached
(nemo_rl/data/datasets/response_datasets/nemogym_dataset.py:36, nemo_rl/data/processors.py:792
@ super-v3.5-posttraining), so a broken row stops a run hours in. Here every line is read once,
streaming, and each row is checked against ``gym_rows.json``: the fields the rollout path
indexes with the types it needs (tools/generate_gym_rows.py finds each read in the pinned
sources), NeMo Gym's request type for ``responses_create_params`` (unknown keys refused, as its
``extra="forbid"`` model does), the agent against the stage's Gym config where it is known, and
every local image or video a row names. The first refusal names file, line, field and rule, and
how many other lines would be refused.

What passes is measured on the way: rows, rows per agent, prompt lengths in characters and, with
a tokenizer, in tokens. Those statistics go into the version's manifest; the plan reads them
there instead of the file.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping
from functools import cache
from pathlib import Path
from typing import Any

import attrs

from recipekit.datacheck.scan import (
    LONGEST_KEPT,
    Measured,
    Refusal,
    Tokenizer,
    check_file,
    json_type,
    refusal_issue,
    summary,
)
from recipekit.errors import Issue, RecipeError, did_you_mean
from recipekit.upstream.values import matches

__all__ = [
    "FORMAT",
    "LONGEST_KEPT",
    "GymRows",
    "Refusal",
    "StageGym",
    "Tokenizer",
    "agents_of",
    "check_jsonl",
    "gym_rows",
    "load_tokenizer",
    "media_refusal",
    "prompt_text",
    "refusal_issue",
    "row_refusal",
    "summary",
]

FORMAT = "nemo-gym-jsonl"
# The leading bytes of the image formats PIL opens that a training image is stored in: a
# file that starts otherwise is not an image NeMo-RL's Image.open reads.
IMAGE_MAGIC = (
    b"\x89PNG\r\n\x1a\n",
    b"\xff\xd8\xff",
    b"GIF87a",
    b"GIF89a",
    b"BM",
    b"II*\x00",
    b"MM\x00*",
)


@cache
def gym_rows() -> dict[str, Any]:
    """What tools/generate_gym_rows.py read from the pinned NeMo-RL and NeMo Gym."""
    loaded: dict[str, Any] = json.loads((Path(__file__).parent / "gym_rows.json").read_text())
    return loaded


@attrs.frozen
class StageGym:
    """What a stage's Gym config says about the rows it reads: the agents its config files
    define (None: a file recipekit has not read, so unknown until plan)."""

    agents: frozenset[str] | None = None
    where: str = "env.nemo_gym.config_paths"


def agents_of(config_paths: Iterable[str]) -> frozenset[str] | None:
    """The agents NeMo Gym's config files at ``config_paths`` define, where every one is a file
    gym_rows.json read; None where one is not (an environment of the team's own)."""
    table: dict[str, list[str]] = gym_rows()["agents"]
    found: set[str] = set()
    for path in config_paths:
        if path not in table:
            return None
        found.update(table[path])
    return frozenset(found)


def _is(value: Any, kind: str) -> bool:
    if kind == "dict":
        return isinstance(value, dict)
    if kind == "str":
        return isinstance(value, str)
    if kind == "str | list":
        return isinstance(value, str | list)
    return matches(value, kind)


def _at(row: Mapping[str, Any], field: str) -> tuple[bool, Any]:
    value: Any = row
    for part in field.split("."):
        if not isinstance(value, dict) or part not in value:
            return False, None
        value = value[part]
    return True, value


def _site(read: Mapping[str, Any]) -> str:
    return str(read["sites"][0])


def row_refusal(row: Any, agents: frozenset[str] | None, folder: Path) -> Refusal | None:
    """The first reason the pinned reader would fail on ``row`` (a parsed line), or None."""
    table = gym_rows()
    if not isinstance(row, dict):
        return Refusal(
            0, "", f"is {json_type(row)}, not a JSON object ({_site(table['reads'][0])})"
        )
    for read in table["reads"][1:]:
        found, value = _at(row, read["field"])
        if not found:
            if read.get("optional"):
                continue
            return Refusal(0, read["field"], f"missing ({read['rule']}; {_site(read)})")
        if not _is(value, read["type"]):
            shown = json_type(value)
            return Refusal(
                0, read["field"], f"is {shown}, not {read['type']} ({read['rule']}; {_site(read)})"
            )
    request = table["request"]
    params = row["responses_create_params"]
    for key, value in params.items():
        declared = request["keys"].get(key)
        if declared is None:
            if request["forbids_extra"]:
                hint = did_you_mean(key, list(request["keys"]))
                return Refusal(
                    0,
                    f"responses_create_params.{key}",
                    f"NeMo Gym's request type declares no such key and refuses others "
                    f"(nemo_gym/openai_utils.py @ nemo-gym 0.7.0; {hint})",
                )
            continue
        if not matches(value, declared["type"]):
            return Refusal(
                0,
                f"responses_create_params.{key}",
                f"is {json_type(value)}, not {declared['type']} (NeMo Gym's request type, "
                f"{declared['site']} @ nemo-gym 0.7.0)",
            )
    messages = params["input"]
    if isinstance(messages, list):
        for index, item in enumerate(messages):
            if not isinstance(item, dict):
                return Refusal(
                    0,
                    f"responses_create_params.input[{index}]",
                    f"is {json_type(item)}, not a message object (NeMo Gym's input list)",
                )
        problem = media_refusal(messages, folder)
        if problem is not None:
            return problem
    name = row["agent_ref"]["name"]
    if agents is not None and name not in agents:
        known = sorted(agents)
        return Refusal(
            0,
            "agent_ref.name",
            f"{name!r} is no agent the stage's env.nemo_gym.config_paths define "
            f"({did_you_mean(name, known) if known else 'they define none'})",
        )
    return None


def _media_parts(messages: list[dict[str, Any]]) -> Iterator[tuple[str, int, int, str, Any]]:
    """(kind, message index, part index, key, URL value) of each media part NeMo-RL resolves."""
    media = gym_rows()["media"]
    for index, item in enumerate(messages):
        content = item.get("content")
        if not isinstance(content, list):
            continue
        for number, part in enumerate(content):
            if not isinstance(part, dict):
                continue
            for kind, spec in media.items():
                if part.get("type") not in spec["types"]:
                    continue
                key = next((k for k in spec["keys"] if k in part), None)
                if key is not None:
                    yield kind, index, number, key, part[key]


def media_refusal(messages: list[dict[str, Any]], folder: Path) -> Refusal | None:
    """A local image or video a row names that is absent or unreadable; a ``data:`` image that
    does not decode. ``http(s)://`` sources are fetched by the framework and not checked here."""
    media = gym_rows()["media"]
    for kind, index, number, key, value in _media_parts(messages):
        field = f"responses_create_params.input[{index}].content[{number}].{key}"
        url = value.get("url") or value.get("path") if isinstance(value, dict) else value
        if not isinstance(url, str) or not url or url.startswith(("http://", "https://")):
            continue
        cite = media[kind]["sites"][-1]
        if url.startswith("data:"):
            if kind != "image":
                continue
            head, _, encoded = url.partition(",")
            try:
                raw = base64.b64decode(encoded[:4096], validate=True) if ";base64" in head else b""
            except (binascii.Error, ValueError):
                raw = b"\x00"
            if ";base64" in head and not raw.startswith(IMAGE_MAGIC) and raw[8:12] != b"WEBP":
                return Refusal(0, field, f"a data: URL that is no base64 image ({cite})")
            continue
        path = Path(url.removeprefix("file://"))
        path = path if path.is_absolute() else folder / path
        try:
            with path.open("rb") as handle:
                start = handle.read(16)
        except OSError as exc:
            why = (
                "is missing"
                if isinstance(exc, FileNotFoundError)
                else f"cannot be read ({exc.strerror})"
            )
            return Refusal(
                0, field, f"{kind} {path} {why}: NeMo-RL opens it before dispatch ({cite})"
            )
        if kind == "image" and not (start.startswith(IMAGE_MAGIC) or start[8:12] == b"WEBP"):
            return Refusal(0, field, f"{path} is no image file PIL reads ({cite})")
    return None


def prompt_text(row: Mapping[str, Any]) -> str:
    """The text a row's prompt holds: its ``instructions`` and every message's text (media and
    the chat template's own tokens are not counted)."""
    params = row["responses_create_params"]
    parts: list[str] = []
    if isinstance(params.get("instructions"), str):
        parts.append(params["instructions"])
    messages = params["input"]
    if isinstance(messages, str):
        parts.append(messages)
    else:
        for item in messages:
            content = item.get("content")
            if isinstance(content, str):
                parts.append(content)
            elif isinstance(content, list):
                parts += [
                    p["text"]
                    for p in content
                    if isinstance(p, dict) and isinstance(p.get("text"), str)
                ]
    return "\n".join(parts)


@attrs.frozen
class GymRows:
    """NeMo Gym JSONL as the RL stages read it (a :class:`~recipekit.datacheck.scan.RowFormat`)."""

    agents: frozenset[str] | None = None
    name: str = FORMAT
    groups_key: str = "agents"
    length_key: str = "prompt"
    measured: str = "message text only: the chat template's tokens are not included"

    def line_rule(self) -> tuple[str, str]:
        first = gym_rows()["reads"][0]
        return first["rule"], _site(first)

    def refusal(self, row: Any, folder: Path) -> Refusal | None:
        return row_refusal(row, self.agents, folder)

    def measure(self, row: Any) -> Measured:
        return Measured(row["agent_ref"]["name"], (prompt_text(row),))


def check_jsonl(
    path: Path,
    *,
    agents: frozenset[str] | None = None,
    tokenizer: Tokenizer | None = None,
    tokenizer_id: str = "",
    bar: Any = None,
    shown: str | None = None,
) -> dict[str, Any]:
    """Read ``path`` whole; its statistics, or a RecipeError (one line) naming the first row the
    pinned reader would fail on. ``bar``: a progress Tracker told the bytes read."""
    return check_file(
        path, GymRows(agents), tokenizer=tokenizer, tokenizer_id=tokenizer_id, bar=bar,
        shown=shown,
    )  # fmt: skip


def load_tokenizer(path: Path) -> tuple[Tokenizer, str]:
    """The ``tokenizer.json`` at ``path`` (or in the folder ``path``), and its identity (the
    file's sha256): pre-tokenised statistics are tied to the tokenizer that made them."""
    try:
        from tokenizers import Tokenizer as RustTokenizer
    except ImportError as exc:  # pragma: no cover - the lockfile holds it
        raise RecipeError(
            [Issue("--tokenizer", f"the tokenizers library is missing ({exc})")]
        ) from None
    file = path / "tokenizer.json" if path.is_dir() else path
    try:
        data = file.read_bytes()
        loaded = RustTokenizer.from_str(data.decode())
    except (OSError, UnicodeDecodeError, Exception) as exc:  # the library raises bare Exception
        raise RecipeError(
            [
                Issue(
                    "--tokenizer",
                    f"{file}: not a tokenizer.json the tokenizers library reads ({exc})",
                )
            ]
        ) from None
    tokenizer: Tokenizer = loaded
    return tokenizer, f"sha256:{hashlib.sha256(data).hexdigest()}"
