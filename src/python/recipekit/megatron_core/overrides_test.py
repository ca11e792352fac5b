"""NeMo-RL's ``policy.megatron_cfg.model_overrides`` checked against their target, and the
Megatron-Core rules run on the config with them applied.

The catalogued checks these tests break: model_overrides_are_provider_fields,
model_overrides_name_no_first_class_key, cpu_offloading_layers_fit_the_model,
cpu_offloading_excludes_pipeline_parallelism, cpu_offloading_excludes_recompute.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest
import yaml

from recipekit.errors import Issue, RecipeError
from recipekit.megatron_core.overrides import override_issues, provider_fields
from recipekit.megatron_core.rules import cite
from recipekit.nemo_rl import upstream_v35
from recipekit.nemo_rl.checks.settings import MEGATRON_CONFIG
from recipekit.nemo_rl.rule_lines import where
from recipekit.plan import make_plan
from recipekit.upstream.classes import UpstreamSource
from recipekit.upstream.values import matches
from recipes.super35.rl import rlvr
from tools import generate_override_fields as generator
from tools.generated_modules import absent_pins

CHECKOUT = generator.CHECKOUT
P = "policy.megatron_cfg."
OV = f"{P}model_overrides"
# The catalogue ids of the rules these tests break share these prefixes.
POST_INIT = "megatron-core.transformer-config.post-init"
SETUP = "nemo-rl.models.megatron.setup"


def _errors(*overrides: str) -> list[Issue]:
    try:
        make_plan(rlvr, overrides)
    except RecipeError as exc:
        return list(exc.issues)
    return []


def test_the_generated_modules_are_what_the_generator_writes(reference_dir: Path) -> None:
    absent = absent_pins(reference_dir, (generator.BRIDGE,))
    if absent:
        # Only files GitHub alone serves can be absent (fetch-reference without GitHub).
        pytest.skip(f"{len(absent)} GitHub-only pinned files absent, e.g. {absent[0]}")
    for path, text in generator.generate(reference_dir).items():
        assert (CHECKOUT / path).read_text() == text, (
            f"{path} is stale: run python3 tools/generate_override_fields.py"
        )


def test_cpu_offloading_under_recompute_is_refused_naming_the_override() -> None:
    # rlvr turns recomputation on (activation_checkpointing).
    errors = _errors(f"{OV}={{cpu_offloading: true}}")
    found = [e for e in errors if e.path == f"{OV}.cpu_offloading"]
    under_recompute = cite(f"{POST_INIT}.cpu-offloading-recompute-granularity")
    assert found and under_recompute in found[0].message, errors
    assert "activation_checkpointing=false" in (found[0].hint or "")
    # Without recomputation it plans; with pipeline parallelism it is refused; and the layers
    # offloaded must be fewer than the model's.
    off = f"{P}activation_checkpointing=false"
    assert not _errors(f"{OV}={{cpu_offloading: true}}", off)
    errors = _errors(f"{OV}={{cpu_offloading: true}}", off, f"{P}pipeline_model_parallel_size=2")
    assert any(
        e.path == f"{OV}.cpu_offloading"
        and cite(f"{POST_INIT}.cpu-offloading-pipeline-model-parallel-size") in e.message
        for e in errors
    ), errors
    errors = _errors(f"{OV}={{cpu_offloading: true, cpu_offloading_num_layers: 88}}", off)
    assert any(
        e.path == f"{OV}.cpu_offloading_num_layers"
        and cite(f"{POST_INIT}.cpu-offloading-cpu-offloading-num-layers-num-layers") in e.message
        for e in errors
    ), errors


def test_an_override_the_rules_model_is_what_they_see() -> None:
    # NeMo-RL sets no recompute_num_layers for selective recomputation: the override stands,
    # and Megatron-Core refuses it.
    selective = (f"{P}activation_checkpointing=true", f"{P}recompute_granularity=selective")
    errors = _errors(*selective, f"{OV}={{recompute_num_layers: 2}}")
    assert any(
        e.path == f"{OV}.recompute_num_layers"
        and cite(f"{POST_INIT}.selective-recomputation-takes-no-recompute-num") in e.message
        for e in errors
    ), errors
    # For full recomputation NeMo-RL sets the method and the layer count itself, after the
    # overrides: an override of them does not stand.
    assert not _errors(f"{OV}={{recompute_num_layers: 2, recompute_method: block}}")


def test_a_misspelt_override_gets_a_did_you_mean() -> None:
    errors = _errors(f"{OV}={{hiden_dropout: 0.0}}")
    [issue] = [e for e in errors if e.path == f"{OV}.hiden_dropout"]
    assert where(f"{SETUP}.merge-model-overrides.each-model-override-names-field-megatron") in (
        issue.message
    )
    assert "hidden_dropout" in (issue.hint or "")


@pytest.mark.parametrize(
    "value", ["{hidden_dropout: fast}", "{num_layers: 1.5}", "{cpu_offloading: 1}"]
)
def test_an_override_of_the_wrong_type_is_refused(value: str) -> None:
    name = value.strip("{}").split(":")[0]
    errors = _errors(f"{OV}={value}")
    assert any(e.path == f"{OV}.{name}" and "declares" in e.message for e in errors), errors


def test_a_first_class_key_is_a_conflict_by_nemo_rls_own_key_set() -> None:
    # attention_backend is a key of NeMo-RL's MegatronConfig (read from the pinned source).
    assert "attention_backend" in set(upstream_v35(MEGATRON_CONFIG).keys)
    errors = _errors(f"{OV}={{attention_backend: flash}}")
    assert any(
        e.path == f"{OV}.attention_backend"
        and where(f"{SETUP}.validate-model-override-conflicts.model-overrides-names-no-field-nemo")
        in e.message
        for e in errors
    ), errors
    # A key the rendered megatron_cfg holds conflicts too, though MegatronConfig lacks it.
    assert "moe_router_dtype" not in set(upstream_v35(MEGATRON_CONFIG).keys)
    errors = _errors(f"{OV}={{moe_router_dtype: fp64}}")
    assert any(e.path == f"{OV}.moe_router_dtype" for e in errors), errors


def test_provider_fields_plan() -> None:
    # Megatron-Core's fields and the Nemotron-H provider's own (HybridModelProvider).
    assert not _errors(f"{OV}={{hidden_dropout: 0.0, seq_length: 4096, mamba_num_groups: 8}}")


def _overrides_in(value: Any) -> list[dict[str, Any]]:
    if isinstance(value, dict):
        found = [value["model_overrides"]] if isinstance(value.get("model_overrides"), dict) else []
        return found + [o for v in value.values() for o in _overrides_in(v)]
    if isinstance(value, list):
        return [o for v in value for o in _overrides_in(v)]
    return []


def test_every_pinned_example_configs_overrides_pass(reference_dir: Path) -> None:
    found = []
    for path in sorted((reference_dir / "nemo-rl").rglob("*.yaml")):
        found += _overrides_in(yaml.safe_load(path.read_text()))
    assert found  # main's grpo_math_1B.yaml declares model_overrides: {}
    for overrides in found:
        assert not list(override_issues(overrides, OV, "")), overrides
        assert not set(overrides) & set(upstream_v35(MEGATRON_CONFIG).keys), overrides


def test_every_declared_default_is_of_its_declared_type(reference_dir: Path) -> None:
    """The types the checks use never refuse a value upstream itself declares: each field's
    literal default matches its generated type."""
    source = UpstreamSource(
        {
            generator._module(p): (reference_dir / generator.MCORE / p).read_text()
            for p in generator.MCORE_FILES
        }
    )
    core = source.config_class(
        "megatron.core.transformer.transformer_config:TransformerConfig"
    )
    assert core is not None
    fields = provider_fields()
    checked = 0
    for name, field in core.fields.items():
        try:
            default = ast.literal_eval(field.default)
        except (ValueError, SyntaxError):
            continue
        checked += 1
        assert any(matches(default, t) for t in fields[name]), (name, default, fields[name])
    assert checked > 200


def test_values_match_their_types() -> None:
    assert matches(1, "float") and not matches(True, "int") and not matches("x", "int | None")
    assert matches(["a"], "tuple[str, ...]") and not matches([1], "tuple[str, ...]")
    assert matches("full", "Literal['full', 'selective'] | None")
    assert not matches("ful", "Literal['full', 'selective'] | None")
    assert not matches(1, "Literal[True]") and matches({"a": 1}, "dict[str, Any]")
    assert matches(object(), "Any") and matches(object(), "SomeConfig")
