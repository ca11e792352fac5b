"""The NeMo Evaluator framework through make_plan: derived keys, each check's failing case (named
by its key), the rendered file and what the plan reads and writes."""

# The catalogued checks these tests break, which the rule catalogue's meta-test finds by
# name (recorded from the checks that produced an issue while these tests ran):
# exported_destinations_configured, env_values_without_resolvers, wandb_log_logs_is_deprecated.

from __future__ import annotations

from typing import Any

import attrs
import pytest

from recipekit.errors import Issue, RecipeError
from recipekit.hardware import GB200_NODE, H100_NODE, Hardware
from recipekit.interpolation import Interpolation
from recipekit.markers import DERIVED, UNSET
from recipekit.model_card import NEMOTRON_35_SUPER_VL_120B
from recipekit.nemo_evaluator.checks import cite
from recipekit.nemo_evaluator.framework import NEMO_EVALUATOR
from recipekit.nemo_evaluator.schema import (
    AutoExport,
    Evaluation,
    EvaluatorConfig,
    Export,
    Extra,
    LauncherConfig,
    NemoEvaluatorConfig,
    Params,
    SlurmExecution,
    Task,
    VllmDeployment,
    WandbExport,
)
from recipekit.nemo_rl.run_env import from_env
from recipekit.plan import Plan, make_plan
from recipekit.stage import Stage

CHECKPOINT = "/shared/models/NVIDIA-Nemotron-3.5-Super-VL-120B-A12B-BF16"

STAGE = Stage(
    name="eval-test",
    description="a small evaluation",
    hardware=Hardware(node=GB200_NODE, num_nodes=1),
    model=NEMOTRON_35_SUPER_VL_120B,
    framework=NEMO_EVALUATOR,
    config=LauncherConfig(
        execution=SlurmExecution(
            walltime="01:00:00",
            output_dir="/shared/evaluations/test",
            auto_export=AutoExport(destinations=("wandb",)),
        ),
        deployment=VllmDeployment(
            image="vllm/vllm-openai:v0.30.0", checkpoint_path=CHECKPOINT, tensor_parallel_size=4
        ),
        evaluation=Evaluation(
            tasks=(Task(name="ns_ifbench"),),
            nemo_evaluator_config=NemoEvaluatorConfig(
                config=EvaluatorConfig(params=Params(extra=Extra(tokenizer=DERIVED)))
            ),
        ),
        export=Export(wandb=WandbExport(entity="team", project="nemotron")),
    ),
)
TOKENIZER = "evaluation.nemo_evaluator_config.config.params.extra.tokenizer"


def _at(config: dict[str, Any], path: str) -> Any:
    for part in path.split("."):
        config = config[part]
    return config


def _errors(stage: Stage, *overrides: str) -> list[Issue]:
    with pytest.raises(RecipeError) as caught:
        make_plan(stage, overrides)
    return list(caught.value.issues)


def _warnings(plan: Plan) -> dict[str, str]:
    return {w.path: w.message for w in plan.warnings}


# --- derived keys ----------------------------------------------------------------------------


def test_derived_keys_follow_the_checkpoint_and_the_hardware() -> None:
    plan = make_plan(STAGE)
    cfg = plan.framework_config
    assert _at(cfg, TOKENIZER) == CHECKPOINT
    assert cfg["execution"]["mounts"]["evaluation"] == {CHECKPOINT: CHECKPOINT}
    assert cfg["deployment"]["served_model_name"] == "NVIDIA-Nemotron-3.5-Super-VL-120B-A12B-BF16"
    assert (cfg["execution"]["num_nodes"], cfg["execution"]["gres"]) == (1, "gpu:4")
    assert set(plan.derived) == {
        "execution.num_nodes",
        "execution.gres",
        "deployment.served_model_name",
        TOKENIZER,
        "execution.mounts.evaluation",
    }


def test_an_input_artifact_is_served_under_its_reference() -> None:
    cfg = make_plan(
        STAGE, ["deployment.checkpoint_path=/artifacts/super35-sft-model/v3/"]
    ).framework_config
    assert cfg["deployment"]["served_model_name"] == "super35-sft-model:v3"


def test_an_explicit_value_stays_put_when_its_source_moves() -> None:
    stage = STAGE.with_values({TOKENIZER: "/shared/tokenizers/super35"})
    cfg = make_plan(stage, ["deployment.checkpoint_path=/shared/models/other"]).framework_config
    assert _at(cfg, TOKENIZER) == "/shared/tokenizers/super35"
    assert cfg["deployment"]["served_model_name"] == "other"


def test_a_model_downloaded_by_handle_needs_a_served_name() -> None:
    stage = STAGE.with_values(
        {"deployment.checkpoint_path": None, "deployment.hf_model_handle": "nvidia/model"}
    )
    paths = {i.path for i in _errors(stage)}
    assert "deployment.served_model_name" in paths


# --- errors, each at its key -----------------------------------------------------------------


def test_tensor_parallel_must_divide_the_node() -> None:
    (issue,) = _errors(STAGE, "deployment.tensor_parallel_size=3")
    assert issue.path == "deployment.tensor_parallel_size"
    assert "4 GPUs per GB200 node is not a multiple of TP=3" in issue.message


def test_replicas_must_fit_the_node() -> None:
    (issue,) = _errors(STAGE, "deployment.data_parallel_size=2")
    assert issue.path == "deployment.data_parallel_size"
    assert issue.message == "TP 4 x PP 1 x DP 2 = 8 GPUs, a GB200 node has 4"
    assert issue.hint == "at most 1"


def test_pipeline_stages_must_fit_the_node() -> None:
    (issue,) = _errors(STAGE, "deployment.pipeline_parallel_size=2")
    assert issue.path == "deployment.pipeline_parallel_size"


def test_the_weights_must_fit_a_replica() -> None:
    stage = attrs.evolve(STAGE, hardware=Hardware(node=H100_NODE, num_nodes=1))
    (issue,) = _errors(stage, "deployment.tensor_parallel_size=2")
    assert issue.path == "deployment.tensor_parallel_size"
    assert "224 GiB in BF16: 112 GiB a GPU" in issue.message
    assert issue.hint == "at least 4 GPUs per replica"


def test_one_node_serves() -> None:
    stage = attrs.evolve(STAGE, hardware=Hardware(node=GB200_NODE, num_nodes=2))
    (issue,) = _errors(stage)
    assert issue.path == "execution.num_nodes"
    assert issue.message == "the launcher's vllm deployment serves from one node"


def test_execution_keys_given_by_hand_must_match_the_hardware() -> None:
    issues = _errors(STAGE, "execution.gres=gpu:8", "execution.num_nodes=2")
    assert {i.path for i in issues} == {"execution.gres", "execution.num_nodes"}


def test_at_least_one_task() -> None:
    (issue,) = _errors(STAGE, "evaluation.tasks=[]")
    assert issue.path == "evaluation.tasks"


def test_auto_export_needs_the_destinations_config() -> None:
    (issue,) = _errors(STAGE, "export={}")
    assert issue.path == "execution.auto_export.destinations"
    assert issue.message.startswith("exports to 'wandb', but export.wandb is not set: ")
    assert cite("nemo-evaluator.export.destination-configured") in issue.message


@pytest.mark.parametrize(
    ("key", "path"),
    [
        ("evaluation.env_vars", "evaluation.env_vars"),
        ("deployment.env_vars", "deployment.env_vars"),
    ],
)
def test_env_values_read_no_secret_into_the_config(key: str, path: str) -> None:
    # OmegaConf would resolve it when the launcher reads the value: the token lands in the
    # config it saves instead of staying on the submit host (env_vars.py, parse_env_var_value).
    # Written as text, the section refuses it at once (recipekit.interpolation); written with
    # from_env, the launcher's own rule does.
    with pytest.raises(RecipeError) as caught:
        STAGE.with_values({key: {"HF_TOKEN": "lit:${oc.env:HF_TOKEN}"}})
    assert [i.path for i in caught.value.issues] == [f"{path}.HF_TOKEN"]
    (issue,) = _errors(STAGE.with_values({key: {"HF_TOKEN": "lit:" + from_env("HF_TOKEN")}}))
    assert issue.path == path
    assert issue.message.startswith("HF_TOKEN: the launcher allows no Hydra resolver")
    assert cite("nemo-evaluator.env.no-resolver-in-values") in issue.message


def test_a_tasks_env_values_read_no_secret_into_the_config() -> None:
    with pytest.raises(RecipeError, match="interpolation"):
        Task(name="ns_ifbench", env_vars={"TOKEN": "host:${oc.decode:T}"})
    task = Task(name="ns_ifbench", env_vars={"TOKEN": Interpolation("host:${oc.decode:T}")})
    (issue,) = _errors(STAGE.with_values({"evaluation.tasks": (task,)}))
    assert issue.path == "evaluation.tasks[0].env_vars"
    assert issue.value == "host:${oc.decode:T}"


def test_no_model_to_serve() -> None:
    issues = _errors(STAGE, "deployment.checkpoint_path=null")
    assert "deployment.checkpoint_path" in {i.path for i in issues}


@pytest.mark.parametrize(
    ("assignment", "path"),
    [
        ("deployment.port=1023", "deployment.port"),
        ("deployment.port=65536", "deployment.port"),
        ("execution.walltime=4h", "execution.walltime"),
        ("execution.output_dir=results", "execution.output_dir"),
        ("evaluation.env_vars={HF_TOKEN: hf_abc}", "evaluation.env_vars"),
        ("execution.auto_export={destinations: [wandbb]}", "execution.auto_export.destinations"),
    ],
)
def test_a_bad_value_is_refused_at_its_key(assignment: str, path: str) -> None:
    (issue,) = _errors(STAGE, assignment)
    assert issue.path == path


# --- warnings --------------------------------------------------------------------------------


def test_warnings_name_their_keys() -> None:
    assert _warnings(make_plan(STAGE)) == {}
    plan = make_plan(
        STAGE.with_values({"export.wandb.entity": UNSET}),
        [
            "deployment.tensor_parallel_size=2",
            "deployment.port=45000",
            "deployment.hf_model_handle=nvidia/model",
        ],
    )
    assert set(_warnings(plan)) == {
        "deployment.data_parallel_size",
        "deployment.port",
        "deployment.hf_model_handle",
        "export.wandb.entity",
    }
    assert _warnings(plan)["deployment.data_parallel_size"] == (
        "vLLM uses 2 of the 4 GPUs; 2 stay idle"
    )


def test_log_logs_is_deprecated_in_the_launchers_exporters() -> None:
    plan = make_plan(STAGE.with_values({"export.wandb.log_logs": True}))
    message = _warnings(plan)["export.wandb.log_logs"]
    assert message.startswith("deprecated: the launcher's W&B export warns")
    assert cite("nemo-evaluator.export.log-logs-deprecated") in message


# --- the rendered file -----------------------------------------------------------------------


def test_the_file_is_merged_over_the_launchers_slurm_and_vllm_defaults() -> None:
    plan = make_plan(STAGE)
    cfg = plan.framework_config
    assert list(cfg) == ["defaults", "execution", "deployment", "evaluation", "export"]
    assert cfg["defaults"] == [{"execution": "slurm/default"}, {"deployment": "vllm"}, "_self_"]
    # Unset keys keep the launcher's defaults: they are not written.
    assert "hf_model_handle" not in cfg["deployment"]
    assert "account" not in cfg["execution"] and "partition" not in cfg["execution"]
    assert plan.as_json()["inputs"] == {"model": CHECKPOINT}
    assert plan.as_json()["outputs"] == {"results": "/shared/evaluations/test"}
    assert plan.as_json()["framework"]["launch"] == "delegated"


def test_the_summary_shows_layout_serving_tasks_and_results() -> None:
    plan = make_plan(STAGE)
    rows = dict(NEMO_EVALUATOR.summary(plan.config, plan.layout))
    assert rows["layout"] == "vLLM TP 4 x PP 1 -> 1 replica on 4 of 4 GPUs"
    assert rows["tasks"] == "ns_ifbench"
    assert rows["results"] == "/shared/evaluations/test; exported to wandb, 01:00:00 limit"
    assert plan.layout.as_json()["idle_gpus"] == 0
