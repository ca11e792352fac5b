"""The first DTensor policy worker's rules (dtensor_policy_worker.py and parallelize.py,
super-v3.5-posttraining): on the Super 3.5 RL recipe moved onto that worker, and on the stage
``recipekit import-yaml`` makes of NeMo-RL's dpo.yaml (whose DTensor section leaves _v2 unset,
so the first worker trains it), a value that breaks each rule is refused (or warned about) at its
key, citing the upstream line; the v2 worker and a Megatron policy are left alone."""

# The catalogued checks these tests break, which the rule catalogue's meta-test finds by name:
# context_parallel_without_sequence_packing, context_parallel_without_sequence_parallel,
# tensor_parallel_divides_the_heads, custom_parallel_plan_not_on_nemotron_h,
# sequence_parallel_needs_tensor_parallel, cache_clearing_costs_time,
# cpu_offload_with_separate_generation.

from __future__ import annotations

from pathlib import Path

import attrs
import pytest

from recipekit.model_card import QWEN3_1_7B, ModelCard
from recipekit.nemo_rl.algorithms import NEMO_RL_SUPER35_DPO
from recipekit.nemo_rl.rule_lines import where
from recipekit.nemo_rl.rules.conftest import Plan, RefusedAt, imported_stage
from recipekit.stage import Stage
from recipes.super35.rl import rlvr

DTENSOR_V1 = (
    "policy.megatron_cfg.enabled=false",
    "policy.dtensor_cfg.enabled=true",
    "policy.dtensor_cfg._v2=false",
)
DTENSOR_V2 = (
    "policy.megatron_cfg.enabled=false",
    "policy.dtensor_cfg.enabled=true",
    "policy.dtensor_cfg._v2=true",
)
TP_DIVIDES = "nemo-rl.dtensor-v1.parallelize-model.tp-above-1-tp-divides-model-"
DPO_YAML = "nemo-rl/main/examples/configs/dpo.yaml"


@pytest.fixture(scope="module")
def dpo(reference_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Stage:
    return imported_stage(reference_dir / DPO_YAML, tmp_path_factory.mktemp("dtensor_v1"))


def _with_model(card: ModelCard) -> Stage:
    """rlvr with another model card: one without Mamba layers, which NeMo-RL does not plan as
    Nemotron-H."""
    return attrs.evolve(rlvr, model=card)


def test_the_shipped_stages_plan_on_the_first_worker(dpo: Stage, warned: Plan) -> None:
    assert dpo.framework is NEMO_RL_SUPER35_DPO
    assert dpo.config.policy.dtensor_cfg.v2 is not True
    assert warned(dpo) == []
    assert warned(rlvr, *DTENSOR_V1) == []


def test_context_parallelism_excludes_packing(
    dpo: Stage, refused_at: RefusedAt, errors: Plan
) -> None:
    cp_packed = (
        "policy.dtensor_cfg.context_parallel_size=2",
        "policy.sequence_packing.enabled=true",
    )
    refused_at(
        rlvr,
        (*DTENSOR_V1, *cp_packed),
        # Replayed: the refusal names the key the failing test reads.
        "policy.sequence_packing.enabled = True",
        where("nemo-rl.dtensor-v1.init.context-parallelism-above-1-excludes-sequence-packing"),
    )
    # On the entry points other than GRPO too (DPO refuses packing itself besides).
    refused_at(
        dpo,
        ("cluster.gpus_per_node=2", *cp_packed),
        # Replayed: the refusal names the key the failing test reads.
        "policy.sequence_packing.enabled = True",
        where("nemo-rl.dtensor-v1.init.context-parallelism-above-1-excludes-sequence-packing"),
    )
    # The v2 worker has its own rule for it; this one is not cited there.
    assert not any(
        where("nemo-rl.dtensor-v1.init.context-parallelism-above-1-excludes-sequence-packing") in e
        for e in errors(rlvr, *DTENSOR_V2, *cp_packed)
    )


def test_context_parallelism_excludes_sequence_parallelism_over_tp(
    refused_at: RefusedAt, errors: Plan
) -> None:
    cp_sp = (
        "policy.sequence_packing.enabled=false",
        "policy.dtensor_cfg.context_parallel_size=2",
        "policy.dtensor_cfg.sequence_parallel=true",
    )
    refused_at(
        _with_model(QWEN3_1_7B),
        (*DTENSOR_V1, *cp_sp, "policy.dtensor_cfg.tensor_parallel_size=2"),
        "policy.dtensor_cfg.tensor_parallel_size = 2",
        where("nemo-rl.dtensor-v1.init.context-parallelism-above-1-excludes-sequence-parallelism"),
    )
    # At TP 1 sequence parallelism does nothing, and the worker only warns
    # (nemo-rl.dtensor-v1.init.sequence-parallelism-tp-1-does-nothing).
    at_tp1 = errors(_with_model(QWEN3_1_7B), *DTENSOR_V1, *cp_sp)
    assert not any(
        where("nemo-rl.dtensor-v1.init.context-parallelism-above-1-excludes-sequence-parallelism")
        in e
        for e in at_tp1
    ), at_tp1


def test_tensor_parallelism_divides_the_kv_heads(refused_at: RefusedAt) -> None:
    errors = refused_at(
        _with_model(QWEN3_1_7B),
        (*DTENSOR_V1, "policy.dtensor_cfg.tensor_parallel_size=16"),
        "policy.dtensor_cfg.tensor_parallel_size = 16",
        where("nemo-rl.dtensor-v1.parallelize-model.tp-above-1-tp-divides-model-key"),
    )
    assert "Qwen3-1.7B has 8 key-value heads" in errors[0]


def test_tensor_parallelism_divides_the_attention_heads(refused_at: RefusedAt) -> None:
    architecture = QWEN3_1_7B.architecture
    assert architecture is not None
    # A made-up card whose key-value heads TP divides and whose attention heads it does not.
    odd = attrs.evolve(
        QWEN3_1_7B, architecture=attrs.evolve(architecture, attention_heads=6, kv_heads=4)
    )
    refused_at(
        _with_model(odd),
        (*DTENSOR_V1, "policy.dtensor_cfg.tensor_parallel_size=4"),
        "policy.dtensor_cfg.tensor_parallel_size = 4",
        where("nemo-rl.dtensor-v1.parallelize-model.tp-above-1-tp-divides-model-attention"),
    )


def test_nemotron_h_heads_are_not_asked_of(errors: Plan) -> None:
    # rlvr's model has Mamba layers: NeMo-RL plans it apart, before the heads are looked at.
    found = errors(rlvr, *DTENSOR_V1, "policy.dtensor_cfg.tensor_parallel_size=4")
    heads = [where(f"{TP_DIVIDES}key"), where(f"{TP_DIVIDES}attention")]
    assert not any(cited in e for e in found for cited in heads), found


def test_nemotron_h_takes_no_custom_plan(refused_at: RefusedAt, errors: Plan) -> None:
    plan = "policy.dtensor_cfg.custom_parallel_plan=my_plans.qwen_plan"
    refused_at(
        rlvr,
        (*DTENSOR_V1, plan),
        "policy.dtensor_cfg.custom_parallel_plan = 'my_plans.qwen_plan'",
        where("nemo-rl.dtensor-v1.parallelize-nm5-h.nemotron-h-model-dtensor-plan-takes-no-custom"),
    )
    assert errors(_with_model(QWEN3_1_7B), *DTENSOR_V1, plan) == []


def test_sequence_parallelism_at_tp_1_is_warned_about(dpo: Stage, warned: Plan) -> None:
    warnings = warned(dpo, "policy.dtensor_cfg.sequence_parallel=true")
    assert len(warnings) == 1, warnings
    assert warnings[0].startswith("policy.dtensor_cfg.sequence_parallel = True:")
    assert where("nemo-rl.dtensor-v1.init.sequence-parallelism-tp-1-does-nothing") in warnings[0]
    over_tp = ("cluster.gpus_per_node=2", "policy.dtensor_cfg.tensor_parallel_size=2")
    assert warned(dpo, *over_tp, "policy.dtensor_cfg.sequence_parallel=true") == []


def test_clearing_the_cache_is_warned_about(dpo: Stage, warned: Plan) -> None:
    warnings = warned(dpo, "policy.dtensor_cfg.clear_cache_every_n_steps=4")
    assert len(warnings) == 1, warnings
    assert warnings[0].startswith("policy.dtensor_cfg.clear_cache_every_n_steps = 4:")
    assert where("nemo-rl.dtensor-v1.train.emptying-cuda-cache-few-micro-batches") in warnings[0]
    assert warned(dpo, "policy.dtensor_cfg.clear_cache_every_n_steps=null") == []


def test_cpu_offload_with_separate_generation_is_warned_about(dpo: Stage, warned: Plan) -> None:
    warnings = warned(rlvr, *DTENSOR_V1, "policy.dtensor_cfg.cpu_offload=true")
    assert len(warnings) == 1, warnings
    assert warnings[0].startswith("policy.dtensor_cfg.cpu_offload = True:")
    assert (
        where(
            "nemo-rl.dtensor-v1.broadcast-weights-for-collective.cpu-offload-generation-gpus-own-moves"
        )
        in warnings[0]
    )
    # The v2 worker, and an entry point that never refits a generation engine, do not warn.
    # (the v2 worker warns so too, at a line of its own: dtensor_policy_worker_v2.py)
    on_v2 = warned(rlvr, *DTENSOR_V2, "policy.dtensor_cfg.cpu_offload=true")
    assert not any(
        where(
            "nemo-rl.dtensor-v1.broadcast-weights-for-collective.cpu-offload-generation-gpus-own-moves"
        )
        in w
        for w in on_v2
    ), on_v2
    assert warned(dpo, "policy.dtensor_cfg.cpu_offload=true") == []
