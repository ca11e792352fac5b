"""Reward-model training's rules (``nemo_rl/algorithms/rm.py``, super-v3.5-posttraining) on the
stage ``recipekit import-yaml`` makes of NeMo-RL's own rm.yaml (DTensor, one epoch:
max_num_steps -1, validating and saving every 16 steps): a value that breaks each is refused (or
warned about) at its key, citing the upstream line."""

# The catalogued checks these tests break, which the rule catalogue's meta-test finds by name:
# runner_refusals, rm_checkpoint_metric_names_its_source,
# rm_checkpoint_saved_without_its_validation_metric.

from __future__ import annotations

from pathlib import Path

import pytest

from recipekit.nemo_rl.algorithms import NEMO_RL_SUPER35_RM
from recipekit.nemo_rl.config_guards import config_validators_hold, runner_issues
from recipekit.nemo_rl.rule_lines import where
from recipekit.nemo_rl.rules import rm
from recipekit.nemo_rl.rules.conftest import Plan, RefusedAt, imported_stage
from recipekit.plan import make_plan
from recipekit.stage import Stage

RUN_RM = "examples/run_rm.py"
RM_YAML = "nemo-rl/main/examples/configs/rm.yaml"


@pytest.fixture(scope="module")
def stage(reference_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Stage:
    return imported_stage(reference_dir / RM_YAML, tmp_path_factory.mktemp("rm"))


def test_the_upstream_example_plans_with_rms_rules(stage: Stage, warned: Plan) -> None:
    assert stage.framework is NEMO_RL_SUPER35_RM
    assert warned(stage) == []
    # Every Super 3.5 entry point also replays its config classes' validators.
    assert set(NEMO_RL_SUPER35_RM.error_checks) == {*rm.RM_ERROR_CHECKS, config_validators_hold}
    assert rm.rm_checkpoint_saved_without_its_validation_metric in (
        NEMO_RL_SUPER35_RM.warning_checks
    )


def test_a_dtensor_reward_model_trains_at_cp_1(stage: Stage, refused_at: RefusedAt) -> None:
    two = "cluster.gpus_per_node=2"
    refused_at(
        stage,
        (two, "policy.dtensor_cfg.context_parallel_size=2"),
        "policy.dtensor_cfg.context_parallel_size = 2",
        where("nemo-rl.algorithms.rm.setup.dtensor-reward-model-trains-cp"),
    )
    # With DTensor off (training on Megatron-Core) the DTensor section is not read.
    off = {"policy.dtensor_cfg.enabled": False, "policy.dtensor_cfg.context_parallel_size": 2}
    assert [i for i in runner_issues(stage.with_values(off).config, RUN_RM, "guard")] == []


def test_a_ranking_metric_names_its_source(stage: Stage, refused_at: RefusedAt) -> None:
    refused_at(
        stage,
        ("checkpointing.metric_name=loss",),
        "checkpointing.metric_name = 'loss'",
        where("nemo-rl.algorithms.rm.rm-train.ranking-metric-starts-train-val"),
    )
    make_plan(stage, ["checkpointing.metric_name=train:loss"])


def test_a_save_without_validation_is_not_ranked(stage: Stage, warned: Plan) -> None:
    [warning] = warned(stage, "checkpointing.save_period=10")
    assert warning.startswith("checkpointing.save_period = 10: RM saves a checkpoint at step 10")
    assert where("nemo-rl.algorithms.rm.rm-train.val-ranking-metric-save-step-ran") in warning
    # With max_num_steps -1 the last step is the dataset's, which the plan does not read; with
    # 20 steps it is step 20, no multiple of 16.
    [warning] = warned(stage, "rm.max_num_steps=20")
    assert warning.startswith("rm.val_at_end = False") and "step 20" in warning
    assert warned(stage, "rm.max_num_steps=20", "rm.val_at_end=true") == []
    by_loss = "checkpointing.metric_name=train:loss"
    assert warned(stage, "checkpointing.save_period=10", by_loss) == []
