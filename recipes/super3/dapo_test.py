"""The three Super V3 DAPO stages compile to the guide's configs, key for key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from recipekit.plan import make_plan
from recipes.super3 import dapo

EXPANDED = "expanded/super-v3-dapo/dapo17k_nemotron_super_120b_{}.expanded.yaml"
STAGES = {
    "gb200_5x4_noncolocated": dapo.dapo_gb200,
    "b200_3x8_noncolocated": dapo.dapo_b200,
    "h100_4x8_colocated": dapo.dapo_h100,
}


def _differences(got: Any, want: Any, path: str = "") -> list[str]:
    if isinstance(got, dict) and isinstance(want, dict):
        out = []
        for key in sorted(set(got) | set(want), key=str):
            sub = f"{path}.{key}" if path else str(key)
            if key not in got:
                out.append(f"missing {sub}")
            elif key not in want:
                out.append(f"extra {sub}")
            else:
                out += _differences(got[key], want[key], sub)
        return out
    if type(got) is not type(want) or got != want:
        return [f"{path}: {got!r} != {want!r}"]
    return []


@pytest.mark.parametrize("variant", sorted(STAGES))
def test_compiles_to_the_guides_config(variant: str, reference_dir: Path) -> None:
    want = yaml.safe_load((reference_dir / EXPANDED.format(variant)).read_text())
    # The only additions allowed: keys super-v3's GRPOConfig requires that the YAML omits.
    want["grpo"]["penalize_invalid_tool_call"] = False
    want["grpo"]["penalize_malformed_thinking"] = False
    got = make_plan(STAGES[variant]).framework_config
    assert _differences(got, want) == []


def test_variants_differ_from_the_base_only_where_the_guide_does() -> None:
    gb200 = make_plan(dapo.dapo_gb200).framework_config
    b200 = make_plan(dapo.dapo_b200).framework_config
    assert _differences(b200, gb200) == [
        "cluster.gpus_per_node: 8 != 4",
        "cluster.num_nodes: 3 != 5",
        "policy.generation.colocated.resources.gpus_per_node: 8 != 4",
        "policy.generation.vllm_cfg.tensor_parallel_size: 8 != 4",
    ]


def test_each_stage_plans_with_the_known_traps_as_warnings() -> None:
    paths = {w.path for w in make_plan(dapo.dapo_b200).warnings}
    assert "grpo.use_leave_one_out_baseline" in paths
    assert "policy.megatron_cfg.converter_type" in paths
    assert "policy.megatron_cfg" in paths  # dense-model router settings
    assert "logger.wandb.project" in paths  # GB200 names on a B200 run
    h100 = {w.path for w in make_plan(dapo.dapo_h100).warnings}
    assert "policy.megatron_cfg" not in h100  # the H100 recipe sets MoE values
    assert "logger.wandb.project" not in h100


def test_layouts_are_the_guides() -> None:
    gb200 = make_plan(dapo.dapo_gb200).layout.as_json()
    assert (gb200["generation_gpus"], gb200["training_gpus"], gb200["data_parallel"]) == (4, 16, 1)
    b200 = make_plan(dapo.dapo_b200).layout.as_json()
    assert (b200["generation_nodes"], b200["training_nodes"], b200["training_gpus"]) == (1, 2, 16)
    h100 = make_plan(dapo.dapo_h100).layout.as_json()
    assert h100["colocated"] and h100["training_gpus"] == 32 and h100["vllm_instances"] == 4
