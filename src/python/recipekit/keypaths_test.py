from __future__ import annotations

from typing import Any

import attrs
import pytest

from recipekit.errors import RecipeError
from recipekit.keypaths import checked_alone, get_at, parse_assignment, read_value, replace_at
from recipekit.markers import UNSET
from recipekit.sections import frozen_section, section
from recipekit.validators import at_least, instance_of
from recipes.super3.dapo import dapo_gb200

CONFIG = dapo_gb200.config


@pytest.mark.parametrize(
    ("assignment", "expected"),
    [
        ("policy.max_total_sequence_length=2048", 2048),
        ("policy.megatron_cfg.optimizer.lr=1.0e-6", 1.0e-6),
        ("grpo.val_at_start=false", False),
        ("checkpointing.checkpoint_must_save_by=null", None),
        # YAML 1.1 would read an integer (sexagesimal); a text key keeps the text.
        ("checkpointing.checkpoint_must_save_by=00:3:45:0", "00:3:45:0"),
        ("checkpointing.checkpoint_must_save_by=1:03:45:00", "1:03:45:00"),
        ("policy.generation.stop_strings=[a, b]", ("a", "b")),
        ("logger.wandb.project=my-project", "my-project"),
        ("env.math.num_workers=8", 8),
    ],
)
def test_values_are_parsed_to_the_fields_type(assignment: str, expected: object) -> None:
    path, value = parse_assignment(CONFIG, assignment)
    assert get_at(replace_at(CONFIG, path, value), path) == expected


@pytest.mark.parametrize(
    ("assignment", "message"),
    [
        (
            "policy.megatorn_cfg.enabled=true",
            "policy.megatorn_cfg: unknown key (did you mean 'megatron_cfg'",
        ),
        ("policy.max_total_sequence_length=long", "= 'long': expected an integer"),
        ("policy.precision=bf16", "not an accepted value (nemo_rl/models/automodel/setup.py:"),
        ("grpo.seed", "expected PATH=VALUE"),
        ("env.maths.num_workers=1", "env.maths: unknown key (did you mean 'math'"),
        ("checkpointing.checkpoint_must_save_by=3:45:00", "= '3:45:00': expected DD:HH:MM:SS"),
    ],
)
def test_bad_assignments_are_explained(assignment: str, message: str) -> None:
    with pytest.raises(RecipeError) as exc:
        path, value = parse_assignment(CONFIG, assignment)
        replace_at(CONFIG, path, value)
    assert message in exc.value.render()


def test_replacing_leaves_the_original_untouched() -> None:
    changed = replace_at(CONFIG, "policy.max_total_sequence_length", 4096)
    assert CONFIG.policy.max_total_sequence_length == 1024
    assert changed.policy.max_total_sequence_length == 4096
    assert changed.grpo is CONFIG.grpo


@pytest.mark.parametrize(
    ("assignment", "message"),
    [
        ("loss_fn.ratio_clip_min=.nan", "not a finite number"),
        ("loss_fn.ratio_clip_min=-.inf", "not a finite number"),
        ("policy.generation.stop_strings=[a, .nan]", "not a finite number"),
        ("grpo.max_num_steps=" + "9" * 5000, "Exceeds the limit (4300 digits)"),
        ("policy.megatron_cfg.env_vars=&a {x: *a}", "anchors and aliases"),
        # 430 bytes of these expanded to a 22 MB config before aliases were refused.
        ("policy.megatron_cfg.env_vars={a: &a [x, x], b: &b [*a, *a], c: [*b, *b]}", "aliases"),
        ("grpo.max_num_steps=[", "cannot read value: expected the node content"),
        # An exponent past a float's range: float() reads these as infinity.
        ("loss_fn.ratio_clip_min=1e400", "not a finite number"),
        ("loss_fn.ratio_clip_min=1.0e400", "not a finite number"),
        ("loss_fn.ratio_clip_min=1E+400", "not a finite number"),
        ("policy.megatron_cfg.optimizer.lr=2e308", "not a finite number"),
        ("loss_fn.ratio_clip_min=-1e400", "not a finite number"),
        # PyYAML builds a value recursively: 500 levels ended in a RecursionError.
        ("policy.megatron_cfg.env_vars=" + "[" * 500 + "]" * 500, "nested more than 32"),
        ("policy.megatron_cfg.env_vars=" + "{a: " * 500 + "1" + "}" * 500, "nested more than"),
    ],
)
def test_values_that_cannot_be_config_are_one_line(assignment: str, message: str) -> None:
    with pytest.raises(RecipeError) as caught:
        parse_assignment(CONFIG, assignment)
    [issue] = caught.value.issues
    assert message in issue.message and len(issue.render()) < 300


def test_a_megatron_bridge_float_past_its_range_is_refused() -> None:
    from recipes.super35.sft import sft

    with pytest.raises(RecipeError, match=r"optimizer\.lr = '1e400': not a finite number"):
        parse_assignment(sft.config, "optimizer.lr=1e400")


def test_values_nested_as_deep_as_allowed_are_read() -> None:
    expected: list[object] = []
    for _ in range(30):
        expected = [expected]
    assert read_value("x", "{a: " + "[" * 31 + "]" * 31 + "}") == {"a": expected}  # 32 deep


def test_a_key_below_a_plain_value_is_one_line() -> None:
    config = replace_at(CONFIG, "policy.megatron_cfg.env_vars", {"NCCL_ALGO": "Ring"})
    with pytest.raises(RecipeError, match="is not a section, so it has no key 'x'"):
        parse_assignment(config, "policy.megatron_cfg.env_vars.NCCL_ALGO.x=1")


def test_a_key_of_a_section_the_recipe_leaves_unset_opens_it() -> None:
    # Megatron-Bridge's SFT states no optimizer section (the recipe function's values): one
    # key set on the command line is the section with that key, as a recipe would write it.
    from recipes.super35.sft import sft

    assert sft.config.optimizer is UNSET
    path, value = parse_assignment(sft.config, "optimizer.lr=1e-5")
    changed = replace_at(sft.config, path, value)
    assert changed.optimizer.lr == 1e-5 and changed.optimizer.min_lr is UNSET
    with pytest.raises(RecipeError, match=r"optimizer\.lrr: unknown key \(did you mean 'lr'"):
        parse_assignment(sft.config, "optimizer.lrr=1")


def test_a_section_with_required_keys_does_not_open_from_one_key() -> None:
    config = replace_at(CONFIG, "grpo.async_grpo", UNSET)
    with pytest.raises(RecipeError, match="grpo.async_grpo is not set, so it has no key"):
        path, value = parse_assignment(config, "grpo.async_grpo.enabled=true")
        replace_at(config, path, value)


@pytest.mark.parametrize(
    ("assignment", "expected"),
    [
        # YAML 1.2 (and OmegaConf, which the frameworks load configs with) reads these as
        # numbers; PyYAML's YAML 1.1 as text without a dot.
        ("policy.megatron_cfg.optimizer.lr=1e-6", 1e-6),
        ("policy.megatron_cfg.optimizer.lr=5E-7", 5e-7),
        ("loss_fn.ratio_clip_min=2e0", 2.0),
        ("logger.wandb.name=1e-6", "1e-6"),  # a text key keeps the text
    ],
)
def test_an_exponent_without_a_dot_is_a_number_for_a_number_key(
    assignment: str, expected: object
) -> None:
    path, value = parse_assignment(CONFIG, assignment)
    assert get_at(replace_at(CONFIG, path, value), path) == expected


def _cross_checked(instance: Any, _: Any, value: Any) -> None:
    # Reads another key of the section: a value refused or not by what else is set.
    if value > instance.limit:
        raise ValueError("over the limit", _)


@section("outer.crossed")
@frozen_section(kw_only=True, repr=False, eq=False)
class _Crossed:
    size: int = attrs.field(default=1, validator=at_least(1))
    limit: int = 8
    capped: int = attrs.field(default=1, validator=_cross_checked)


@section("outer.plain")
@frozen_section(kw_only=True, repr=False, eq=False)
class _Plain:
    size: int = attrs.field(default=1, validator=at_least(1))


@section("outer")
@frozen_section(kw_only=True, repr=False, eq=False)
class _Outer:
    plain: _Plain = attrs.field(factory=_Plain)
    crossed: _Crossed = attrs.field(factory=_Crossed)
    held: _Plain = attrs.field(factory=_Plain, validator=instance_of(_Plain, what="a section"))
    mapping: dict[str, Any] = attrs.field(factory=dict)


def test_a_key_checked_on_its_value_alone() -> None:
    # The layout search sets each (key, value) once where this holds (layout_search._Pricing).
    for key in (
        "policy.megatron_cfg.tensor_model_parallel_size",
        "policy.generation.vllm_cfg.tensor_parallel_size",
        "policy.generation.colocated.resources.num_nodes",
    ):
        assert checked_alone(CONFIG, key), key
    outer = _Outer()
    assert checked_alone(outer, "plain.size")
    assert not checked_alone(outer, "crossed.size")  # capped is checked against limit
    assert not checked_alone(outer, "held.size")  # a validator on the way down
    assert not checked_alone(outer, "mapping.x")  # a mapping, not a section
    assert not checked_alone(outer, "plain.nope")  # no such key: with_values says so
    unset = replace_at(CONFIG, "grpo.async_grpo", UNSET)
    assert not checked_alone(unset, "grpo.async_grpo.enabled")  # would open a section
