"""The vLLM worker's start-up rules: the metrics logger, speculation off, compilation keys."""

# The catalogued checks these tests break, which the rule catalogue's meta-test finds by
# name (recorded from the checks that produced an issue while these tests ran):
# compilation_use_inductor_is_deprecated, disabled_speculation_wants_prefix_caching,
# vllm_metrics_logger_needs_an_interval.

# The catalogued checks these tests break (by the upstream line each cites), which the
# rule catalogue's meta-test finds by name:
# vllm_metrics_logger_interval_is_positive.

from __future__ import annotations

from recipekit.nemo_rl.rule_lines import where
from recipekit.nemo_rl.rules.conftest import Plan
from recipes.super3.dapo import dapo_h100
from recipes.super35.rl import rlvr

VLLM = "policy.generation.vllm_cfg"
KWARGS = "policy.generation.vllm_kwargs"


def test_the_metrics_logger_needs_its_interval(refused: Plan) -> None:
    found = [
        e
        for e in refused(rlvr, f"{VLLM}.enable_vllm_metrics_logger=true")
        if e.startswith(f"{VLLM}.vllm_metrics_logger_interval")
    ]
    assert (
        found
        and where(
            "nemo-rl.models.generation.vllm.vllm-worker-async.start-vllm-metrics-logger.vllm-metrics-logger-needs-polling-interval"
        )
        in found[0]
    )


def test_super_v3_dapo_ships_the_logger_with_its_interval(errors: Plan) -> None:
    assert errors(dapo_h100) == []


def test_the_metrics_logger_with_an_interval_plans(errors: Plan) -> None:
    assert not errors(
        rlvr, f"{VLLM}.enable_vllm_metrics_logger=true", f"{VLLM}.vllm_metrics_logger_interval=0.5"
    )


def test_speculation_off_without_prefix_caching_warns(warned: Plan) -> None:
    found = [
        w
        for w in warned(rlvr, f"{KWARGS}.speculative_config={{num_speculative_tokens: 0}}")
        if w.startswith(f"{VLLM}.enable_prefix_caching")
    ]
    assert (
        found
        and where(
            "nemo-rl.models.generation.vllm.vllm-worker.load-model.speculative-decoding-switched-off-runs-better"
        )
        in found[0]
    )


def test_use_inductor_is_deprecated(warned: Plan) -> None:
    found = [
        w
        for w in warned(rlvr, f"{KWARGS}.compilation_config={{use_inductor: false}}")
        if w.startswith(f"{KWARGS}.compilation_config.use_inductor")
    ]
    assert (
        found
        and where(
            "nemo-rl.models.generation.vllm.vllm-worker-async.create-engine.compilation-config-use-inductor-deprecated-favour"
        )
        in found[0]
    )


def test_the_shipped_stage_has_none_of_these_warnings(warned: Plan) -> None:
    assert not [
        w
        for w in warned(rlvr)
        if w.startswith((f"{VLLM}.enable_prefix_caching", f"{KWARGS}.compilation_config"))
    ]


def test_the_metrics_logger_interval_is_positive(refused: Plan) -> None:
    # dapo-h100 ships the logger on (super-v3's async engine is off there, so turn it on).
    found = [
        e
        for e in refused(
            dapo_h100,
            f"{VLLM}.async_engine=true",
            f"{VLLM}.vllm_metrics_logger_interval=0.0",
        )
        if e.startswith(f"{VLLM}.vllm_metrics_logger_interval")
    ]
    assert (
        found
        and where(
            "nemo-rl.v3.models.generation.vllm.vllm-worker-async.start-vllm-metrics-logger.metrics-logger-interval-positive"
        )
        in found[0]
    )
