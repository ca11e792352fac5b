"""One tokenizer and chat template along a lineage (issue 43): the Super 3.5 chain uses each
stage's checkpoint's own throughout (no warning); a stage that names another is a warning naming
it and the stage its model comes from, with both values, and the stages after it inherit its."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from recipekit.cli.recipekit_cli import cli
from recipekit.pipeline.chain import load_chain, plan_chain
from recipekit.pipeline.tokenizers import PASSTHROUGH, choice, tokenizer_warnings

# From RLVR on: the SFT stages are Megatron-Bridge's, which read both from the checkpoint.
FROM = "rlvr"
TEMPLATE = "/lustre/team/templates/tool_calls.jinja"
# A template is set for training and for NeMo Gym's rollouts together (a rule refuses one alone).
NEW_TEMPLATE = (
    f"teacher-reasoning:policy.tokenizer.chat_template={TEMPLATE}",
    "teacher-reasoning:policy.generation.vllm_cfg.http_server_serving_chat_kwargs.chat_template="
    + TEMPLATE,
)


def _planned(*overrides: str) -> list:
    chain = load_chain(Path("recipes/super35"), Path.cwd())
    return plan_chain(chain, chain.between(FROM, None), overrides)


def test_the_super35_chain_keeps_each_checkpoints_own() -> None:
    assert tokenizer_warnings(_planned()) == []


def test_a_teacher_with_another_template_is_a_warning_naming_both_stages() -> None:
    [warning] = tokenizer_warnings(_planned(*NEW_TEMPLATE))
    assert warning.path == "teacher-reasoning: policy.tokenizer.chat_template"
    assert warning.message == (
        "the chat template differs from rlvr's, whose checkpoint this stage starts from: "
        f"teacher-reasoning uses {TEMPLATE!r}, rlvr used "
        '"the checkpoint\'s own (from super35-sft-model)"'
    )


def test_the_stages_after_a_new_tokenizer_inherit_it() -> None:
    # MOPD phase 2 starts from phase 1's checkpoint, which carries phase 1's tokenizer: only
    # phase 1 changes it.
    warnings = tokenizer_warnings(
        _planned("mopd-phase1:policy.tokenizer.name=nvidia/Other-Tokenizer")
    )
    assert [w.path for w in warnings] == ["mopd-phase1: policy.tokenizer.name"]
    assert "mopd-phase1 uses 'nvidia/Other-Tokenizer', rlvr used" in warnings[0].message


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("default", None),
        ("DEFAULT", None),
        (None, PASSTHROUGH),
        ("/artifacts/super35-sft-model/latest/chat_template.jinja", None),
        ("/artifacts/super35-sft-model/latest-other/chat_template.jinja",
         "/artifacts/super35-sft-model/latest-other/chat_template.jinja"),
        ("{{ messages }}", "{{ messages }}"),
    ],
)  # fmt: skip
def test_what_counts_as_the_checkpoints_own(value: object, expected: str | None) -> None:
    config = {"policy": {"tokenizer": {"chat_template": value}}}
    model = "/artifacts/super35-sft-model/latest"
    assert choice("nemo-rl", config, model, "chat template").value == expected
    assert choice("nemo-rl", {}, model, "chat template").value is None


def test_pipeline_plan_prints_the_warning() -> None:
    result = CliRunner().invoke(
        cli,
        ["pipeline", "plan", "recipes/super35", "--from", FROM, "--until", "teacher-reasoning",
         "--set", NEW_TEMPLATE[0], "--set", NEW_TEMPLATE[1]],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "lineage (the tokenizer and chat template from stage to stage):" in result.output
    assert "  WARNING: teacher-reasoning: policy.tokenizer.chat_template: the chat template " in (
        result.output
    )
