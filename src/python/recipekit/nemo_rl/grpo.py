"""NeMo-RL's GRPO entry point as a framework a stage can target."""

from __future__ import annotations

from typing import Any

import attrs

from recipekit.convert import to_dict
from recipekit.errors import Issue
from recipekit.framework import Launch
from recipekit.hardware import Hardware
from recipekit.model_card import ModelCard
from recipekit.nemo_rl import NEMO_RL_VERSION
from recipekit.nemo_rl.checks import CheckContext, run_checks
from recipekit.nemo_rl.derivations import derive
from recipekit.nemo_rl.layout import Layout, compute_layout
from recipekit.nemo_rl.schema import GRPOMasterConfig
from recipekit.nemo_rl.summary import grpo_summary


@attrs.frozen
class NemoRLGrpo:
    name: str = "nemo-rl"
    version: str = NEMO_RL_VERSION
    # The guide's YAML header names examples/run_grpo_math.py, which super-v3 does not have.
    entry_point: str = "examples/run_grpo.py"
    config_type: type = GRPOMasterConfig
    launch: Launch = "ray"
    image: str = "nemo-rl"

    def derive(self, config: Any, hardware: Hardware) -> tuple[Any, list[str]]:
        return derive(config, hardware)

    def check(
        self, config: Any, hardware: Hardware, model: ModelCard
    ) -> tuple[Layout, list[Issue], list[Issue]]:
        layout = compute_layout(config, hardware)
        errors, warnings = run_checks(CheckContext(config, hardware, model, layout))
        return layout, errors, warnings

    def inputs(self, rendered: dict[str, Any]) -> dict[str, str]:
        """Paths the run reads, which every node must see (preflight checks them)."""
        policy, data = rendered["policy"], rendered.get("data", {})
        found = {"model": policy["model_name"], "tokenizer": policy["tokenizer"]["name"]}
        for split in ("train", "validation", "default"):
            entry = data.get(split)
            if isinstance(entry, dict) and isinstance(entry.get("data_path"), str):
                found[f"data.{split}"] = entry["data_path"]
        return found

    def outputs(self, rendered: dict[str, Any]) -> dict[str, str]:
        ckpt = rendered["checkpointing"]
        return {"checkpoints": ckpt["checkpoint_dir"]} if ckpt["enabled"] else {}

    def summary(self, rendered: dict[str, Any], layout: Any) -> list[tuple[str, str]]:
        return grpo_summary(rendered, layout)

    def render(self, config: Any) -> dict[str, Any]:
        out = to_dict(config)
        assert isinstance(out, dict)
        return out


NEMO_RL_GRPO = NemoRLGrpo()
