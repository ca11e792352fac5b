"""`pipeline plan` reads a data version's recorded statistics (issue 43): the rlvr stage against
prompts too long for vLLM is refused with their count; the other limits are stated."""

from __future__ import annotations

import json
from array import array
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from recipekit.cli import recipekit_cli
from recipekit.datacheck.gym import summary
from recipekit.datacheck.plan import count_over, stage_findings
from recipekit.lineage.registry_test import PROFILE
from recipekit.lineage.store import read_marker

V35 = "super-v3.5-posttraining@5d63149a"


def _recipekit(*args: str) -> Result:
    return CliRunner().invoke(recipekit_cli.cli, list(args))


def _tokenizer(path: Path) -> Path:
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace

    built = tokenizers.Tokenizer(WordLevel({"[UNK]": 0, "x": 1}, unk_token="[UNK]"))
    built.pre_tokenizer = Whitespace()
    built.save(str(path))
    return path


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
    tokenizer = _tokenizer(tmp_path / "tokenizer.json")
    train = tmp_path / "train.jsonl"
    # rlvr: max_model_len = policy_max_input_tokens = data.max_input_seq_length = 16384.
    rows = [_row(100), _row(16384), _row(20000), _row(20000), _row(100)]
    train.write_text("".join(json.dumps(r) + "\n" for r in rows))
    for args in (
        ("model", "import", "sft", str(tmp_path / "sft")),
        ("data", "import", "rl", str(train), "--val", str(train), "--tokenizer", str(tokenizer)),
    ):
        result = _recipekit(*args, "--cluster", cluster)
        assert result.exit_code == 0, result.output
    marker = read_marker(store / "super35-rl-rlvr-data", 0)
    assert marker is not None
    assert marker["meta"]["content"]["train.jsonl"]["prompt_tokens"]["max"] == 20000
    planned = _recipekit(
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
