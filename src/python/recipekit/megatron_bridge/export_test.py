"""The HF export stage: its command line against Megatron-Bridge's own verified export command,
its layout rules and its memory."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
import yaml

from recipekit.errors import RecipeError
from recipekit.framework import Framework
from recipekit.hardware import H100_NODE, Hardware
from recipekit.megatron_bridge.export import (
    CONVERT_SH_OPTIONS,
    MEGATRON_BRIDGE_EXPORT,
    VERIFICATION_CARD,
    VERIFIED_EXPORT,
    export_arguments,
)
from recipekit.plan import make_plan
from recipes.super35.hf_export import hf_export


def _options(argv: list[str]) -> dict[str, str | None]:
    """``--flag value`` and bare ``--flag`` options of a command line, by flag."""
    found: dict[str, str | None] = {}
    for index, word in enumerate(argv):
        if word.startswith("--"):
            following = argv[index + 1] if index + 1 < len(argv) else "--"
            found[word] = None if following.startswith("--") else following
    return found


def test_it_is_a_per_gpu_framework_in_the_nemo_image() -> None:
    framework: Framework = MEGATRON_BRIDGE_EXPORT
    assert (framework.launch, framework.image) == ("per-gpu", "nemo")
    assert framework.save_policy(make_plan(hf_export).config) is None


def test_the_command_has_the_options_of_megatron_bridges_verified_gpu_export(
    reference_dir: Path,
) -> None:
    card = yaml.safe_load((reference_dir / VERIFICATION_CARD).read_text())
    verified = shlex.split(card["items"][VERIFIED_EXPORT]["command"])
    assert verified[1] == "export"
    theirs = {k: v for k, v in _options(verified).items() if k not in CONVERT_SH_OPTIONS}

    rendered = make_plan(hf_export).framework_config
    argv = export_arguments(rendered)
    assert argv[0] == "export"
    ours = _options(argv)
    # The same options, each taking a value exactly where Megatron-Bridge's does.
    assert set(ours) == set(theirs)
    assert {k for k, v in ours.items() if v is None} == {k for k, v in theirs.items() if v is None}
    assert ours["--torch-dtype"] == theirs["--torch-dtype"] == "bfloat16"
    # A Megatron checkpoint's iteration directory, as the card reads it.
    assert Path(str(theirs["--megatron-path"])).name == "iter_0000000"
    assert ours["--megatron-path"] == (
        "/artifacts/super35-rl-mopd-phase2-model/step-30/policy/weights/iter_0000000"
    )
    assert ours["--hf-path"] == "/artifacts/super35-rl-mopd-phase2-hf-model/${oc.env:RECIPEKIT_RUN}"
    assert (ours["--tp"], ours["--pp"], ours["--ep"], ours["--etp"]) == ("1", "1", "4", "1")


def test_it_reads_the_release_and_publishes_what_eval_serves() -> None:
    plan = make_plan(hf_export)
    assert plan.stage.lineage is not None
    assert plan.stage.lineage.output == "super35-rl-mopd-phase2-hf-model"
    framework = plan.stage.framework
    assert framework.inputs(plan.config) == {
        "megatron_checkpoint": plan.framework_config["export"]["megatron_path"]
    }
    assert list(framework.outputs(plan.config)) == ["hf_model"]


def test_an_expert_split_that_does_not_divide_names_the_key() -> None:
    with pytest.raises(RecipeError) as caught:
        make_plan(hf_export, ["model.expert_model_parallel_size=3"])
    text = caught.value.render()
    assert "model.expert_model_parallel_size" in text
    assert "512 experts per MoE layer cannot be split evenly over EP=3" in text


def test_the_whole_model_on_one_h100_does_not_fit_and_says_what_shrinks_it() -> None:
    one_gpu = hf_export.with_values(
        {"model.expert_model_parallel_size": 1}, hardware=Hardware(H100_NODE, num_nodes=1)
    )
    with pytest.raises(RecipeError) as caught:
        make_plan(one_gpu)
    text = caught.value.render()
    assert "does not fit" in text and "weights (bf16)" in text
    assert "model.expert_model_parallel_size" in text


def test_the_release_export_fits_one_gb200_node_with_room() -> None:
    memory = make_plan(hf_export).memory
    assert memory is not None
    [phase] = memory.phases
    assert phase.name == "export" and 0.3 < phase.fraction < 0.5
