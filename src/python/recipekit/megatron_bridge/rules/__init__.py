"""Megatron-Bridge's own run-time rules on the keys a stage sets, one function per upstream
check, grouped by topic (``dataset``, ``parallel``, ``checkpoint``).

Each mirrors one ``assert``/``raise``/warning of Megatron-Bridge at the commit the stages run
(``megatron-bridge/main`` in ``3rdparty/reference/manifest.toml``) and quotes its reason with
its file and line, which ``cite`` finds from the rule's catalogue id
(``generated/rule_sites.json``); ``recipekit/rule_catalogue/megatron-bridge.toml`` lists every
such rule and says which function mirrors it, or why none can.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from recipekit.rule_sites import sites

SITES = sites("megatron_bridge")

if TYPE_CHECKING:
    from recipekit.megatron_bridge.schema import MegatronBridgeConfig

COMMIT = "067f987df"
SUPER_VL_RECIPES = "megatron.bridge.recipes.nemotronh_multimodal."


# Sources other than main's commit, as a citation names them: the release wheel whose files
# main's classes extend (PEFT, LoRA, mixed precision).
RELEASES = {"megatron-bridge/0.6.2-wheel": "0.6.2"}


def cite(rule: str) -> str:
    """``(src/megatron/bridge/<file>.py:<line> @ Megatron-Bridge 067f987df)`` of a catalogued
    rule (``@ Megatron-Bridge 0.6.2`` for one of the release's files)."""
    label, file, line = SITES[rule]
    return f"({file}:{line} @ Megatron-Bridge {RELEASES.get(label, COMMIT)})"


def builds_energon_dataset(config: MegatronBridgeConfig) -> bool:
    """Whether the recipe's dataset is an ``EnergonDatasetConfig``: every Super-VL recipe's is,
    except the long-context one, which reads CoderForge through its own provider."""
    recipe = config.recipe
    return recipe.target.startswith(SUPER_VL_RECIPES) and "long_context" not in recipe.function
