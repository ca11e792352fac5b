"""SFT's rules (``nemo_rl/algorithms/sft.py``, super-v3.5-posttraining) on the stages
``recipekit import-yaml`` makes of NeMo-RL's own sft.yaml and sft_vlm_3B.yaml: a value that breaks
each is refused (or warned about) at its key, citing the upstream line. The last tests plan every
SFT, DPO and RM example of the corpus against the rules of all three."""

# The catalogued checks these tests break, which the rule catalogue's meta-test finds by name:
# sft_checkpoint_metric_names_its_source, sft_checkpoint_saved_without_its_validation_metric.

from __future__ import annotations

from pathlib import Path

import pytest

from recipekit.errors import RecipeError
from recipekit.nemo_rl.algorithms import NEMO_RL_SUPER35_SFT, NEMO_RL_SUPER35_VLM_SFT
from recipekit.nemo_rl.rule_lines import where
from recipekit.nemo_rl.rules import sft
from recipekit.nemo_rl.rules.checkpoint_ranking import Loop, resolved_loop
from recipekit.nemo_rl.rules.conftest import Plan, RefusedAt, imported_stage
from recipekit.nemo_rl.schema_sft import SFTConfigMain
from recipekit.plan import make_plan
from recipekit.stage import Stage

CONFIGS = "nemo-rl/main/examples/configs"
# NeMo-RL's SFT, DPO and RM examples on main (super-v3.5-posttraining's schema).
TRAINER_EXAMPLES = (
    "sft.yaml",
    "sft_avlm.yaml",
    "sft_openmathinstruct2.yaml",
    "sft_openmathinstruct2_megatron.yaml",
    "sft_vlm_3B.yaml",
    "recipes/llm/sft-llama3.1-8b-1n8g-megatron.yaml",
    "recipes/llm/sft-llama3.2-1b-1n8g-fsdp2tp1.v3.yaml",
    "recipes/llm/sft-nanov3-30BA3B-2n8g-fsdp2.yaml",
    "dpo.yaml",
    "recipes/llm/dpo-llama3.2-1b-instruct-1n8g-fsdp2tp1.v2.yaml",
    "rm.yaml",
)
TRAINER_FILES = ("sft.py:", "dpo.py:", "rm.py:")


def _stage(reference_dir: Path, tmp: Path, name: str) -> Stage:
    return imported_stage(reference_dir / CONFIGS / name, tmp)


@pytest.fixture(scope="module")
def stage(reference_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Stage:
    return _stage(reference_dir, tmp_path_factory.mktemp("sft"), "sft.yaml")


def test_the_upstream_example_plans_with_sfts_rules(stage: Stage, warned: Plan) -> None:
    assert stage.framework is NEMO_RL_SUPER35_SFT
    assert warned(stage) == []
    assert sft.sft_checkpoint_metric_names_its_source in NEMO_RL_SUPER35_SFT.error_checks
    assert sft.sft_checkpoint_saved_without_its_validation_metric in (
        NEMO_RL_SUPER35_SFT.warning_checks
    )


def test_the_vlm_runner_runs_the_same_loop(
    reference_dir: Path, tmp_path: Path, warned: Plan
) -> None:
    vlm = _stage(reference_dir, tmp_path, "sft_vlm_3B.yaml")
    assert vlm.framework is NEMO_RL_SUPER35_VLM_SFT
    assert warned(vlm) == []
    assert NEMO_RL_SUPER35_VLM_SFT.error_checks == NEMO_RL_SUPER35_SFT.error_checks
    assert NEMO_RL_SUPER35_VLM_SFT.warning_checks == NEMO_RL_SUPER35_SFT.warning_checks


def test_an_absent_loop_key_is_sfts_default() -> None:
    assert resolved_loop(SFTConfigMain(), sft.SFT_LOOP) == Loop(
        max_num_steps=60, val_period=10, val_at_end=False
    )


def test_a_ranking_metric_names_its_source(stage: Stage, refused_at: RefusedAt) -> None:
    [error] = refused_at(
        stage,
        ("checkpointing.metric_name=val_loss",),
        "checkpointing.metric_name = 'val_loss'",
        where("nemo-rl.algorithms.sft.sft-train.ranking-metric-starts-train-val"),
    )
    assert "'val:val_loss'" in error
    make_plan(stage, ["checkpointing.metric_name=train:loss"])
    make_plan(stage, ["checkpointing.metric_name=val_loss", "checkpointing.enabled=false"])


def test_a_save_without_validation_is_not_ranked(stage: Stage, warned: Plan) -> None:
    # sft.yaml saves and validates every 10 steps; a save every 5 misses validation at step 5.
    [warning] = warned(stage, "checkpointing.save_period=5")
    assert warning.startswith("checkpointing.save_period = 5: SFT saves a checkpoint at step 5")
    assert where("nemo-rl.algorithms.sft.sft-train.val-ranking-metric-save-step-ran") in warning
    [warning] = warned(stage, "sft.val_period=0")
    assert warning.startswith("checkpointing.save_period = 10") and "sft.val_period" in warning
    # The last step (65) is no multiple of 10: it validates there only with val_at_end.
    [warning] = warned(stage, "sft.max_num_steps=65")
    assert warning.startswith("sft.val_at_end = False") and "step 65" in warning
    assert warned(stage, "sft.max_num_steps=65", "sft.val_at_end=true") == []
    by_loss = "checkpointing.metric_name=train:loss"
    assert warned(stage, "checkpointing.save_period=5", by_loss) == []


# --- every SFT, DPO and RM example --------------------------------------------------------------


# Examples NeMo-RL warns of itself: the start of the warning recipekit mirrors.
WARNED_UPSTREAM = {
    "recipes/llm/sft-llama3.1-8b-1n8g-megatron.yaml": "checkpointing.save_period = 100"
}


@pytest.mark.parametrize("name", TRAINER_EXAMPLES)
def test_the_upstream_trainer_examples_break_none_of_these_rules(
    reference_dir: Path, tmp_path: Path, name: str
) -> None:
    example = _stage(reference_dir, tmp_path, name)
    try:
        issues = [issue.render() for issue in make_plan(example).warnings]
    except RecipeError as failure:
        issues = [issue.render() for issue in failure.issues]
    found = [issue for issue in issues if any(f in issue for f in TRAINER_FILES)]
    # NeMo-RL itself warns of this one at each save (the next test).
    assert [i for i in found if not i.startswith(WARNED_UPSTREAM.get(name, "\0"))] == []


def test_the_megatron_llama_sft_example_saves_unranked_checkpoints(
    reference_dir: Path, tmp_path: Path
) -> None:
    # It validates every 500 steps of its 250 and saves every 100, ranked by val:val_loss:
    # NeMo-RL warns at each save, and so does the plan.
    example = _stage(reference_dir, tmp_path, "recipes/llm/sft-llama3.1-8b-1n8g-megatron.yaml")
    [issue] = sft.sft_checkpoint_saved_without_its_validation_metric(example.config)
    assert issue.render().startswith("checkpointing.save_period = 100: SFT saves a checkpoint")
