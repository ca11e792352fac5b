from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from recipekit.convert import from_dict, to_dict
from recipekit.errors import RecipeError
from recipekit.markers import UNSET
from recipekit.nemo_rl.schema_main import GRPOMasterConfigMain
from recipekit.nemo_rl.schema_super_v3 import GRPOMasterConfig
from recipekit.nemo_rl.yaml_loader import expand
from recipekit.sections import evolve

VLM_RECIPES = "nemo-rl/main/examples/configs/recipes/vlm"
# The public Super Omni VL GRPO and MOPD configs: the closest templates for Super 3.5 RL.
SUPER_OMNI = [
    "vlm_grpo-nemotron-super-omni-120ba12b-16n8g-megatron-tp8ep16cp2-async-gym.v1.yaml",
    "vlm_grpo-nemotron-super-omni-120ba12b-16n8g-megatron-tp8ep16cp2-async-gym-mtp.v1.yaml",
    "vlm_grpo-nemotron-super-omni-120ba12b-16n8g-megatron-tp8ep16cp2-async-gym-mtp-specdec.v1.yaml",
    "mopd-nemotron-super-omni-120ba12b-10n8g-megatron-tp8ep16cp2-async-gym.v1.yaml",
    "mopd-nemotron-super-omni-120ba12b-4n8g-smoke.v1.yaml",
]
# Keys the main schema requires that these YAMLs omit: none. (Equality is ``==``: a float field
# read from a YAML integer, ``flush_interval: 10``, is written back as ``10.0``.)
REQUIRED_BUT_OMITTED: dict[str, Any] = {}


def test_every_super_omni_config_is_listed(reference_dir: Path) -> None:
    found = sorted(p.name for p in (reference_dir / VLM_RECIPES).glob("*super-omni*.yaml"))
    assert found == sorted(SUPER_OMNI)


@pytest.mark.parametrize("name", SUPER_OMNI)
def test_super_omni_config_round_trips_key_for_key(name: str, reference_dir: Path) -> None:
    expanded = expand(reference_dir / VLM_RECIPES / name)
    config = from_dict(expanded, GRPOMasterConfigMain)
    # cluster.segment_size, which these configs leave out, is derived from a stage's layout
    # (recipekit.launch.placement); a config read alone has no layout: left unset.
    assert "segment_size" not in expanded["cluster"]
    config = evolve(config, cluster=evolve(config.cluster, segment_size=UNSET))
    assert to_dict(config) == {**expanded, **REQUIRED_BUT_OMITTED}


@pytest.mark.parametrize("name", SUPER_OMNI[:1])
def test_the_super_v3_schema_still_rejects_main_keys(name: str, reference_dir: Path) -> None:
    expanded = expand(reference_dir / VLM_RECIPES / name)
    with pytest.raises(RecipeError) as err:
        from_dict(expanded, GRPOMasterConfig)
    paths = {issue.path for issue in err.value.issues}
    assert "grpo.zero_variance_prompt_filtering" in paths
    assert "policy.megatron_cfg.freeze_vision_model" in paths


def _with(config: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    head, _, rest = path.partition(".")
    if not rest:
        return {**config, head: value}
    return {**config, head: _with(config[head], rest, value)}


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("grpo.adv_estimator", {"name": "opdd"}),
        ("policy.sequence_packing.microbatch_order", "smallest_first"),
        ("policy.generation.mcore_generation_config.refit_backend", "mpi"),
        ("policy.generation.mcore_generation_config.kv_cache_management_mode", "evict"),
        ("policy.generation.vllm_cfg.logprobs_mode", "logits"),
        ("policy.megatron_cfg.freeze_vision_model", "yes"),
        ("grpo.val_num_generations_per_prompt", 0),
        ("grpo.async_grpo.max_generation_failures", -1),
    ],
)
def test_values_main_does_not_accept_are_rejected_at_their_path(
    path: str, value: Any, reference_dir: Path
) -> None:
    expanded = expand(reference_dir / VLM_RECIPES / SUPER_OMNI[0])
    with pytest.raises(RecipeError) as err:
        from_dict(_with(expanded, path, value), GRPOMasterConfigMain)
    assert [issue.path for issue in err.value.issues][0].startswith(path)


def test_penalize_keys_of_super_v3_are_gone_on_main(reference_dir: Path) -> None:
    expanded = expand(reference_dir / VLM_RECIPES / SUPER_OMNI[0])
    bad = _with(expanded, "grpo.penalize_invalid_tool_call", False)
    with pytest.raises(RecipeError) as err:
        from_dict(bad, GRPOMasterConfigMain)
    assert err.value.issues[0].path == "grpo.penalize_invalid_tool_call"
    assert err.value.issues[0].message == "unknown key"
