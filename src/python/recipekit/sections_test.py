from __future__ import annotations

from typing import Any

import attr._make
import attrs
import pytest

from recipekit.errors import RecipeError
from recipekit.markers import UNSET, Unset
from recipekit.nemo_rl.schema_super_v3 import (
    Cluster,
    DTensor,
    LoRA,
    MathEnvironment,
    Megatron,
    SchedulerMilestones,
    VllmConfig,
)
from recipekit.sections import frozen_section, optional, required, section


def _only_issue(exc: pytest.ExceptionInfo[RecipeError]) -> str:
    assert len(exc.value.issues) == 1
    return exc.value.issues[0].render()


def test_unknown_keyword_gets_did_you_mean_with_the_framework_path() -> None:
    with pytest.raises(RecipeError) as exc:
        Cluster(gpus_per_nod=4)  # type: ignore[call-arg]
    assert _only_issue(exc) == ("cluster.gpus_per_nod: unknown key (did you mean 'gpus_per_node'?)")


def test_bool_is_not_an_integer() -> None:
    with pytest.raises(RecipeError) as exc:
        Cluster(gpus_per_node=True)
    assert "cluster.gpus_per_node = True: expected an integer" in _only_issue(exc)


def test_enumeration_lists_the_allowed_values() -> None:
    with pytest.raises(RecipeError) as exc:
        MathEnvironment(num_workers=1, math_verify_impl="sympy")
    text = _only_issue(exc)
    assert "env.<name>.math_verify_impl = 'sympy': not an accepted value" in text
    assert "'hf_math_verify', 'dapo_math_verify'" in text


def test_literal_type_lists_its_values() -> None:
    with pytest.raises(RecipeError) as exc:
        LoRA(enabled=True, dropout_position="middle")  # type: ignore[arg-type]
    assert "expected one of 'pre', 'post'" in _only_issue(exc)


def test_range_is_checked_where_the_field_is_declared() -> None:
    with pytest.raises(RecipeError) as exc:
        Cluster(num_nodes=0)
    assert _only_issue(exc) == "cluster.num_nodes = 0: must be >= 1"


def test_missing_required_key_is_named() -> None:
    with pytest.raises(RecipeError) as exc:
        MathEnvironment()
    assert _only_issue(exc) == "env.<name>.num_workers: required key is missing"


def test_all_problems_of_a_section_are_reported_together() -> None:
    with pytest.raises(RecipeError) as exc:
        VllmConfig(tensor_parallel_size="4", kv_cache_dtype="fp16", bogus=1)  # type: ignore
    paths = {i.path for i in exc.value.issues}
    assert "policy.generation.vllm_cfg.bogus" in paths
    assert "policy.generation.vllm_cfg.tensor_parallel_size" in paths
    assert "policy.generation.vllm_cfg.kv_cache_dtype" in paths
    assert "policy.generation.vllm_cfg.async_engine" in paths  # required, missing


def test_sections_are_frozen_and_lists_become_tuples() -> None:
    m = SchedulerMilestones(milestones=[50, 100])  # type: ignore[arg-type]
    assert m.milestones == (50, 100)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        m.milestones = (1,)  # type: ignore[misc]


def test_evolve_rechecks_the_new_value() -> None:
    d = DTensor(enabled=False)
    with pytest.raises(RecipeError):
        attrs.evolve(d, tensor_parallel_size=0)


def test_alias_field_keeps_the_framework_key_in_errors() -> None:
    with pytest.raises(RecipeError) as exc:
        DTensor(enabled=False, v2="yes")  # type: ignore[arg-type]
    assert _only_issue(exc).startswith("policy.dtensor_cfg._v2 = 'yes'")


def test_megatron_requires_its_layout_keys() -> None:
    with pytest.raises(RecipeError) as exc:
        Megatron(enabled=True)
    paths = {i.path for i in exc.value.issues}
    assert "policy.megatron_cfg.tensor_model_parallel_size" in paths


def test_a_sections_repr_eq_and_hash_behave_as_attrs_would() -> None:
    @section("demo")
    @frozen_section(kw_only=True, repr=False, eq=False)
    class Lean:
        size: int = required()
        name: str | None | Unset = optional()

    @attrs.frozen(kw_only=True)
    class Compiled:
        size: int
        name: str | None | Unset = attrs.field(default=UNSET)

    lean, twin = Lean(size=2, name="a"), Lean(size=2, name="a")
    assert repr(lean) == repr(Compiled(size=2, name="a")).replace("Compiled", "Lean")
    assert lean == twin and hash(lean) == hash(twin) and lean != Lean(size=3, name="a")
    assert lean != Compiled(size=2, name="a")  # type: ignore[comparison-overlap]
    assert len({lean, twin}) == 1


def test_a_sections_init_behaves_as_attrs_would_and_attrs_compiles_none() -> None:
    seen: list[tuple[str, int]] = []

    def note(instance: Any, attribute: Any, value: int) -> None:
        # attrs runs each validator once every field is set, in field order.
        assert instance.first is not None and instance.second is not None
        seen.append((attribute.name, value))

    @section("demo")
    @frozen_section(kw_only=True, repr=False, eq=False)
    class Lean:
        first: int = attrs.field(validator=note)
        second: int = attrs.field(default=7, validator=note)
        many: dict[str, int] = attrs.field(factory=dict)
        derived_from_self: int = attrs.field(
            default=attrs.Factory(lambda self: self.first * 10, takes_self=True)
        )

    assert "__attrs_init__" not in Lean.__dict__
    lean = Lean(first=1)
    assert (lean.first, lean.second, lean.many, lean.derived_from_self) == (1, 7, {}, 10)
    assert seen == [("first", 1), ("second", 7)]
    assert Lean(first=1).many is not lean.many  # a fresh dict each time
    assert attrs.evolve(lean, second=8).second == 8 and seen[-1] == ("second", 8)
    with attrs.validators.disabled():
        Lean(first=2)
    assert seen[-1] == ("second", 8)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        lean.first = 2  # type: ignore[misc]
    # attrs' class builder still has the step frozen_section skips: an attrs upgrade that
    # renames it fails here instead of compiling an __attrs_init__ per section again.
    assert callable(attr._make._ClassBuilder.add_attrs_init)


@pytest.mark.parametrize(
    "field",
    [attrs.field(converter=int), attrs.field(alias="other")],
    ids=["converter", "alias"],
)
def test_a_section_refuses_what_its_init_would_not_do(field: Any) -> None:
    refused = r"Odd: a section's __init__ runs no converter.*; size would need"
    with pytest.raises(TypeError, match=refused):

        @section("demo")
        @frozen_section(kw_only=True, repr=False, eq=False)
        class Odd:
            size: int = field
