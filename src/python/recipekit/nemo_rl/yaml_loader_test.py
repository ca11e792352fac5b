from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from recipekit.errors import RecipeError
from recipekit.nemo_rl.yaml_loader import expand

VARIANTS = ["b200_3x8_noncolocated", "gb200_5x4_noncolocated", "h100_4x8_colocated"]


@pytest.mark.parametrize("variant", VARIANTS)
def test_expands_the_guides_yaml_to_the_reference(variant: str, reference_dir: Path) -> None:
    source = reference_dir / (
        f"nemo-rl/super-v3/examples/configs/recipes/llm/dapo17k_nemotron_super_120b_{variant}.yaml"
    )
    want = yaml.safe_load(
        (
            reference_dir
            / f"expanded/super-v3-dapo/dapo17k_nemotron_super_120b_{variant}.expanded.yaml"
        ).read_text()
    )
    assert expand(source) == want


def test_override_replaces_the_parent_section(reference_dir: Path) -> None:
    config = expand(reference_dir / "nemo-rl/super-v3/examples/configs/grpo_multiple_datasets.yaml")
    assert isinstance(config["data"]["train"], list)
    assert "_override_" not in config["data"]
    # interpolations inside the replaced section still resolve against the whole config
    assert config["data"]["max_input_seq_length"] == config["policy"]["max_total_sequence_length"]


def test_defaults_list_and_resolvers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a.yaml").write_text("x: 2\ny: {z: 1, w: 5}\n")
    (tmp_path / "b.yaml").write_text("y: {z: 3}\nname: b\n")
    (tmp_path / "child.yaml").write_text(
        "defaults: [a.yaml, b.yaml]\n"
        "m: ${mul:${x}, ${y.z}}\nn: ${max:${x}, 7}\no: ${add:1, 2}\np: ${div:9, 3}\n"
        "q: ${oc.env:RECIPEKIT_TEST_VAR}\n"
    )
    monkeypatch.setenv("RECIPEKIT_TEST_VAR", "from-env")
    assert expand(tmp_path / "child.yaml") == {
        "x": 2,
        "y": {"z": 3, "w": 5},
        "name": "b",
        "m": 6,
        "n": 7,
        "o": 3,
        "p": 3.0,
        "q": "from-env",
    }


def test_missing_file_and_missing_env_are_clear(tmp_path: Path) -> None:
    with pytest.raises(RecipeError, match="no such file"):
        expand(tmp_path / "nope.yaml")
    (tmp_path / "c.yaml").write_text("q: ${oc.env:RECIPEKIT_SURELY_UNSET_VAR}\n")
    with pytest.raises(RecipeError, match="RECIPEKIT_SURELY_UNSET_VAR"):
        expand(tmp_path / "c.yaml")


def test_an_interpolation_broken_by_a_misspelt_key_names_the_misspelling(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text(
        "policy: {max_total_sequnce_length: 512}\n"
        "grpo: {limit: '${policy.max_total_sequence_length}', other: '${policy.vocab}'}\n"
    )
    with pytest.raises(RecipeError) as exc:
        expand(tmp_path / "c.yaml")
    (issue,) = exc.value.issues
    assert issue.path == "grpo.limit"
    assert issue.hint == (
        "the file sets policy.max_total_sequnce_length: a misspelling of max_total_sequence_length?"
    )
    (tmp_path / "d.yaml").write_text("policy: {seed: 1}\ngrpo: {other: '${policy.vocab}'}\n")
    with pytest.raises(RecipeError) as exc:
        expand(tmp_path / "d.yaml")
    assert exc.value.issues[0].hint == ""
