"""A mixed_precision name is one of the presets Megatron-Bridge registers (read from the pinned
mixed_precision.py by tools/generate_presets.py), or a warning with the close ones."""

# The check these tests break, which the rule catalogue's meta-test finds by name:
# mixed_precision_names_a_preset.

from __future__ import annotations

from recipekit.plan import make_plan
from recipes.super35.sft import sft
from tools import generate_presets as generator
from tools.generated_modules import stale_outputs


def test_the_table_is_what_the_generator_writes() -> None:
    stale = stale_outputs(generator.generate, [generator.SOURCE])
    assert not stale, f"stale: run python3 {generator.TOOL}"


def test_registered_functions_are_the_presets() -> None:
    source = "@register\ndef bf16_mixed(): ...\ndef helper(): ...\n@other\ndef nope(): ...\n"
    assert generator.registered(source) == {"bf16_mixed": 2}


def _warned(value: str) -> list[str]:
    plan = make_plan(sft, [f"mixed_precision={value}"], check_pins=False)
    return [w.render() for w in plan.warnings if w.path == "mixed_precision"]


def test_a_misspelt_preset_warns_with_the_close_ones() -> None:
    (found,) = _warned("bf16_mixd")
    assert "raises ValueError at setup" in found
    assert "mixed_precision.py:" in found and "did you mean 'bf16_mixed'" in found
    # The registry takes hyphens for underscores; a config of its own is checked key by key.
    assert _warned("bf16-mixed") == [] and _warned("bf16_with_mxfp8_mixed") == []
    assert _warned("{fp8: hybrid, fp8_recipe: tensorwise}") == []
