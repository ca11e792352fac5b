"""The tokenizer and chat template rules: files apart from the model are named by their key."""

# The catalogued checks these tests break, which the rule catalogue's meta-test finds by
# name (recorded from the checks that produced an issue while these tests ran):
# chat_template_file_is_the_models, rollouts_use_the_training_template,
# tokenizer_is_the_checkpoints, tokenizer_is_the_models.

from __future__ import annotations

from recipekit.lineage.model_files import belongs_to_model
from recipekit.nemo_rl.rules.conftest import Plan
from recipekit.plan import make_plan
from recipes.super3.dapo import dapo_gb200
from recipes.super35.mopd import mopd_phase1
from recipes.super35.rl import rlvr

SERVED = "policy.generation.vllm_cfg.http_server_serving_chat_kwargs.chat_template"


def _warnings(stage: object, *overrides: str) -> list[str]:
    plan = make_plan(stage, overrides)  # type: ignore[arg-type]
    return [w.render() for w in plan.warnings if "tokenizer" in w.path]


def test_model_files_are_the_checkpoint_or_its_store_version() -> None:
    assert belongs_to_model("/m/a", "/m/a")
    assert belongs_to_model("/m/a/chat_template.jinja", "/m/a/")
    assert not belongs_to_model("/m/ab", "/m/a")
    assert belongs_to_model("/artifacts/x-model/v3/tok", "/artifacts/x-model/v3/weights")
    assert not belongs_to_model("/artifacts/x-model/v2/tok", "/artifacts/x-model/v3")
    assert not belongs_to_model("/artifacts/y-model/v3", "/artifacts/x-model/v3")


def test_a_tokenizer_apart_from_the_model_is_warned_about() -> None:
    [problem] = _warnings(rlvr, "policy.tokenizer.name=/shared/models/Qwen3-8B")
    assert problem.startswith("policy.tokenizer.name = '/shared/models/Qwen3-8B': is not the")
    assert "/artifacts/super35-sft-model/latest" in problem
    [problem] = _warnings(dapo_gb200, "policy.tokenizer.name=/shared/other-tokenizer")
    assert "policy.tokenizer.name" in problem


def test_rollouts_are_served_with_the_training_template(refused: Plan) -> None:
    [problem] = refused(rlvr, f"{SERVED}=/shared/templates/other.jinja")
    assert problem.startswith(f"{SERVED} = '/shared/templates/other.jinja': differs from")
    # Both moved together is one template, but not the model's: a warning only.
    plan = make_plan(
        mopd_phase1,
        [
            "policy.tokenizer.chat_template=/shared/templates/new.jinja",
            f"{SERVED}=/shared/templates/new.jinja",
        ],
    )
    [warning] = [w for w in plan.warnings if w.path == "policy.tokenizer.chat_template"]
    assert "is not a file of policy.model_name" in warning.message


def test_the_shipped_rl_stages_keep_their_models_files() -> None:
    for stage in (rlvr, mopd_phase1, dapo_gb200):
        plan = make_plan(stage)
        assert not [w for w in plan.warnings if w.path.startswith("policy.tokenizer")]


def test_evaluation_tokenizes_with_the_checkpoints_tokenizer() -> None:
    from recipes.super35.evaluation import evaluation

    key = "evaluation.nemo_evaluator_config.config.params.extra.tokenizer"
    [problem] = _warnings(evaluation, f"{key}=/shared/models/Qwen3-8B")
    assert problem.startswith(f"{key} = '/shared/models/Qwen3-8B': is not the tokenizer")
    assert _warnings(evaluation) == []  # derived from the checkpoint: consistent
