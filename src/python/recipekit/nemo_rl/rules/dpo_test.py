"""DPO's rules (``nemo_rl/algorithms/dpo.py``, super-v3.5-posttraining) on the stage
``recipekit import-yaml`` makes of NeMo-RL's own dpo.yaml (DTensor, one GPU, 128 pairs a step in
micro-batches of 2): a value that breaks each is refused (or warned about) at its key, citing the
upstream line."""

# The catalogued checks these tests break, which the rule catalogue's meta-test finds by name:
# runner_refusals, dpo_train_batches_fill_the_micro_batches,
# dpo_checkpoint_metric_names_its_source, dpo_checkpoint_saved_without_its_validation_metric.

from __future__ import annotations

from pathlib import Path

import pytest

from recipekit.nemo_rl.algorithms import NEMO_RL_SUPER35_DPO
from recipekit.nemo_rl.config_guards import config_validators_hold
from recipekit.nemo_rl.rule_lines import where
from recipekit.nemo_rl.rules import dpo
from recipekit.nemo_rl.rules.conftest import Plan, RefusedAt, imported_stage
from recipekit.plan import make_plan
from recipekit.stage import Stage

DPO_YAML = "nemo-rl/main/examples/configs/dpo.yaml"
MEGATRON = ("policy.dtensor_cfg.enabled=false", "policy.megatron_cfg.enabled=true")


@pytest.fixture(scope="module")
def stage(reference_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Stage:
    return imported_stage(reference_dir / DPO_YAML, tmp_path_factory.mktemp("dpo"))


def test_the_upstream_example_plans_with_dpos_rules(stage: Stage, warned: Plan) -> None:
    assert stage.framework is NEMO_RL_SUPER35_DPO
    assert warned(stage) == []
    # Every Super 3.5 entry point also replays its config classes' validators (and its
    # runner's own checks: NemoRLRun.check calls config_guards.runner_issues).
    assert set(NEMO_RL_SUPER35_DPO.error_checks) == {*dpo.DPO_ERROR_CHECKS, config_validators_hold}
    assert dpo.dpo_checkpoint_saved_without_its_validation_metric in (
        NEMO_RL_SUPER35_DPO.warning_checks
    )


def test_dpo_runs_without_dynamic_batching(stage: Stage, refused_at: RefusedAt) -> None:
    refused_at(
        stage,
        ("policy.dynamic_batching.enabled=true",),
        "policy.dynamic_batching.enabled = True",
        where("nemo-rl.algorithms.dpo.setup.dpo-runs-without-dynamic-batching-reorders"),
    )


def test_dpo_runs_without_sequence_packing(stage: Stage, refused_at: RefusedAt) -> None:
    refused_at(
        stage,
        ("policy.sequence_packing.enabled=true",),
        "policy.sequence_packing.enabled = True",
        where("nemo-rl.algorithms.dpo.setup.dpo-runs-without-sequence-packing-reorders"),
    )


def test_a_training_batch_fills_the_micro_batches_of_every_rank(
    stage: Stage, refused_at: RefusedAt
) -> None:
    # One GPU: 128 pairs do not split into micro-batches of 3.
    [error] = refused_at(
        stage,
        ("policy.train_micro_batch_size=3",),
        "policy.train_global_batch_size = 128",
        where(
            "nemo-rl.algorithms.dpo.add-ref-logprobs-to-data.training-batch-fills-whole-micro-batches"
        ),
    )
    assert "1 x 3 = 3" in error
    # Eight DTensor ranks take 16 pairs a round: 100 is no multiple, 128 is.
    eight = "cluster.gpus_per_node=8"
    [error] = refused_at(
        stage,
        (eight, "policy.train_global_batch_size=100"),
        "policy.train_global_batch_size = 100",
        where(
            "nemo-rl.algorithms.dpo.add-ref-logprobs-to-data.training-batch-fills-whole-micro-batches"
        ),
    )
    assert "8 x 2 = 16" in error
    make_plan(stage, [eight])
    # On Megatron-Core the data-parallel size is what TP x PP x CP leaves: 8 / 2 = 4 ranks.
    tp2 = "policy.megatron_cfg.tensor_model_parallel_size=2"
    [error] = refused_at(
        stage,
        (*MEGATRON, eight, tp2, "policy.train_global_batch_size=36"),
        "policy.train_global_batch_size = 36",
        where(
            "nemo-rl.algorithms.dpo.add-ref-logprobs-to-data.training-batch-fills-whole-micro-batches"
        ),
    )
    assert "4 x 2 = 8" in error
    make_plan(stage, [*MEGATRON, eight, tp2, "policy.train_global_batch_size=40"])


def test_a_ranking_metric_names_its_source(stage: Stage, refused_at: RefusedAt) -> None:
    refused_at(
        stage,
        ("checkpointing.metric_name=validation-default_loss",),
        "checkpointing.metric_name = 'validation-default_loss'",
        where("nemo-rl.algorithms.dpo.dpo-train.ranking-metric-starts-train-val"),
    )
    make_plan(stage, ["checkpointing.metric_name=train:loss"])


def test_a_save_without_validation_is_not_ranked(stage: Stage, warned: Plan) -> None:
    # dpo.yaml validates every 25 steps and saves every 50; validating every 20 misses step 50.
    [warning] = warned(stage, "dpo.val_period=20")
    assert warning.startswith("checkpointing.save_period = 50: DPO saves a checkpoint at step 50")
    assert where("nemo-rl.algorithms.dpo.dpo-train.val-ranking-metric-save-step-ran") in warning
    # 140 steps end on no multiple of 25.
    [warning] = warned(stage, "dpo.max_num_steps=140")
    assert warning.startswith("dpo.val_at_end = False") and "step 140" in warning
    assert warned(stage, "dpo.val_period=20", "checkpointing.metric_name=train:loss") == []
