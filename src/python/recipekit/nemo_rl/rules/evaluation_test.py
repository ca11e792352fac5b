"""Evaluation's rules (``examples/run_eval.py``, super-v3.5-posttraining) on the stage
``recipekit import-yaml`` makes of NeMo-RL's own evals/eval.yaml (pass@1 on AIME with greedy
vLLM decoding): a value that breaks each is refused at its key, citing the upstream line."""

# The catalogued checks these tests break, which the rule catalogue's meta-test finds by name:
# runner_refusals.

from __future__ import annotations

from pathlib import Path

import pytest

from recipekit.errors import RecipeError
from recipekit.nemo_rl.algorithms import NEMO_RL_SUPER35_EVAL
from recipekit.nemo_rl.rule_lines import where
from recipekit.nemo_rl.rules.conftest import imported_stage
from recipekit.plan import make_plan
from recipekit.stage import Stage

EXAMPLE = "nemo-rl/main/examples/configs/evals/eval.yaml"
SAMPLED = ("generation.temperature=0.6", "eval.num_tests_per_prompt=4")


@pytest.fixture(scope="module")
def stage(reference_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Stage:
    return imported_stage(reference_dir / EXAMPLE, tmp_path_factory.mktemp("eval"))


def _error(stage: Stage, *overrides: str) -> str:
    """The one error planning with these overrides raises."""
    with pytest.raises(RecipeError) as exc:
        make_plan(stage, overrides)
    [error] = [issue.render() for issue in exc.value.issues]
    assert "@ super-v3.5" in error
    return error


def test_the_upstream_example_plans_with_evaluations_rules(stage: Stage) -> None:
    assert stage.framework is NEMO_RL_SUPER35_EVAL
    assert [w.path for w in make_plan(stage).warnings] == ["model"]  # its placeholder card
    make_plan(stage, [*SAMPLED, "eval.k_value=4", "eval.metric=cons@k"])


def test_the_metric_is_pass_or_cons_at_k(stage: Stage) -> None:
    # The schema holds it, with the metrics read from eval.py's setup.
    error = _error(stage, "eval.metric=accuracy")
    assert error.startswith(
        "eval.metric = 'accuracy': not an accepted value (nemo_rl/evals/eval.py:"
    )
    assert "accepts 'pass@k', 'cons@k'" in error


@pytest.mark.parametrize(
    ("overrides", "key"),
    [
        (("eval.num_tests_per_prompt=4",), "generation.temperature = 0.0"),
        # The replay of eval.py's setup names the first key its failing test reads.
        ((*SAMPLED, "generation.top_k=1"), "generation.temperature = 0.6"),
    ],
)
def test_several_answers_per_prompt_need_sampling(
    stage: Stage, overrides: tuple[str, ...], key: str
) -> None:
    error = _error(stage, *overrides)
    assert (
        error.startswith(key)
        and where("nemo-rl.evals.eval.setup.several-answers-per-prompt-need-positive") in error
    )
    make_plan(stage, SAMPLED)


def test_k_is_within_the_answers_per_prompt(stage: Stage) -> None:
    error = _error(
        stage, "generation.temperature=0.6", "eval.num_tests_per_prompt=2", "eval.k_value=4"
    )
    assert (
        error.startswith("eval.num_tests_per_prompt = 2: ")
        and where("nemo-rl.evals.eval.setup.num-tests-per-prompt-least-k") in error
    )


def test_evaluation_generates_with_vllm(stage: Stage) -> None:
    error = _error(stage, "generation.backend=sglang")
    assert (
        error.startswith("generation.backend = 'sglang': ")
        and where("nemo-rl.evals.eval.setup.evaluation-generates-vllm") in error
    )


def test_an_eval_config_states_its_prompts_per_step(reference_dir: Path, tmp_path: Path) -> None:
    # eval.py's setup indexes generation.num_prompts_per_step with no default (a KeyError at the
    # job's start): the schema requires it, so the config is refused when it is read.
    text = (reference_dir / EXAMPLE).read_text()
    line = next(x for x in text.splitlines() if x.strip().startswith("num_prompts_per_step:"))
    yaml_file = tmp_path / "eval.yaml"
    yaml_file.write_text(text.replace(line + "\n", ""))
    with pytest.raises(RecipeError) as exc:
        imported_stage(yaml_file, tmp_path, schema="main")
    assert "generation.num_prompts_per_step" in str(exc.value), exc.value
