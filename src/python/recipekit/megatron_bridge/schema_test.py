"""The sections reject what Megatron-Bridge would reject late, at the key's own path."""

from __future__ import annotations

import pytest

from recipekit.convert import to_dict
from recipekit.errors import RecipeError
from recipekit.megatron_bridge.schema import Recipe, Train, recipe_mode
from recipekit.upstream.allowed import allowed

MODULE = "megatron.bridge.recipes.nemotronh_multimodal"


def _issues(exc: pytest.ExceptionInfo[RecipeError]) -> list[str]:
    return [issue.render() for issue in exc.value.issues]


def test_a_misspelt_key_is_named_with_a_did_you_mean() -> None:
    with pytest.raises(RecipeError) as exc:
        Train(train_iter=100, global_batch_size=16, micro_batch_size=1)  # type: ignore[call-arg]
    # The closest of TrainingConfig's keys first (train_sync_interval and train_samples too).
    assert _issues(exc) == [
        "train.train_iter: unknown key (did you mean 'train_iters' or 'train_sync_interval' or "
        "'train_samples'?)",
        "train.train_iters: required key is missing",
    ]


def test_a_wrong_type_is_named_with_the_expected_one() -> None:
    with pytest.raises(RecipeError) as exc:
        Train(train_iters="100", global_batch_size=16, micro_batch_size=1)  # type: ignore[arg-type]
    assert _issues(exc) == ["train.train_iters = '100': expected an integer"]


def test_a_batch_size_below_one_is_rejected() -> None:
    with pytest.raises(RecipeError) as exc:
        Train(train_iters=100, global_batch_size=0, micro_batch_size=1)
    assert _issues(exc) == ["train.global_batch_size = 0: must be >= 1"]


def test_the_recipe_target_is_a_dotted_function_path_under_its_own_key() -> None:
    with pytest.raises(RecipeError) as exc:
        Recipe(target="nemotron_35_super_vl_sft_config")
    (text,) = _issues(exc)
    assert text.startswith("recipe._target_ = 'nemotron_35_super_vl_sft_config': a recipe target")


def test_the_recipe_renders_as_target_and_arguments() -> None:
    target = f"{MODULE}.nemotron_35_super_vl.nemotron_35_super_vl_peft_config"
    recipe = Recipe(target=target, peft_scheme="dora")
    assert to_dict(recipe) == {"_target_": target, "peft_scheme": "dora"}
    assert recipe.function == "nemotron_35_super_vl_peft_config"


def test_an_unknown_peft_scheme_lists_the_allowed_ones() -> None:
    with pytest.raises(RecipeError) as exc:
        Recipe(target=f"{MODULE}.x.nemotron_35_super_vl_peft_config", peft_scheme="ia3")
    # The set is run_recipe.py's: the job passes the scheme as its --mode.
    schemes = allowed("megatron_bridge.peft_scheme", "megatron-bridge/main")
    assert schemes.file == "scripts/training/run_recipe.py"
    assert _issues(exc) == [
        f"recipe.peft_scheme = 'ia3': not an accepted value ({schemes.cited()} accepts "
        "'lora', 'dora')"
    ]


@pytest.mark.parametrize(
    ("function", "mode"),
    [
        ("nemotron_35_super_vl_pretrain_config", "pretrain"),
        ("nemotron_35_super_vl_sft_config", "sft"),
        ("nemotron_35_super_vl_sft_long_context_128gpu_gb200_bf16_config", "sft"),
        ("nemotron_35_super_vl_peft_config", "peft"),
        ("nemotron_3_super_finetune_config", "sft"),
        ("nemotron_35_super_vl_config", None),
    ],
)
def test_the_mode_is_read_from_the_function_name_as_the_runner_reads_it(
    function: str, mode: str | None
) -> None:
    assert recipe_mode(f"{MODULE}.nemotron_35_super_vl.{function}") == mode
