"""Megatron-Bridge's recipe runner as a framework a stage can target.

The entry point is Megatron-Bridge's own ``scripts/training/run_recipe.py``: what its
``train.sh`` submits for a complete recipe, and what ran every item of the Super-VL verification
card (Megatron-Bridge's verified configurations). One runner serves every stage here:
it picks the training loop (pretrain or finetune) and the model's forward step (the VLM step
for these recipes) from the recipe function's name. The ``nemotron`` CLI's per-stage
``train.py`` scripts would need one entry point for pretraining and another for SFT, and
super3's call the text-only forward step.

``run_recipe.py`` takes the recipe by name and the sections as ``KEY=VALUE`` overrides, not a
config file: ``arguments`` (``run_recipe_arguments``) is that command line for a rendered
config, which the launcher must pass instead of ``--config config.yaml``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, ClassVar

import attrs

from recipekit.convert import structure_value
from recipekit.derivation import Derivation
from recipekit.framework import FrameworkBase, Launch
from recipekit.hardware import Hardware
from recipekit.lineage.checkpoint_stamp import CheckpointReads
from recipekit.lineage.steps import SavePolicy
from recipekit.megatron_bridge import MEGATRON_BRIDGE_VERSION
from recipekit.megatron_bridge.checks import ERROR_CHECKS, WARNING_CHECKS, Check, CheckContext
from recipekit.megatron_bridge.derivations import RULES
from recipekit.megatron_bridge.layout import Layout, compute_layout, layout_candidates
from recipekit.megatron_bridge.memory import estimate as estimate_memory
from recipekit.megatron_bridge.schema import MegatronBridgeConfig, Recipe
from recipekit.megatron_bridge.summary import megatron_bridge_summary
from recipekit.megatron_core.checks import (
    MEGATRON_BRIDGE_ERROR_CHECKS,
    MEGATRON_BRIDGE_WARNING_CHECKS,
)
from recipekit.memory.estimate import MemoryEstimate
from recipekit.model_card import ModelCard
from recipekit.parallelism import ParallelLayout


@attrs.frozen
class MegatronBridge(FrameworkBase):
    name: str = "megatron-bridge"
    version: str = MEGATRON_BRIDGE_VERSION
    # Relative to the Megatron-Bridge checkout (/opt/Megatron-Bridge in the NeMo container).
    entry_point: str = "scripts/training/run_recipe.py"
    config_type: type = MegatronBridgeConfig
    # NeMo-Run's Slurm executor starts one task per GPU; torch.distributed reads Slurm's env.
    launch: Launch = "per-gpu"
    image: str = "nemo"
    rules: tuple[Derivation, ...] = RULES
    error_checks: tuple[Check, ...] = ERROR_CHECKS + MEGATRON_BRIDGE_ERROR_CHECKS
    warning_checks: tuple[Check, ...] = WARNING_CHECKS + MEGATRON_BRIDGE_WARNING_CHECKS
    context_type: ClassVar[type] = CheckContext

    def layout(self, config: Any, hardware: Hardware) -> Layout:
        return compute_layout(config, hardware)

    def inputs(self, config: Any) -> dict[str, str]:
        """Paths the run reads, which every node must see (preflight checks them)."""
        found = {
            "pretrained_checkpoint": config.checkpoint.pretrained_checkpoint,
            "data": config.dataset.path,
        }
        return {role: path for role, path in found.items() if isinstance(path, str)}

    def outputs(self, config: Any) -> dict[str, str]:
        return {"checkpoints": config.checkpoint.save}

    def checkpoint_reads(self, config: Any) -> CheckpointReads:
        """Megatron-Bridge resumes ``checkpoint.load`` whole and takes only the weights of
        ``pretrained_checkpoint`` (training/checkpointing.py, load_checkpoint @ 067f987df)."""
        load, pretrained = config.checkpoint.load, config.checkpoint.pretrained_checkpoint
        return CheckpointReads(
            resumes={"checkpoint.load": load} if isinstance(load, str) else {},
            starts={"checkpoint.pretrained_checkpoint": pretrained}
            if isinstance(pretrained, str)
            else {},
        )

    def save_policy(self, config: Any) -> SavePolicy | None:
        # Megatron-Bridge saves every save_interval iterations and at the last one, and keeps
        # every checkpoint unless most_recent_k is set (these recipes do not set it).
        return SavePolicy(
            every=config.checkpoint.save_interval,
            last=config.train.train_iters,
            every_key="checkpoint.save_interval",
            last_key="train.train_iters",
        )

    def summary(self, config: Any, layout: Any) -> list[tuple[str, str]]:
        return megatron_bridge_summary(config, layout)

    def memory(
        self, config: Any, hardware: Hardware, model: ModelCard, layout: Any
    ) -> MemoryEstimate | None:
        return estimate_memory(config, hardware, model, layout)

    def layout_candidates(
        self, layout: Any, hardware: Hardware, model: ModelCard
    ) -> Iterator[tuple[Any, dict[str, Any]]]:
        return layout_candidates(layout, hardware, model.num_layers, model.num_experts)

    def microbatches(self, config: Any, parallel: ParallelLayout) -> int:
        return parallel.microbatches(config.train.global_batch_size, config.train.micro_batch_size)

    def arguments(self, rendered: dict[str, Any]) -> list[str]:
        """What follows the entry point on its command line (not ``--config FILE``)."""
        return run_recipe_arguments(rendered)


MEGATRON_BRIDGE = MegatronBridge()


def run_recipe_arguments(rendered: dict[str, Any]) -> list[str]:
    """The arguments of ``run_recipe.py`` for a rendered config: the recipe by function name,
    its mode, then one ``KEY=VALUE`` per leaf key of the other sections, in order.

    Values are written as JSON, which Hydra's override grammar reads (quoted strings, lists,
    ``null``, ``true``); an OmegaConf interpolation such as ``${oc.env:VAR}`` inside a quoted
    string is resolved by Megatron-Bridge when it applies the overrides.
    """
    # The recipe section as the typed config holds it (this hook is handed the rendered dict):
    # its run_mode says what the runner does where the recipe names no scheme.
    recipe = structure_value(rendered["recipe"], Recipe, path="recipe")
    args = ["--recipe", recipe.function, "--mode", str(recipe.run_mode)]
    for section, keys in rendered.items():
        if section == "recipe":
            continue
        if not isinstance(keys, dict):
            args.append(f"{section}={json.dumps(keys)}")
            continue
        args += [f"{section}.{key}={json.dumps(value)}" for key, value in keys.items()]
    return args
