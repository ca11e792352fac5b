"""A stage runs in the image of its base: Super 3.5 RL, Megatron-Bridge and vLLM stages each get
theirs from the cluster profile, not the profile's NeMo-RL image."""

from __future__ import annotations

import pytest

from recipekit.errors import RecipeError
from recipekit.review.compiled import JOB, compile_files
from recipes.clusters import PROFILES
from recipes.super3.dapo import dapo_gb200
from recipes.super35.rl import rlvr
from recipes.super35.sft import sft_long_context


def test_each_stage_runs_in_its_bases_image() -> None:
    assert "--container-image=nvcr.io/your-org/nemo-rl-gb200:superv3" in compile_files(
        dapo_gb200
    )[JOB]
    rl_job = compile_files(rlvr)[JOB]
    assert "--container-image=nvcr.io/your-org/nemo-rl:super-v3.5-posttraining-f299847f1" in (
        rl_job
    )
    mb_job = compile_files(sft_long_context)[JOB]
    assert "--container-image=nvcr.io/nvidia/nemo:26.08" in mb_job


def test_the_framework_checkout_follows_the_image() -> None:
    profile = PROFILES["gb200-nvl72"]
    assert profile.for_base("nemo").framework_root == "/opt/Megatron-Bridge"
    assert profile.for_base("nemo-rl").framework_root == "/opt/nemo-rl"


def test_a_base_the_profile_has_no_image_for_is_an_error() -> None:
    with pytest.raises(RecipeError) as exc:
        PROFILES["b200"].for_base("sglang")
    text = exc.value.render()
    assert "no container for base image 'sglang'" in text
    assert "nemo, nemo-rl, nemo-rl-super35, vllm" in text
