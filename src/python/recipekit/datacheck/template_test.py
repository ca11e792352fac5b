"""A chat template rendered on the data's conversations (issue 43): the templates NeMo-RL ships
(nemo_rl/data/chat_templates.py, read into chat_rows.json from the pinned source) pass NeMo-RL's
per-message split; one that rewrites history is refused; Megatron-Bridge refuses a template with
neither a {% generation %} block nor role markers it recognises, and one whose generation block
covers the prompt."""

from __future__ import annotations

import json
from pathlib import Path

from recipekit.datacheck.chat import chat_rows
from recipekit.datacheck.template import (
    DEFAULT_ROLES,
    Template,
    bridge_findings,
    nemo_rl_findings,
    read_template,
    render,
    shapes,
)

SHIPPED = chat_rows()["template"]["nemo_rl"]["shipped"]
# NeMo-RL's Llama 3 style template (COMMON_CHAT_TEMPLATES.simple_role_header): role headers and
# <|eot_id|>, no generation blocks.
ROLE_HEADER = Template(SHIPPED["simple_role_header"], "simple_role_header", {"bos_token": "<s>"})
PASSTHROUGH = Template(SHIPPED["passthrough_prompt_response"], "passthrough_prompt_response")
# The same template with the assistant's content in a generation block (as TRL's training
# templates mark it), and with the block around every message.
ASSISTANT_MARKED = Template(
    SHIPPED["simple_role_header"].replace(
        "{{ content }}",
        "{% if message['role'] == 'assistant' %}{% generation %}{{ content }}{% endgeneration %}"
        "{% else %}{{ content }}{% endif %}",
    ),
    "simple_role_header with generation blocks",
)
ALL_MARKED = Template(
    SHIPPED["simple_role_header"].replace(
        "{{ content }}", "{% generation %}{{ content }}{% endgeneration %}"
    ),
    "simple_role_header, every message in a generation block",
)
# A reasoning model's template that drops the reasoning of every assistant turn but the last,
# as Qwen3's and Nemotron's do by default.
HISTORY_REWRITTEN = Template(
    "{% for m in messages %}<|im_start|>{{ m.role }}\n"
    "{% if m.role == 'assistant' and not loop.last %}{{ m.content.split('</think>')[-1] }}"
    "{% else %}{{ m.content }}{% endif %}<|im_end|>\n{% endfor %}",
    "drops history reasoning",
)
CONVERSATION = [DEFAULT_ROLES]


def test_nemo_rls_shipped_templates_pass_its_per_message_split() -> None:
    for template in (ROLE_HEADER, PASSTHROUGH, ASSISTANT_MARKED):
        assert nemo_rl_findings(template, CONVERSATION) == ([], [])


def test_a_template_that_rewrites_history_is_refused_for_nemo_rl() -> None:
    errors, _ = nemo_rl_findings(HISTORY_REWRITTEN, CONVERSATION)
    [error] = errors
    text = error.render()
    assert text.startswith("policy.tokenizer.chat_template (drops history reasoning): renders")
    assert "before message 3 (user) of a system,user,assistant,user,assistant conversation" in text
    assert "nemo_rl/data/llm_message_utils.py:565" in text
    assert "nemo_rl/algorithms/sft.py:295" in text


def test_text_after_the_last_message_only_is_a_note() -> None:
    footer = Template(PASSTHROUGH.text + "<|end_of_conversation|>", "footer")
    errors, notes = nemo_rl_findings(footer, CONVERSATION)
    assert errors == []
    assert "'<|end_of_conversation|>' after the last message only" in notes[0].render()


def test_a_template_that_refuses_the_conversation_says_why() -> None:
    strict = Template(
        "{% for m in messages %}{% if m.role == 'system' %}"
        "{{ raise_exception('System role not supported') }}{% endif %}{{ m.content }}"
        "{% endfor %}",
        "no system role",
    )
    [error], _ = nemo_rl_findings(strict, CONVERSATION)
    assert (
        "fails on a system,user,assistant,user,assistant conversation's first 1 messages: "
        "System role not supported"
    ) in error.render()


def test_megatron_bridge_refuses_a_template_without_generation_blocks_or_markers() -> None:
    [error] = bridge_findings(PASSTHROUGH, CONVERSATION)
    text = error.render()
    assert "has no {% generation %} block (src/megatron/bridge/data/datasets/utils.py:53)" in text
    assert "conversation_processing.py:1823" in text
    assert "(wrap each assistant message's content in {% generation %}" in text


def test_megatron_bridge_takes_role_markers_it_recognises_or_generation_blocks() -> None:
    assert bridge_findings(ROLE_HEADER, CONVERSATION) == []  # Llama 3's markers
    assert bridge_findings(ASSISTANT_MARKED, CONVERSATION) == []
    [error] = bridge_findings(ALL_MARKED, CONVERSATION)
    assert "puts message 0 (system) inside a {% generation %} block" in error.render()
    assert "the loss would train on the prompt" in error.render()


def test_generation_blocks_are_found_in_the_output() -> None:
    rendered = render(ASSISTANT_MARKED, [{"role": "user", "content": "hi"},
                                         {"role": "assistant", "content": "hello"}])  # fmt: skip
    [(start, end)] = rendered.generation
    # The template's own turn text is the assistant's message, header and <|eot_id|> with it.
    assert (
        rendered.text[start:end]
        == "<|start_header_id|>assistant<|end_header_id|>\n\nhello<|eot_id|>"
    )
    assert "hi" in rendered.text[:start]


def test_the_key_is_read_as_nemo_rl_reads_it(tmp_path: Path) -> None:
    model = tmp_path / "model"
    model.mkdir()
    (model / "tokenizer_config.json").write_text(
        json.dumps({"chat_template": ROLE_HEADER.text, "bos_token": {"content": "<s>"}})
    )
    assert read_template(None, model) == Template(
        PASSTHROUGH.text,
        "null: NeMo-RL's passthrough, nemo_rl/algorithms/utils.py:377",
        {"bos_token": "<s>"},
    )
    found = read_template("default", model)
    assert found is not None and found.text == ROLE_HEADER.text
    file = tmp_path / "mine.jinja"
    file.write_text(PASSTHROUGH.text)
    found = read_template(str(file), None)
    assert found is not None and found.where == str(file)
    assert read_template(str(tmp_path / "absent.jinja"), None) is None
    assert read_template("default", None) is None


def test_the_datas_most_common_role_sequences_are_rendered() -> None:
    roles = {"user,assistant": 90, "system,user,assistant": 10, "user": 3}
    assert shapes(roles) == [("user", "assistant"), ("system", "user", "assistant")]
    assert shapes(None) == [DEFAULT_ROLES]
