"""Full recompute as Megatron-Core runs it (megatron/core/recompute.py:157-181 @ 0.19.2): uniform
checkpoints chunks of recompute_num_layers layers, block checkpoints only the first
recompute_num_layers layers of a stage and keeps every activation of the rest."""

from __future__ import annotations

import pytest

from recipekit.errors import RecipeError
from recipekit.memory.megatron import (
    MegatronSetup,
    checkpoint_units,
    layer_activations,
    recompute_chunks,
    training_terms,
)
from recipekit.model_card import Architecture
from recipekit.plan import make_plan
from recipes.super35.pretrain import pretrain

# Eight GPT layers (attention then MLP), a small vocabulary: the logits, which the layers'
# backward working set reuses, stay smaller than one rebuilt layer.
GPT = Architecture(
    name="gpt", pattern="*-" * 8, hidden=1024, vocab=256, attention_heads=16, kv_heads=16,
    head_dim=64, ffn=4096,
)


def _terms(**settings: object) -> dict[str, float]:
    setup = MegatronSetup(tokens=4096, recompute="full", **settings)  # type: ignore[arg-type]
    return {t.name: t.bytes for t in training_terms(GPT, setup) if t is not None}


def test_uniform_joins_layers_and_block_checkpoints_only_the_first() -> None:
    units = ["*-", "*-", "*-", "*-", "*-"]
    assert recompute_chunks(units, "uniform", 2) == (["*-*-", "*-*-", "*-"], [])
    assert recompute_chunks(units, "block", 2) == (["*-", "*-"], ["*-", "*-", "*-"])
    assert recompute_chunks(units, "block", 9) == (units, [])


def test_block_keeps_the_rest_of_the_stage_whole() -> None:
    units = checkpoint_units(GPT, GPT.pattern)
    setup = MegatronSetup(tokens=4096)
    whole = sum(layer_activations(GPT, setup, k, 4096, 1) for k in "*-")
    one_input = 2 * 4096 * GPT.hidden  # a checkpoint keeps its bf16 input
    uniform = _terms(recompute_method="uniform", recompute_num_layers=1)["activations"]
    block = _terms(recompute_method="block", recompute_num_layers=2)["activations"]
    assert len(units) == 8
    # 2 checkpointed inputs and 6 layers kept whole, against 8 checkpointed inputs.
    assert block - uniform == pytest.approx(6 * whole - 6 * one_input)


def test_uniform_chunks_store_less_and_rebuild_more() -> None:
    one = _terms(recompute_method="uniform", recompute_num_layers=1)
    four = _terms(recompute_method="uniform", recompute_num_layers=4)
    assert four["activations"] < one["activations"]
    assert four["recomputed layer (backward)"] > one["recomputed layer (backward)"]


def test_pretrain_under_block_recompute_of_four_layers_does_not_fit() -> None:
    # Super 3.5's pretrain recomputes every layer (uniform, 1): block over 4 layers keeps the
    # other ~46 layers' activations, which its 80 GiB cannot hold.
    shipped = make_plan(pretrain).memory
    assert shipped is not None
    activations = {t["name"]: t["gib"] for t in shipped.as_json()["phases"][0]["terms"]}
    with pytest.raises(RecipeError) as exc:
        make_plan(pretrain, ("model.recompute_method=block", "model.recompute_num_layers=4"))
    [issue] = [i for i in exc.value.issues if i.path.startswith("memory")]
    assert "does not fit" in issue.message and "activations" in issue.message
    assert "model.recompute_method" in issue.hint
    found = float(issue.message.split("activations ")[1].split(" GiB")[0])
    assert found > 5 * activations["activations"]


def test_block_rebuilds_a_checkpoint_only_after_the_whole_layers_are_gone() -> None:
    # The backward pass runs the whole layers first, freeing each, then rebuilds the
    # checkpoints: a rebuilt layer never sits beside the whole layers' activations.
    setup = MegatronSetup(tokens=4096)
    attention = layer_activations(GPT, setup, "*", 4096, 1)
    mlp = layer_activations(GPT, setup, "-", 4096, 1)
    uniform = _terms(recompute_method="uniform", recompute_num_layers=1)
    # Six whole layers hold more than a rebuilt one: nothing beyond the stored activations.
    assert "recomputed layer (backward)" not in _terms(
        recompute_method="block", recompute_num_layers=2
    )
    # One whole layer (attention + MLP) is gone when the last checkpoint (attention + 2 x MLP
    # at its peak) is rebuilt: an MLP's worth beyond what is stored.
    # (Each less the logits, freed before the layers' backward begins: fp32 and bf16, 6 bytes.)
    logits = 4096 * GPT.vocab * 6
    seven = _terms(recompute_method="block", recompute_num_layers=7)
    assert uniform["recomputed layer (backward)"] == pytest.approx(attention + 2 * mlp - logits)
    assert seven["recomputed layer (backward)"] == pytest.approx(mlp - logits)
