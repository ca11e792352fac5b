"""Super 3.5 eval plans as the recipe describes it: its lineage row, the recipe's vLLM image, five
benchmarks; pins and overrides move what follows them; mistakes fail at their keys."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from recipekit.convert import from_dict
from recipekit.errors import RecipeError
from recipekit.interpolation import Interpolation
from recipekit.nemo_evaluator.schema import Evaluation, Export
from recipekit.plan import make_plan
from recipekit.review.explain import explain
from recipes.super35.evaluation import evaluation

# The recipe, "Artifact Lineage", the eval row: run.model is "an HF export of the RL output" (the
# Quick Start's super35-rl-mopd-phase2-hf-model:latest), no data, "Evaluation results".
SEED_ROW = {"model": "super35-rl-mopd-phase2-hf-model:latest"}
TOKENIZER = ("evaluation", "nemo_evaluator_config", "config", "params", "extra", "tokenizer")
SUPER3_EVAL = "nemotron/main/src/nemotron/recipes/super3/stage3_eval/config/default.yaml"


def _at(config: dict[str, Any], path: tuple[str, ...]) -> Any:
    for part in path:
        config = config[part]
    return config


def _followers(config: dict[str, Any]) -> tuple[Any, ...]:
    """The keys that follow the checkpoint path."""
    return (
        _at(config, TOKENIZER),
        config["execution"]["mounts"]["evaluation"],
        config["deployment"]["served_model_name"],
    )


def test_the_stage_plans_with_the_seeds_lineage_row() -> None:
    plan = make_plan(evaluation).as_json()
    assert plan["stage"] == "eval"
    assert plan["lineage"]["inputs"] == SEED_ROW
    assert plan["lineage"]["output"] is None
    assert plan["inputs"] == {"model": "/artifacts/super35-rl-mopd-phase2-hf-model/latest"}
    assert plan["framework"]["name"] == "nemo-evaluator"
    assert plan["framework"]["launch"] == "delegated"  # its launcher submits its own job


def test_vllm_serves_the_seeds_image_on_the_whole_node() -> None:
    plan = make_plan(evaluation)
    deployment = plan.framework_config["deployment"]
    assert deployment["image"] == "vllm/vllm-openai:v0.30.0"
    assert plan.layout.as_json()["serving_gpus"] == plan.stage.hardware.total_gpus == 4
    # The one warning: the W&B team is the user's to give (the recipe's env.toml "YOUR-TEAM").
    assert [w.path for w in plan.warnings] == ["export.wandb.entity"]


def test_five_benchmarks() -> None:
    tasks = make_plan(evaluation).framework_config["evaluation"]["tasks"]
    names = [task["name"] for task in tasks]
    assert names == ["ns_mmlu_pro", "ns_gpqa", "ns_aime2025", "ns_livecodebench", "ns_ifbench"]


def test_the_checkpoint_path_follows_a_pin_of_run_model() -> None:
    pinned = make_plan(evaluation, ["run.model=super35-rl-mopd-phase2-hf-model:v3"])
    path = "/artifacts/super35-rl-mopd-phase2-hf-model/v3"
    assert pinned.framework_config["deployment"]["checkpoint_path"] == path
    assert _followers(pinned.framework_config) == (
        path,
        {path: path},
        "super35-rl-mopd-phase2-hf-model:v3",
    )
    assert pinned.hash != make_plan(evaluation).hash


def test_a_set_checkpoint_path_moves_the_keys_derived_from_it() -> None:
    path = "/shared/models/NVIDIA-Nemotron-3.5-Super-VL-120B-A12B-BF16"
    config = make_plan(evaluation, [f"deployment.checkpoint_path={path}"]).framework_config
    assert _followers(config) == (
        path,
        {path: path},
        "NVIDIA-Nemotron-3.5-Super-VL-120B-A12B-BF16",
    )


def test_a_misspelt_task_is_refused_with_the_closest_name() -> None:
    with pytest.raises(RecipeError) as caught:
        make_plan(evaluation, ["evaluation.tasks=[{name: ns_aime2052}]"])
    (issue,) = caught.value.issues
    assert issue.path == "evaluation.tasks[0].name"
    assert "'ns_aime2025'" in issue.hint


def test_a_tensor_parallel_size_that_does_not_fit_the_node_is_refused() -> None:
    with pytest.raises(RecipeError) as caught:
        make_plan(evaluation, ["deployment.tensor_parallel_size=8"])
    (issue,) = caught.value.issues
    assert issue.path == "deployment.tensor_parallel_size"
    assert "4 GPUs per GB200 node is not a multiple of TP=8" in issue.message


def _as_upstream_wrote(data: Any) -> Any:
    """The file's values with its ``${...}`` taken as its own (a section refuses them in plain
    text: ``recipekit.interpolation``)."""
    if isinstance(data, dict):
        return {k: _as_upstream_wrote(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_as_upstream_wrote(v) for v in data]
    return Interpolation(data) if isinstance(data, str) and "${" in data else data


def test_the_schema_reads_the_nemotron_clis_super3_eval_sections(reference_dir: Path) -> None:
    # The key names are the launcher's: the nemotron CLI's own eval config (its evaluation and
    # export sections, interpolations left as text) builds our sections without an unknown key.
    reference = _as_upstream_wrote(yaml.safe_load((reference_dir / SUPER3_EVAL).read_text()))
    sections = from_dict(reference["evaluation"], Evaluation)
    assert [task.name for task in sections.tasks][:2] == [
        "adlr_mmlu",
        "adlr_arc_challenge_llama_25_shot",
    ]
    assert from_dict(reference["export"], Export).wandb is not None


def test_explain_traces_the_tokenizer_to_the_lineage() -> None:
    origin = explain(evaluation, ".".join(TOKENIZER))
    assert origin.kind == "derived"
    (source,) = origin.sources
    assert source.key == "deployment.checkpoint_path"
    assert source.kind == "lineage"
    assert "super35-rl-mopd-phase2-hf-model:latest" in source.detail
