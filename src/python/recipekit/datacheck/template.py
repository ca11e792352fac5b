"""A stage's chat template rendered on the data's conversations before a GPU waits (issue 43).

An SFT stage trains on the assistant's tokens only. How a framework finds them decides what a
template must do, and both fail silently or late where it does not (``chat_rows.json``,
``template``, read from the pinned sources by tools/generate_chat_rows.py):

- **NeMo-RL** (super-v3.5-posttraining) never asks the template where the assistant is. It
  renders every prefix of a conversation (``messages[: i + 1]``, llm_message_utils.py:565), cuts
  message ``i``'s text where that rendering first differs from the one before (:570) and masks
  by each message's role (``roles_to_train_on=["assistant"]``, sft.py:295). So a template must
  render each prefix as the start of the next: one that renders an earlier turn differently once
  another follows (reasoning dropped from history, a footer only after the last message) puts
  that text again into the next message's tokens, and the loss trains on a sequence the template
  never produces. Generation markers play no part.
- **Megatron-Bridge** (main) takes the mask from the template's ``{% generation %}`` blocks
  (``GENERATION_REGEX``, data/datasets/utils.py:53), else from the role markers of the template
  families it recognises (ChatML, Llama 3, Gemma, ...), else raises at the first batch
  ("Unable to build assistant loss mask", conversation_processing.py:1823). A generation block
  that covers the user's turn trains on prompts, silently.

The template is rendered as transformers renders one (a sandboxed Jinja environment with
``trim_blocks``, ``lstrip_blocks``, loop controls, ``raise_exception``, ``tojson`` and the
``generation`` tag), on conversations of the roles the data holds (the import records each row's
role sequence), with a probe text in each message, so every turn can be found in the output.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from recipekit.datacheck.chat import chat_rows
from recipekit.errors import Issue

KEY = "policy.tokenizer.chat_template"
# Marks a {% generation %} block's output while rendering (private-use characters no template
# writes), removed before the text is compared.
GENERATION_START, GENERATION_END = "\ue000", "\ue001"
# The conversation rendered when the data's role sequences are not known (Energon data).
DEFAULT_ROLES = ("system", "user", "assistant", "user", "assistant")
SHAPES_RENDERED = 5
# What a template sees of the special tokens its tokenizer does not name (transformers passes
# every special token of the tokenizer; templates concatenate them, which fails on undefined).
SPECIAL_DEFAULTS = {"bos_token": "", "eos_token": "", "pad_token": "", "unk_token": ""}


@attrs.frozen
class Template:
    """A chat template's text, where it came from (said in every finding) and the special tokens
    its tokenizer defines (``bos_token``, ``eos_token``: templates print them)."""

    text: str
    where: str
    special: Mapping[str, str] = attrs.field(factory=dict)


@attrs.frozen
class Rendered:
    text: str
    generation: tuple[tuple[int, int], ...] = ()  # spans of {% generation %} output


class TemplateFailed(Exception):
    """The template does not parse, or refuses a conversation (``raise_exception``)."""


def _environment() -> Any:
    from jinja2 import nodes
    from jinja2.exceptions import TemplateError
    from jinja2.ext import Extension, loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    class Generation(Extension):
        """``{% generation %}...{% endgeneration %}``: its output marked, to be found again."""

        tags = {"generation"}

        def parse(self, parser: Any) -> Any:
            lineno = next(parser.stream).lineno
            body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
            call = self.call_method("_mark")
            return nodes.CallBlock(call, [], [], body).set_lineno(lineno)

        def _mark(self, caller: Any) -> str:
            return f"{GENERATION_START}{caller()}{GENERATION_END}"

    def raise_exception(message: str) -> None:
        raise TemplateError(message)

    def tojson(
        value: Any,
        ensure_ascii: bool = False,
        indent: int | None = None,
        separators: Any = None,
        sort_keys: bool = False,
    ) -> str:
        return json.dumps(
            value, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
            sort_keys=sort_keys,
        )  # fmt: skip

    def strftime_now(format: str) -> str:
        from datetime import datetime

        return datetime.now().strftime(format)

    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[Generation, loopcontrols]
    )
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def render(
    template: Template,
    messages: Sequence[Mapping[str, Any]],
    *,
    add_generation_prompt: bool = False,
    **kwargs: Any,
) -> Rendered:
    """``template`` on ``messages``: the text and where its generation blocks are."""
    from jinja2.exceptions import TemplateError

    try:
        compiled = _environment().from_string(template.text)
        marked = compiled.render(
            messages=list(messages),
            add_generation_prompt=add_generation_prompt,
            **{**SPECIAL_DEFAULTS, **template.special, **kwargs},
        )
    except TemplateError as exc:
        line = getattr(exc, "lineno", None)
        raise TemplateFailed(f"{exc}" + (f" (template line {line})" if line else "")) from None
    spans: list[tuple[int, int]] = []
    text: list[str] = []
    length, start = 0, None
    for part in re.split(f"([{GENERATION_START}{GENERATION_END}])", marked):
        if part == GENERATION_START:
            start = length
        elif part == GENERATION_END:
            spans.append((start if start is not None else length, length))
            start = None
        else:
            text.append(part)
            length += len(part)
    return Rendered("".join(text), tuple(spans))


def probe(roles: Sequence[str], template: Template | None = None) -> list[dict[str, str]]:
    """A conversation of ``roles`` whose every message holds a text found nowhere else; an
    assistant's text starts with a reasoning part where the template handles one (``</think>``:
    reasoning models' SFT data carries it, and such templates rewrite it in history turns)."""
    reasoning = template is not None and "</think>" in template.text
    messages = []
    for index, role in enumerate(roles):
        text = f"recipekit probe {index}: a {role} turn"
        if reasoning and role == "assistant":
            text = f"<think>recipekit probe {index}: reasoning</think>{text}"
        messages.append({"role": role, "content": text})
    return messages


def shapes(roles: Mapping[str, int] | None) -> list[tuple[str, ...]]:
    """The role sequences to render: the data's most common few (those with an assistant
    turn), else one of every usual role."""
    found = [
        tuple(shape.split(","))
        for shape, _ in sorted((roles or {}).items(), key=lambda kv: (-kv[1], kv[0]))
        if "assistant" in shape.split(",")
    ]
    return found[:SHAPES_RENDERED] or [DEFAULT_ROLES]


def _first_difference(before: str, after: str) -> int:
    """Where two strings first differ (NeMo-RL's get_first_index_that_differs, by its rule)."""
    for index, (a, b) in enumerate(zip(before, after, strict=False)):
        if a != b:
            return index
    return min(len(before), len(after))


def _shown(text: str, at: int) -> str:
    return repr(text[at : at + 40])


def nemo_rl_findings(
    template: Template, role_shapes: Sequence[Sequence[str]]
) -> tuple[list[Issue], list[Issue]]:
    """(refusals, notes) for an SFT stage of NeMo-RL. Refused: a template that does not render,
    that renders an earlier message's text differently once another follows, or that leaves an
    assistant's text out of its own message's tokens. Noted: text rendered after the last
    message only (NeMo-RL keeps it in that message's tokens: mid-conversation once another
    follows)."""
    rules = chat_rows()["template"]["nemo_rl"]
    trained = chat_rows()["messages"]["trained_sites"][0]
    where = f"{KEY} ({template.where})"
    cut = (
        "NeMo-RL cuts each message where the renderings first differ "
        f"({rules['render']}, {rules['split']})"
    )
    notes: list[Issue] = []
    for roles in role_shapes:
        messages = probe(roles, template)
        shape = ",".join(roles)
        before = ""
        for index, message in enumerate(messages):
            try:
                now = render(template, messages[: index + 1]).text
            except TemplateFailed as exc:
                return [
                    Issue(
                        where,
                        f"fails on a {shape} conversation's first {index + 1} messages: {exc} "
                        f"(NeMo-RL renders each prefix: {rules['render']})",
                    )
                ], notes
            split = _first_difference(before, now)
            if split < len(before):
                earlier = messages[index - 1]["content"]
                content_end = before.rfind(earlier) + len(earlier) if earlier in before else 0
                change = (
                    f"from character {split}, {_shown(before, split)} becomes {_shown(now, split)}"
                )
                if split < content_end or earlier not in now:
                    return [
                        Issue(
                            where,
                            f"renders the messages before message {index} ({message['role']}) "
                            f"of a {shape} conversation differently once it follows: {change}. "
                            f"{cut}, so message {index}'s tokens repeat what came before and the "
                            f"assistant-only loss ({trained}) trains on a sequence the template "
                            "never produces",
                            hint="use a template that renders each conversation prefix as the "
                            "start of the next (chat_template_kwargs may turn off history "
                            "rewriting)",
                        )
                    ], notes
                if not notes:
                    notes.append(
                        Issue(
                            where,
                            f"renders {_shown(before, split)} after the last message only (a "
                            f"{shape} conversation, before message {index}): {cut}, so each "
                            "message keeps it in its tokens, mid-conversation once another "
                            "follows",
                        )
                    )
            if message["role"] == "assistant" and message["content"] not in now[split:]:
                return [
                    Issue(
                        where,
                        f"leaves message {index}'s assistant text out of its own tokens in a "
                        f"{shape} conversation (its part: {_shown(now, split)}): the "
                        f"assistant-only loss ({trained}) would train on something else",
                    )
                ], notes
            before = now
    return [], notes


def bridge_findings(template: Template, role_shapes: Sequence[Sequence[str]]) -> list[Issue]:
    """Refusals for a chat SFT stage of Megatron-Bridge: no {% generation %} block and no role
    markers it recognises (it raises at the first batch), markers that do not mark the
    assistant's turn, or a generation block over the user's text (loss on prompts)."""
    rules = chat_rows()["template"]["megatron_bridge"]
    where = f"chat template ({template.where})"
    has_generation = re.search(rules["generation_regex"], template.text) is not None
    family = next(
        (f for f in rules["families"] if all(m in template.text for m in f["markers"])), None
    )
    if not has_generation and family is None:
        return [
            Issue(
                where,
                "has no {% generation %} block (" + rules["regex_site"] + ") and none of the "
                "role markers of the template families Megatron-Bridge recognises: it raises "
                f"'Unable to build assistant loss mask' at the first batch ({rules['raises']}, "
                f"{rules['reraised']})",
                hint="wrap each assistant message's content in "
                "{% generation %}...{% endgeneration %}",
            )
        ]
    for roles in role_shapes:
        messages = probe(roles, template)
        shape = ",".join(roles)
        try:
            rendered = render(template, messages)
        except TemplateFailed as exc:
            return [Issue(where, f"fails on a {shape} conversation: {exc}")]
        for index, message in enumerate(messages):
            at = rendered.text.find(message["content"])
            if at < 0:
                continue
            inside = any(a <= at < b for a, b in rendered.generation)
            if has_generation and message["role"] == "assistant" and not inside:
                return [
                    Issue(
                        where,
                        f"leaves message {index}'s assistant text outside every {{% generation "
                        f"%}} block in a {shape} conversation: the loss mask misses the answer",
                    )
                ]
            if has_generation and message["role"] != "assistant" and inside:
                return [
                    Issue(
                        where,
                        f"puts message {index} ({message['role']}) inside a {{% generation %}} "
                        f"block in a {shape} conversation: the loss would train on the prompt",
                    )
                ]
        if not has_generation and family is not None:
            start = family["assistant_start"]
            assistants = [m["content"] for m in messages if m["role"] == "assistant"]
            found = [rendered.text.find(text) for text in assistants]
            if any(at < 0 or rendered.text.rfind(start, 0, at) < 0 for at in found):
                return [
                    Issue(
                        where,
                        f"has the {family['markers'][0]!r} family's markers "
                        f"({family['site']}) but does not open an assistant turn with "
                        f"{start!r} in a {shape} conversation: Megatron-Bridge raises "
                        f"({rules['raises_unmatched']})",
                    )
                ]
    return []


def read_template(value: Any, model_dir: Path | None) -> Template | None:
    """The template ``policy.tokenizer.chat_template = value`` makes NeMo-RL use
    (algorithms/utils.py's rules): None the passthrough template; ``default`` (or no key) the
    model's own; a ``.jinja`` path that file; other text the template itself. None where it
    cannot be read here (the model's files are not in the store; a file elsewhere)."""
    rules = chat_rows()["template"]["nemo_rl"]
    special = _special_tokens(model_dir)
    if value is None:
        return Template(
            rules["passthrough"], f"null: NeMo-RL's passthrough, {rules['none']}", special
        )
    if not isinstance(value, str) or value.lower() == "default":
        return model_template(model_dir)
    if value.endswith(".jinja"):
        path = Path(value)
        return Template(path.read_text(), value, special) if path.is_file() else None
    return Template(value, "the template text in the config", special)


def model_template(model_dir: Path | None) -> Template | None:
    """A Hugging Face model folder's own chat template: ``chat_template.jinja``, else the
    ``chat_template`` of its ``tokenizer_config.json`` (the default of a list of named ones)."""
    if model_dir is None:
        return None
    special = _special_tokens(model_dir)
    jinja = model_dir / "chat_template.jinja"
    if jinja.is_file():
        return Template(jinja.read_text(), str(jinja), special)
    config = _tokenizer_config(model_dir)
    value = config.get("chat_template")
    if isinstance(value, list):
        named = {t.get("name"): t.get("template") for t in value if isinstance(t, dict)}
        value = named.get("default")
    if isinstance(value, str):
        return Template(value, f"{model_dir / 'tokenizer_config.json'}: chat_template", special)
    return None


def _tokenizer_config(model_dir: Path | None) -> dict[str, Any]:
    file = model_dir / "tokenizer_config.json" if model_dir is not None else None
    if file is None or not file.is_file():
        return {}
    try:
        loaded = json.loads(file.read_text())
    except (OSError, ValueError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def _special_tokens(model_dir: Path | None) -> dict[str, str]:
    found: dict[str, str] = {}
    for name, value in _tokenizer_config(model_dir).items():
        if name.endswith("_token"):
            token = value.get("content") if isinstance(value, dict) else value
            if isinstance(token, str):
                found[name] = token
    return found
