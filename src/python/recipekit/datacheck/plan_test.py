"""`pipeline plan` reads a data version's recorded statistics (issue 43): the rlvr stage against
prompts too long for vLLM is refused with their count; the other limits are stated."""

from __future__ import annotations

import json
from array import array
from pathlib import Path
from typing import Any

from click.testing import Result

from recipekit.datacheck.conftest import run_cli, word_tokenizer
from recipekit.datacheck.energon_test import unpack_fixture
from recipekit.datacheck.gym import summary
from recipekit.datacheck.plan import count_over, stage_findings
from recipekit.lineage.registry_test import PROFILE
from recipekit.lineage.store import read_marker

V35 = "super-v3.5-posttraining@5d63149a"


def _row(words: int) -> dict[str, Any]:
    # As NeMo-RL super-v3.5 indexes a row: agent_ref.name (nemo_gym.py:676), input
    # (rollouts.py:441).
    return {
        "agent_ref": {"name": "mcqa_simple_agent"},
        "responses_create_params": {"input": [{"role": "user", "content": "x " * words}]},
    }


def test_rlvrs_plan_counts_prompts_vllm_cannot_take(tmp_path: Path, store: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    cluster_file = tmp_path / "cluster.py"
    cluster_file.write_text(PROFILE.format(store=str(store), runs=str(runs)))
    cluster = f"{cluster_file}:profile"
    checkpoint = tmp_path / "sft" / "iter_0000010"
    checkpoint.mkdir(parents=True)
    (checkpoint / "model.safetensors").write_bytes(b"weights")
    tokenizer = word_tokenizer(tmp_path / "tokenizer.json", ["x"])
    train = tmp_path / "train.jsonl"
    # rlvr: max_model_len = policy_max_input_tokens = data.max_input_seq_length = 16384.
    rows = [_row(100), _row(16384), _row(20000), _row(20000), _row(100)]
    train.write_text("".join(json.dumps(r) + "\n" for r in rows))
    for args in (
        ("model", "import", "sft", str(tmp_path / "sft")),
        ("data", "import", "rl", str(train), "--val", str(train), "--tokenizer", str(tokenizer)),
    ):
        result = run_cli(*args, "--cluster", cluster)
        assert result.exit_code == 0, result.output
    marker = read_marker(store / "super35-rl-rlvr-data", 0)
    assert marker is not None
    assert marker["meta"]["content"]["train.jsonl"]["prompt_tokens"]["max"] == 20000
    planned = run_cli(
        "pipeline", "plan", "recipes/super35", "--from", "rlvr", "--until", "rlvr",
        "--cluster", cluster,
    )  # fmt: skip
    assert planned.exit_code == 2, planned.output
    assert "Traceback" not in planned.output
    assert (
        "rlvr: train.jsonl: at least 3 of 5 prompts fill policy.generation.vllm_cfg.max_model_len "
        "= 16384 tokens: vLLM has no room to generate and NeMo-RL raises"
    ) in planned.stderr


def test_each_limit_says_what_the_framework_does() -> None:
    lengths = summary(array("I", [10, 500, 900, 2000, 3000]))
    content = {"train.jsonl": {"format": "nemo-gym-jsonl", "rows": 5, "agents": {"a": 5},
                               "prompt_chars": lengths, "prompt_tokens": lengths}}  # fmt: skip
    config = {
        "env": {
            "should_use_nemo_gym": True,
            "nemo_gym": {"config_paths": [], "policy_max_input_tokens": 1000},
        },
        "data": {"max_input_seq_length": 800},
        "policy": {"generation": {"vllm_cfg": {"max_model_len": 2000}}},
    }
    found = stage_findings("rlvr", config, V35, content)
    texts = [i.render() for i in found.notes]
    assert (
        found.errors[0]
        .render()
        .startswith(
            "rlvr: train.jsonl: rows name agents env.nemo_gym.config_paths does not define: 'a'"
        )
    )
    assert "at least 3 of 5 prompts reach data.max_input_seq_length = 800" in texts[0]
    assert "neither cut nor dropped" in texts[0]
    assert "at least 2 of 5 prompts exceed env.nemo_gym.policy_max_input_tokens = 1000" in texts[1]
    # policy_max_input_tokens below max_model_len: Gym ends them before vLLM sees them.
    assert "at least 2 of 5 prompts fill" in texts[2] and "NeMo Gym ends them first" in texts[2]
    # super-v3 has no NeMo Gym rows: nothing said.
    assert stage_findings("rlvr", config, "super-v3@8af543ad", content).notes == ()


def test_counts_past_the_longest_kept_come_from_percentiles() -> None:
    lengths = summary(array("I", range(10_000)))
    assert count_over(lengths, 10_000, 9_500) == (500, True)
    count, exact = count_over(lengths, 10_000, 5_000)
    assert not exact and 4_900 <= count <= 5_000


# --- NeMo-RL's SFT and preference rows, MOPD routing, the tokenizer -------------------------


def _chat_content(fmt: str, lengths: list[int], **extra: Any) -> dict[str, Any]:
    summed = summary(array("I", lengths))
    return {
        "train.jsonl": {
            "format": fmt,
            "rows": len(lengths),
            "roles": {"system,user,assistant": len(lengths)},
            "conversation_chars": summed,
            "conversation_tokens": {**summed, "tokenizer": "sha256:" + "0" * 64},
            **extra,
        }
    }


def _sft(template: Any = "default", **data: Any) -> dict[str, Any]:
    return {
        "sft": {"max_num_epochs": 1},
        "policy": {"tokenizer": {"name": "model", "chat_template": template}},
        "data": {"max_input_seq_length": 1000, **data},
    }


def test_sft_rows_past_max_input_seq_length_are_counted_with_what_nemo_rl_does() -> None:
    content = _chat_content("nemo-rl-messages", [10, 500, 999, 1000, 3000])
    found = stage_findings("sft", _sft(None), V35, content)
    assert found.errors == ()
    [note] = [n.render() for n in found.notes]
    assert note.startswith(
        "sft: train.jsonl: at least 2 of 5 rows reach data.max_input_seq_length = 1000 tokens: "
        "NeMo-RL cuts each to a few tokens and sets its loss multiplier to 0"
    )
    assert "nemo_rl/data/processors.py:172" in note and "examples/run_sft.py:99" in note
    # A pair counts when its longer side passes the limit (>, processors.py:278).
    pairs = _chat_content("nemo-rl-preference", [1000, 1001])
    dpo = {"dpo": {}, "data": {"max_input_seq_length": 1000}}
    [note] = [n.render() for n in stage_findings("dpo", dpo, V35, pairs).notes]
    assert "at least 1 of 2 rows (a pair: its longer side) exceed" in note


def test_an_sft_stage_where_every_row_trains_on_nothing_is_refused() -> None:
    content = _chat_content("nemo-rl-messages", [2000, 3000])
    [error] = stage_findings("sft", _sft(None), V35, content).errors
    assert "at least 2 of 2 rows reach data.max_input_seq_length = 1000" in error.render()


def test_a_dataset_name_reading_another_format_is_refused() -> None:
    content = _chat_content("nemo-rl-preference", [10])
    config = _sft(None, train={"dataset_name": "openai_format"})
    [error] = stage_findings("sft", config, V35, content).errors
    assert error.render().startswith(
        "sft: train.jsonl: holds nemo-rl-preference rows, and data.train.dataset_name = "
        "'openai_format' reads nemo-rl-messages rows"
    )
    assert "(set data.train.dataset_name to 'PreferenceDataset'" in error.render()


def test_an_sft_stages_template_is_rendered_on_the_datas_roles(tmp_path: Path) -> None:
    from recipekit.datacheck.template_test import HISTORY_REWRITTEN, ROLE_HEADER

    content = _chat_content("nemo-rl-messages", [10])
    content["train.jsonl"]["roles"] = {"user,assistant,user,assistant": 1}
    assert stage_findings("sft", _sft(ROLE_HEADER.text), V35, content).errors == ()
    [error] = stage_findings("sft", _sft(HISTORY_REWRITTEN.text), V35, content).errors
    assert error.render().startswith(
        "sft: policy.tokenizer.chat_template (the template text in the config): renders the "
        "messages before message 2 (user) of a user,assistant,user,assistant conversation"
    )
    # No key: the model's own template, from its version in the store.
    model = tmp_path / "model"
    model.mkdir()
    (model / "chat_template.jinja").write_text(HISTORY_REWRITTEN.text)
    config = _sft()
    del config["policy"]["tokenizer"]["chat_template"]
    [error] = stage_findings("sft", config, V35, content, model_dir=model).errors
    assert f"policy.tokenizer.chat_template ({model / 'chat_template.jinja'})" in error.render()
    notes = stage_findings("sft", config, V35, content).notes
    assert any("policy.tokenizer.chat_template: not checked" in n.render() for n in notes)


def test_counts_made_with_another_tokenizer_are_a_warning(tmp_path: Path) -> None:
    model = tmp_path / "model"
    model.mkdir()
    word_tokenizer(model / "tokenizer.json", ["x"])
    content = _chat_content("nemo-rl-messages", [10])
    [note] = [
        n.render()
        for n in stage_findings("sft", _sft(None), V35, content, model_dir=model).notes
        if "another tokenizer" in n.render()
    ]
    assert "conversation_tokens were counted with tokenizer sha256:000000000000" in note
    assert f"the stage's model ({model / 'tokenizer.json'}) has sha256:" in note


def test_mopd_rows_of_an_agent_no_teacher_owns() -> None:
    lengths = summary(array("I", [10]))
    content = {"train.jsonl": {"format": "nemo-gym-jsonl", "rows": 3,
                               "agents": {"mcqa_simple_agent": 2, "my_agent": 1},
                               "prompt_chars": lengths, "prompt_tokens": lengths}}  # fmt: skip
    distill = {
        "enabled": True,
        "teacher_model_by_agent_name": {"mcqa_simple_agent": "/teachers/reasoning"},
        "default_teacher_alias": "mcqa_simple_agent",
        "strict_agent_name_match": True,
    }
    config = {"env": {"should_use_nemo_gym": True, "nemo_gym": {}},
              "on_policy_distillation": distill}  # fmt: skip
    [error] = stage_findings("mopd", config, V35, content).errors
    assert error.render().startswith(
        "mopd: train.jsonl: rows name agents on_policy_distillation.teacher_model_by_agent_name "
        "does not route to a teacher: 'my_agent' (1 rows); strict_agent_name_match is on, so "
        "NeMo-RL raises on the first (nemo_rl/algorithms/opd.py:162)"
    )
    distill["strict_agent_name_match"] = False
    found = stage_findings("mopd", config, V35, content)
    assert found.errors == ()
    assert (
        "the default teacher 'mcqa_simple_agent' scores them (nemo_rl/algorithms/opd.py:166)"
        in (found.notes[0].render())
    )


def test_the_sft_stages_plan_refuses_a_model_template_bridge_cannot_mask(
    tmp_path: Path, store: Path
) -> None:
    from recipekit.datacheck.template_test import PASSTHROUGH, ROLE_HEADER

    runs = tmp_path / "runs"
    runs.mkdir()
    cluster_file = tmp_path / "cluster.py"
    cluster_file.write_text(PROFILE.format(store=str(store), runs=str(runs)))
    cluster = f"{cluster_file}:profile"
    # An Energon dataset energon prepare wrote (data import sft reads it before registering it).
    energon = unpack_fixture(tmp_path / "energon")

    def plan_with(template: str, name: str) -> Result:
        model = tmp_path / name
        model.mkdir()
        (model / "model.safetensors").write_bytes(b"weights")
        (model / "tokenizer_config.json").write_text(json.dumps({"chat_template": template}))
        for args in (("model", "import", "pretrain", str(model)),
                     ("data", "import", "sft", str(energon))):  # fmt: skip
            result = run_cli(*args, "--cluster", cluster)
            assert result.exit_code == 0, result.output
        return run_cli(
            "pipeline", "plan", "recipes/super35", "--from", "sft", "--until", "sft",
            "--cluster", cluster,
        )  # fmt: skip

    # NeMo-RL's passthrough template: no generation block, no role markers.
    planned = plan_with(PASSTHROUGH.text, "hf-passthrough")
    assert planned.exit_code == 2, planned.output
    assert "Traceback" not in planned.output
    assert "sft: chat template (" in planned.stderr
    assert "has no {% generation %} block" in planned.stderr
    assert "conversation_processing.py:1823" in planned.stderr
    # A Llama 3 style template: Bridge finds the assistant by its role markers.
    planned = plan_with(ROLE_HEADER.text, "hf-role-header")
    assert planned.exit_code == 0, planned.output
