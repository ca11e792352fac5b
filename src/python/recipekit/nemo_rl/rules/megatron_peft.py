"""LoRA on NeMo-RL's Megatron back-end (``policy.megatron_cfg.peft``): what the Megatron setup
needs of it and what it refuses beside it.

``peft`` is a key of NeMo-RL's examples schema only (``schema_common.MegatronPeft``); NeMo-RL
reads it with ``.get("peft", {})``, so an absent section means no LoRA.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from recipekit.errors import Issue
from recipekit.markers import UNSET, Unset
from recipekit.nemo_rl.checks import CheckContext
from recipekit.nemo_rl.keys import value_of
from recipekit.nemo_rl.rules.citation import cite, line_of

if TYPE_CHECKING:
    # The examples' schema is imported by the stages that run an example, not by every plan.
    from recipekit.nemo_rl.schema_common import MegatronPeft

PEFT = "policy.megatron_cfg.peft"


def enabled_peft(ctx: CheckContext) -> MegatronPeft | Mapping[str, Any] | None:
    """The Megatron LoRA section when it is on (NeMo-RL's ``peft.enabled``): a
    ``MegatronPeft`` where the stage's schema states it, else the mapping upstream's declared
    ``PeftConfig`` checked (the Super 3.5 runner's schema leaves it to the complement)."""
    peft: MegatronPeft | Mapping[str, Any] | Unset | None = value_of(ctx.megatron, "peft")
    if peft is None or peft is UNSET:
        return None
    return peft if _field(peft, "enabled") is True else None


def _field(peft: MegatronPeft | Mapping[str, Any], key: str) -> Any:
    return peft.get(key) if isinstance(peft, Mapping) else getattr(peft, key)


def _peft_names(ctx: CheckContext, key: str, rule: str, reference_rule: str) -> Iterator[Issue]:
    """The policy's LoRA (``rule``) and the reference model's (``reference_rule``) read ``key``
    and refuse it absent or null; the policy's is built first, so it is the one cited."""
    peft = enabled_peft(ctx)
    if peft is not None and not isinstance(_field(peft, key), int):
        yield Issue(
            f"{PEFT}.{key}",
            f"NeMo-RL's Megatron setup refuses enabled PEFT without a LoRA {key} "
            f"({cite(ctx, v35=rule)}; the reference model's setup again at "
            f":{line_of(reference_rule)})",
            hint=f"set {PEFT}.{key}",
        )


def peft_names_its_lora_dim(ctx: CheckContext) -> Iterator[Issue]:
    """setup.py, setup_model_and_optimizer and setup_reference_model_state (super-v3.5): LoRA's
    rank is not defaulted."""
    yield from _peft_names(
        ctx,
        "dim",
        "nemo-rl.models.megatron.setup.setup-model-and-optimizer.megatron-peft-needs-lora-dim",
        "nemo-rl.models.megatron.setup.setup-reference-model-state.megatron-peft-needs-lora-dim-reference",
    )


def peft_names_its_lora_alpha(ctx: CheckContext) -> Iterator[Issue]:
    """setup.py, setup_model_and_optimizer and setup_reference_model_state (super-v3.5): LoRA's
    scale is not defaulted."""
    yield from _peft_names(
        ctx,
        "alpha",
        "nemo-rl.models.megatron.setup.setup-model-and-optimizer.megatron-peft-needs-lora-alpha",
        "nemo-rl.models.megatron.setup.setup-reference-model-state.megatron-peft-needs-lora-alpha-reference",
    )


SUPER35_ERROR_CHECKS = (peft_names_its_lora_dim, peft_names_its_lora_alpha)
