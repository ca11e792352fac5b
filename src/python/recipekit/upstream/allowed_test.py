"""The values a pinned framework accepts for a setting it dispatches on are read from its source
(tools/generate_allowed_values.py), and a section accepts those of the pin its upstream class
names: a name a later pin registered plans there and is refused at the earlier one."""

from __future__ import annotations

import textwrap
from typing import Any

import attrs
import pytest

from recipekit.errors import RecipeError
from recipekit.markers import Unset
from recipekit.nemo_rl import SUPER35_TYPES, SUPER_V3_TYPES
from recipekit.plan import make_plan
from recipekit.sections import frozen_section, optional, section
from recipekit.upstream.allowed import TABLE, Allowed, allowed, names
from recipekit.upstream.declared import declared
from recipes.super3.dapo import dapo_gb200
from recipes.super35.rl import rlvr
from tools import generate_allowed_values as generator
from tools.generated_modules import absent_pins, reference_dir, stale_outputs


def _refusal(stage: Any, *overrides: str) -> str:
    with pytest.raises(RecipeError) as exc:
        make_plan(stage, list(overrides), check_pins=False)
    return "\n".join(i.render() for i in exc.value.issues)


def test_the_table_is_what_the_generator_writes() -> None:
    labels = {label for sites in generator.SETS.values() for label in sites}
    assert not stale_outputs(generator.generate, labels), f"stale: run python3 {generator.TOOL}"
    assert generator.OUTPUT.endswith("recipekit/upstream/" + TABLE.name)  # what recipekit reads


def test_each_kind_of_site_reads_its_values() -> None:
    source = textwrap.dedent(
        """
        import enum
        from typing import Literal, Optional
        REGISTRY = cast(dict, {"a": f, "b": g})
        NAMES = frozenset({"n", "m"})
        Selector = Literal["l1", "l2"]
        class Mode(enum.Enum):
            ONE = "one"
            TWO = "two"
        class Config:
            style: Optional[Literal["x", "y"]] = None
        def dispatch(cfg, other):
            if cfg["style"] == "p":
                pass
            elif cfg.get("style") in ("q", "r"):
                pass
            elif other == "not-me":
                pass
            match cfg.style:
                case "s":
                    pass
            assert "t" != self.style
            worker = {"w1": A, "w2": B}[cfg.get("style")]
        """
    )
    site = generator.Site
    assert generator.read(source, site("f", "keys", "REGISTRY"))[0] == ["a", "b"]
    assert generator.read(source, site("f", "enum", "Mode"))[0] == ["one", "two"]
    assert generator.read(source, site("f", "constant", "NAMES"))[0] == ["n", "m"]
    assert generator.read(source, site("f", "constant", "Selector"))[0] == ["l1", "l2"]
    assert generator.read(source, site("f", "indexed", "style"))[0] == ["w1", "w2"]
    assert generator.read(source, site("f", "literal", "Config.style"))[0] == ["x", "y"]
    found, line = generator.read(source, site("f", "compared", "style", "dispatch"))
    assert sorted(found) == ["p", "q", "r", "s", "t"]
    assert line == source.splitlines().index('    if cfg["style"] == "p":') + 1
    assert not generator.case_folded(source, site("f", "compared", "style", "dispatch"))


def test_a_comparison_that_folds_case_takes_the_value_in_any_case() -> None:
    source = textwrap.dedent(
        """
        def load(scheme):
            if scheme.lower() == "lora":
                pass
            if scheme.casefold() in ("dora",):
                pass
        """
    )
    site = generator.Site("f", "compared", "scheme", "load")
    assert generator.read(source, site)[0] == ["lora", "dora"]
    assert generator.case_folded(source, site)
    found = Allowed(("lora", "dora"), "megatron-bridge/main", "f", 3, case_folded=True)
    assert found.accepts("LoRA") and not found.accepts("ia3")
    assert not attrs.evolve(found, case_folded=False).accepts("LoRA")


def test_a_site_that_yields_nothing_stops_the_generator(monkeypatch: pytest.MonkeyPatch) -> None:
    absent = absent_pins(reference_dir(), (generator.V35,))
    if absent:
        pytest.skip(f"{len(absent)} pinned files absent here, e.g. {absent[0]}")
    moved = generator.Site("nemo_rl/data/processors.py", "keys", "PROCESSORS_MOVED")
    monkeypatch.setattr(generator, "SETS", {"nemo_rl.data_processor": {generator.V35: moved}})
    with pytest.raises(SystemExit, match="PROCESSORS_MOVED.*yields no value"):
        generator.generate()


def test_a_name_the_later_pin_registered_plans_there_and_not_at_the_earlier() -> None:
    for key, value in [
        ("data.train.processor", "kd_data_processor"),
        ("data.train.env_name", "math_multi_reward"),
    ]:
        assert value in allowed(key_set(key), SUPER35_TYPES).values
        assert value not in allowed(key_set(key), SUPER_V3_TYPES).values
        refused = _refusal(dapo_gb200, f"{key}={value}")
        assert f"{key} = {value!r}: not an accepted value" in refused
        assert "@ super-v3 accepts" in refused
    make_plan(rlvr, ["data.train.processor=kd_data_processor"], check_pins=False)


def key_set(key: str) -> str:
    return {"data.train.processor": "nemo_rl.data_processor"}.get(key, "nemo_rl.env_name")


def test_a_refusal_cites_the_pin_and_names_the_closest() -> None:
    refused = _refusal(rlvr, "grpo.adv_estimator={name: grop}")
    assert "grpo.adv_estimator.name = 'grop'" in refused
    assert "nemo_rl/algorithms/grpo.py:" in refused and "@ super-v3.5-posttraining" in refused
    assert "did you mean 'grpo'" in refused
    # gae is PPO's estimator: GRPO's builder raises on it.
    assert "'gae'" in _refusal(rlvr, "grpo.adv_estimator={name: gae}")


def test_a_megatron_core_setting_is_read_once_for_every_pin() -> None:
    for stage in (rlvr, dapo_gb200):
        refused = _refusal(stage, "policy.megatron_cfg.scheduler.lr_decay_style=cosin")
        assert "optimizer_param_scheduler.py:" in refused and "@ 0.19.2" in refused
        assert "did you mean 'cosine'" in refused


def test_a_section_two_pins_share_must_not_hide_their_difference() -> None:
    shared = (
        declared(SUPER_V3_TYPES, "nemo_rl.data:ResponseDatasetConfig"),
        declared(SUPER35_TYPES, "nemo_rl.data:ResponseDatasetConfig"),
    )
    from recipekit.validators import upstream_values

    with pytest.raises(TypeError, match="accept different values for nemo_rl.data_processor"):

        @section()
        @frozen_section(kw_only=True, repr=False, eq=False)
        class Shared:
            upstream = shared
            processor: str | Unset = optional(upstream_values("nemo_rl.data_processor"))


def test_every_set_in_the_table_is_read() -> None:
    # By a section's upstream_values(NAME) or a rule's allowed(NAME, ...): a set nothing reads
    # is a site the generator follows for nothing.
    from pathlib import Path

    package = Path(__file__).parents[1]
    text = "\n".join(
        p.read_text() for p in package.rglob("*.py") if not p.name.endswith("_test.py")
    )
    assert [name for name in sorted(names()) if f'"{name}"' not in text] == []


def test_a_set_may_join_a_librarys_values_and_the_frameworks_own() -> None:
    # vLLM's dtypes, and the fp8 NeMo-RL's worker handles itself: both sites are cited.
    refused = _refusal(dapo_gb200, "policy.generation.vllm_cfg.precision=fp16")
    assert "vllm/config/model.py:" in refused and "@ v0.25.1 and " in refused
    assert "vllm_worker.py:" in refused and "'fp8'" in refused
    fp8 = [
        "policy.generation.vllm_cfg.precision=fp8",
        "loss_fn.use_importance_sampling_correction=true",
    ]
    make_plan(dapo_gb200, fp8, check_pins=False)
