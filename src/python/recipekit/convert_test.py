from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from recipekit.convert import from_dict, to_dict
from recipekit.errors import RecipeError
from recipekit.nemo_rl.schema_super_v3 import GRPOMasterConfig

EXPANDED = sorted(["b200_3x8_noncolocated", "gb200_5x4_noncolocated", "h100_4x8_colocated"])


def _load(reference_dir: Path, variant: str) -> Any:
    path = (
        reference_dir
        / f"expanded/super-v3-dapo/dapo17k_nemotron_super_120b_{variant}.expanded.yaml"
    )
    return yaml.safe_load(path.read_text())


@pytest.mark.parametrize("variant", EXPANDED)
def test_round_trip_keeps_every_key(variant: str, reference_dir: Path) -> None:
    data = _load(reference_dir, variant)
    out = to_dict(from_dict(data, GRPOMasterConfig))
    data["grpo"].update(penalize_invalid_tool_call=False, penalize_malformed_thinking=False)
    assert out == data


def test_unknown_nested_keys_are_errors_with_paths(reference_dir: Path) -> None:
    data = _load(reference_dir, "gb200_5x4_noncolocated")
    data["policy"]["megatron_cfg"]["tensr_model_parallel_size"] = 2
    data["policy"]["scheduler"][0]["kwargz"] = {}
    data["env"]["math"]["num_workers"] = 0
    with pytest.raises(RecipeError) as exc:
        from_dict(data, GRPOMasterConfig)
    rendered = [i.render() for i in exc.value.issues]
    assert any(
        r.startswith(
            "policy.megatron_cfg.tensr_model_parallel_size: unknown key (did you mean "
            "'tensor_model_parallel_size'"
        )
        for r in rendered
    )
    assert "policy.scheduler[0].kwargz: unknown key (did you mean 'kwargs'?)" in rendered
    assert "env.math.num_workers = 0: must be >= 1" in rendered


def test_a_null_section_is_reported(reference_dir: Path) -> None:
    data = _load(reference_dir, "gb200_5x4_noncolocated")
    data["grpo"]["reward_shaping"] = None
    with pytest.raises(RecipeError) as exc:
        from_dict(data, GRPOMasterConfig)
    assert exc.value.issues[0].path == "grpo.reward_shaping"


def test_numbers_keep_the_type_they_were_written_with() -> None:
    from recipekit.nemo_rl.schema_super_v3 import GPUMonitoring

    out = to_dict(from_dict({"collection_interval": 10, "flush_interval": 0.5}, GPUMonitoring))
    assert out == {"collection_interval": 10, "flush_interval": 0.5}
    assert repr(out["collection_interval"]) == "10"  # not 10.0
