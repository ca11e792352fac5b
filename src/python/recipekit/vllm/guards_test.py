"""vLLM's engine config classes' checks, read from the pinned wheel (tools/generate_vllm_guards.py)
and replayed on vllm_kwargs: refused at the key, on the Super 3.5 stages that pin vLLM 0.25.1;
verdicts_test.py holds the replay to vLLM itself.

# The catalogued check these tests break, which the rule catalogue's meta-test finds by name:
# engine_config_guards_hold.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from recipekit.nemo_rl.rules.conftest import plan_errors as errors
from recipekit.rule_sites import sites
from recipekit.vllm.guards import tables
from recipes.super3.dapo import dapo_gb200
from recipes.super35.rl import rlvr
from tools import generate_vllm_guards as generator
from tools.config_programs import Pinned, catalogue_gaps
from tools.generated_modules import stale_outputs

KWARGS = "policy.generation.vllm_kwargs"


def test_the_generated_table_is_what_the_tool_writes() -> None:
    stale = stale_outputs(generator.generate, [generator.VLLM])
    assert not stale, f"{stale} stale: run python3 {generator.TOOL}"


def _line(rule: str) -> str:
    _, file, line = sites("vllm")[rule]
    return f"{file}:{line}"


@pytest.mark.parametrize(
    ("given", "key", "rule"),
    [
        ("enable_elastic_ep: true", "enable_elastic_ep", "parallel.enable-elastic-ep-enable-eplb"),
        (
            "numa_bind_nodes: [0]",
            "numa_bind_nodes",
            "parallel.numa-bind-numa-bind-nodes-numa-bind-cpus",
        ),
        (
            "collect_detailed_traces: [worker]",
            "collect_detailed_traces",
            "observability.collect-detailed-traces-otlp-traces-endpoint",
        ),
    ],
)
def test_a_check_vllm_kwargs_break_is_refused_at_the_key(given: str, key: str, rule: str) -> None:
    line = _line(f"vllm.{rule}")
    found = [e for e in errors(rlvr, f"{KWARGS}={{{given}}}") if line in e]
    assert found and found[0].startswith(f"{KWARGS}.{key}"), errors(rlvr, f"{KWARGS}={{{given}}}")
    assert "vLLM refuses it" in found[0] and "@ vLLM 0.25.1" in found[0]


def test_what_the_checks_accept_plans() -> None:
    kept = "numa_bind: true, numa_bind_nodes: [0], collect_detailed_traces: [worker], "
    kept += "otlp_traces_endpoint: 'http://127.0.0.1:4317'"
    assert not [e for e in errors(rlvr, f"{KWARGS}={{{kept}}}") if "vLLM refuses it" in e]


def test_super_v3_pins_no_vllm_whose_classes_are_read() -> None:
    found = errors(dapo_gb200, f"{KWARGS}={{enable_elastic_ep: true}}")
    assert not [e for e in found if _line("vllm.parallel.enable-elastic-ep-enable-eplb") in e]


def test_the_catalogue_names_the_generic_check_for_what_the_replay_evaluates() -> None:
    assert not catalogue_gaps(tables(), Pinned(Path(), "vllm", generator.GENERIC))
