"""The generated module is what tools/generate_torch_optim.py writes from the pinned wheel today."""

from __future__ import annotations

from tools import generate_torch_optim as generator
from tools.generated_modules import stale_outputs


def test_the_generated_module_is_what_the_tool_writes() -> None:
    stale = stale_outputs(generator.generate, [generator.TORCH])
    assert not stale, f"{stale} stale: run python3 {generator.TOOL}"
