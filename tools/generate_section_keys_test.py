"""The generated ``section_keys`` modules are what the generator writes from today's sections
and declared tables, and every section that upstream completes derives from its own."""

from __future__ import annotations

import attrs
import pytest

from recipekit.sections import keys_base
from tools import generate_section_keys as generator
from tools.generated_modules import CHECKOUT


@pytest.mark.parametrize("package", sorted(generator.PACKAGES))
def test_the_module_is_what_the_generator_writes(package: str) -> None:
    path = CHECKOUT / generator.PACKAGES[package]
    assert path.read_text() == generator.module_text(
        package
    ), f"{generator.PACKAGES[package]} is stale: run python3 {generator.TOOL}"


@pytest.mark.parametrize("package", sorted(generator.PACKAGES))
def test_every_completed_section_derives_from_its_keys(package: str) -> None:
    # Without the base, mypy would not know the keys completion adds, and a recipe that sets
    # one would be refused by the type check while plan accepts it.
    missing = [
        f"{cls.__module__}.{cls.__name__}"
        for cls in generator.sections_of(package)
        if generator.completed_fields(cls)
        and keys_base(cls.__name__ + generator.SUFFIX) not in cls.__bases__
    ]
    assert missing == []


def test_a_key_a_base_section_has_is_left_to_it() -> None:
    from recipekit.nemo_rl.schema_main import GRPOConfigMain
    from recipekit.nemo_rl.schema_super_v3 import GRPOConfig

    base = {name for name, _, _ in generator.completed_fields(GRPOConfig)}
    derived = {name for name, _, _ in generator.completed_fields(GRPOConfigMain)}
    assert "use_dynamic_sampling" in base and "use_dynamic_sampling" not in derived
    assert "val_start_at" not in base | derived  # stated by hand with its check
    assert derived and derived.isdisjoint(attrs.fields_dict(GRPOConfig))


def test_at_run_time_each_base_is_empty_and_one_per_name() -> None:
    import importlib

    module = importlib.import_module("recipekit.nemo_rl.generated.section_keys")
    base = getattr(module, "GRPOConfigKeys")  # noqa: B009 - what a run-time import reads
    assert base is keys_base("GRPOConfigKeys")
    assert vars(base)["__slots__"] == () and not attrs.has(base)
