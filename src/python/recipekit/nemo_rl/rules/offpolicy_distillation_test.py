"""Distillation's rules (``examples/run_distillation.py``, super-v3.5-posttraining) on the stage
``recipekit import-yaml`` makes of NeMo-RL's own distillation_math.yaml (DTensor student and
teacher, colocated vLLM generation): a value that breaks each is refused at its key, citing the
upstream line."""

# The catalogued checks these tests break, which the rule catalogue's meta-test finds by name:
# runner_refusals, distillation_refits_without_sparse_transport,
# dtensor_sequence_parallel_excludes_packing, distillation_checkpoint_metric_names_its_source,
# distillation_checkpoint_saved_without_its_validation_metric.

from __future__ import annotations

from pathlib import Path

import pytest

from recipekit.errors import RecipeError
from recipekit.hardware import Hardware
from recipekit.markers import UNSET
from recipekit.nemo_rl.algorithms import NEMO_RL_SUPER35_DISTILLATION
from recipekit.nemo_rl.rule_lines import where
from recipekit.nemo_rl.rules import offpolicy_distillation
from recipekit.nemo_rl.rules.conftest import imported_stage, plan_warnings
from recipekit.nemo_rl.rules.offpolicy_distillation import VALIDATION_BATCHES
from recipekit.plan import make_plan
from recipekit.stage import Stage

EXAMPLE = "nemo-rl/main/examples/configs/distillation_math.yaml"
# The catalogue ids of the rules of distillation.py these tests break share these prefixes.
SETUP = "nemo-rl.algorithms.distillation.setup."
TRAIN = "nemo-rl.algorithms.distillation.distillation-train."
UNRANKED = f"{TRAIN}val-ranking-metric-save-step-ran"
RESOURCES = "policy.generation.colocated.resources"
NON_COLOCATED = (
    "policy.generation.colocated.enabled=false",
    f"{RESOURCES}.gpus_per_node=4",
)
# The upstream example's one warning: it saves every 10 steps and validates every 20.
UNRANKED_SAVE = "checkpointing.save_period = 10: NeMo-RL's distillation saves a checkpoint at step"


@pytest.fixture(scope="module")
def stage(reference_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Stage:
    return imported_stage(reference_dir / EXAMPLE, tmp_path_factory.mktemp("distillation"))


def _errors(stage: Stage, *overrides: str) -> list[str]:
    with pytest.raises(RecipeError) as exc:
        make_plan(stage, overrides)
    return [issue.render() for issue in exc.value.issues]


def _refused_at(stage: Stage, overrides: tuple[str, ...], key: str, rule: str) -> list[str]:
    """Planning with these overrides raises an error at ``key`` citing ``rule`` (its catalogue
    id) where the catalogue finds it."""
    errors = _errors(stage, *overrides)
    found = [e for e in errors if e.startswith(key) and where(rule) in e]
    assert found, errors
    return found


_warnings = plan_warnings


def test_the_upstream_example_plans_with_distillations_rules(stage: Stage) -> None:
    assert stage.framework is NEMO_RL_SUPER35_DISTILLATION
    [warning] = _warnings(stage)
    assert warning.startswith(UNRANKED_SAVE) and where(UNRANKED) in warning
    assert offpolicy_distillation.dtensor_sequence_parallel_excludes_packing in (
        NEMO_RL_SUPER35_DISTILLATION.error_checks
    )


def test_distillation_needs_a_generation_section(stage: Stage, reference_dir: Path) -> None:
    # The runner reads it (a KeyError) before distillation's setup asserts it is there.
    without = stage.with_values({"policy.generation": UNSET})
    [error] = _errors(without)
    runner = "examples/run_distillation.py"
    assert error.startswith("policy.generation: required key is missing") and runner in error
    line = int(error.split(f"{runner}:")[1].split(" ")[0])
    source = (reference_dir / "nemo-rl/super-v3.5-posttraining" / runner).read_text()
    assert '["generation"]' in source.splitlines()[line - 1]


@pytest.mark.parametrize("transport", ["vllm_zmq_sparse", "vllm_s3_sparse"])
def test_distillation_refits_without_a_sparse_transport(stage: Stage, transport: str) -> None:
    setting = f"policy.generation.refit_transport={transport}"
    key = f"policy.generation.refit_transport = '{transport}'"
    _refused_at(stage, (setting,), key, f"{SETUP}vllm-generation-refits-without-remote-sparse")
    make_plan(stage, ["policy.generation.refit_transport=nccl_reshard"])


@pytest.mark.parametrize("role", ["policy", "teacher"])
def test_a_dtensor_model_does_not_pack_with_sequence_parallelism(stage: Stage, role: str) -> None:
    # (The example runs context-parallel, which the v2 DTensor worker refuses with packing and
    # with sequence parallelism: automodel/setup.py, validate_and_prepare_config and
    # setup_model_and_optimizer.)
    no_cp = f"{role}.dtensor_cfg.context_parallel_size=1"
    packing = (f"{role}.sequence_packing.enabled=true", f"{role}.dynamic_batching.enabled=false")
    sp = f"{role}.dtensor_cfg.sequence_parallel=true"
    _refused_at(
        stage,
        (*packing, no_cp, sp),
        f"{role}.dtensor_cfg.sequence_parallel = True",
        f"{SETUP}dtensor-student-teacher-does-not-combine",
    )
    make_plan(stage, [*packing, no_cp])
    make_plan(stage, [sp, no_cp])


def test_non_colocated_generation_is_not_megatron(stage: Stage) -> None:
    megatron = (*NON_COLOCATED, "policy.generation.backend=megatron")
    _refused_at(
        stage,
        megatron,
        "policy.generation.backend = 'megatron'",
        f"{SETUP}non-colocated-generation-not-megatron-back",
    )
    make_plan(stage, NON_COLOCATED)


@pytest.mark.parametrize(
    ("setting", "key", "rule"),
    [
        (
            f"{RESOURCES}.gpus_per_node=null",
            "gpus_per_node = None",
            "one-node-non-colocated-generation-states",
        ),
        (
            f"{RESOURCES}.num_nodes=2",
            "num_nodes = 2",
            "one-node-non-colocated-generation-takes-null",
        ),
    ],
)
def test_one_node_generation_states_its_gpus(
    stage: Stage, setting: str, key: str, rule: str
) -> None:
    _refused_at(stage, (*NON_COLOCATED, setting), f"{RESOURCES}.{key}", SETUP + rule)


@pytest.mark.parametrize(
    ("settings", "key", "rule"),
    [
        (
            (f"{RESOURCES}.num_nodes=null",),
            "num_nodes = None",
            "several-nodes-non-colocated-generation-states",
        ),
        (
            (f"{RESOURCES}.num_nodes=1", f"{RESOURCES}.gpus_per_node=4"),
            "gpus_per_node = 4",
            "several-nodes-non-colocated-generation-takes-whole",
        ),
    ],
)
def test_generation_takes_whole_nodes(
    stage: Stage, settings: tuple[str, ...], key: str, rule: str
) -> None:
    two_nodes = stage.with_values(hardware=Hardware(stage.hardware.node, 2))
    cluster = (
        "policy.generation.colocated.enabled=false",
        "cluster.num_nodes=2",
        "cluster.gpus_per_node=8",
        f"{RESOURCES}.gpus_per_node=8",
    )
    _refused_at(two_nodes, (*cluster, *settings), f"{RESOURCES}.{key}", SETUP + rule)
    make_plan(two_nodes, [*cluster, f"{RESOURCES}.num_nodes=1"])


def test_a_ranking_metric_names_its_source(stage: Stage) -> None:
    metric = "checkpointing.metric_name=accuracy"
    _refused_at(
        stage,
        (metric,),
        "checkpointing.metric_name = 'accuracy'",
        f"{TRAIN}ranking-metric-starts-train-val",
    )
    make_plan(stage, ["checkpointing.metric_name=train:loss"])


def test_a_save_without_validation_metrics_warns(stage: Stage) -> None:
    # Saving where the loop validates leaves every checkpoint ranked.
    assert _warnings(stage, "checkpointing.save_period=20") == []
    # No periodic validation: the first save has no validation metrics.
    [warning] = _warnings(stage, "distillation.val_period=0")
    assert warning.startswith(UNRANKED_SAVE) and where(UNRANKED) in warning
    assert "set distillation.val_period" in warning
    # A last step off the validation period, without val_at_end, is saved unranked.
    off_period = ("checkpointing.save_period=20", "distillation.max_num_steps=1010")
    [warning] = _warnings(stage, *off_period)
    assert warning.startswith("distillation.val_at_end = False: ") and where(UNRANKED) in warning
    assert _warnings(stage, *off_period, "distillation.val_at_end=true") == []
    assert _warnings(stage, "checkpointing.metric_name=train:loss") == []


def test_the_students_layout_holds_on_the_gpus_it_trains_on(
    reference_dir: Path, tmp_path: Path
) -> None:
    # NeMo-RL's Megatron example (TP x PP x CP = 2 x 2 x 2 on one node of 8): with generation
    # on 4 of the node's GPUs, the student trains on the other 4, which 8 does not divide
    # (generation_split.training_gpus, the hook PPO has too).
    source = EXAMPLE.replace("distillation_math.yaml", "distillation_math_megatron.yaml")
    megatron = imported_stage(reference_dir / source, tmp_path)

    def divides(errors: list[str]) -> list[str]:
        return [e for e in errors if e.startswith("policy.megatron_cfg:") and "divide" in e]

    # As the example ships it, it plans (its placeholder model card is a warning); only the
    # non-colocated split is refused, on the layout.
    make_plan(megatron)
    [error] = divides(_errors(megatron, *NON_COLOCATED))
    assert "does not divide the 4 GPUs it trains on" in error, error
    assert "(the 4 GPUs generation leaves on the node)" in error, error


def test_a_null_validation_limit_warns_where_validation_runs(stage: Stage) -> None:
    # The example validates every 20 steps; with no limit, validation's batch count is
    # None // val_batch_size (distillation.py, validate).
    unlimited = "distillation.max_val_samples=null"
    [warning] = [w for w in _warnings(stage, unlimited) if w.startswith("distillation.max_val")]
    assert "distillation.val_period = 20" in warning and VALIDATION_BATCHES in warning
    assert not [
        w
        for w in _warnings(stage, unlimited, "distillation.val_period=0")
        if w.startswith("distillation.max_val")
    ]
