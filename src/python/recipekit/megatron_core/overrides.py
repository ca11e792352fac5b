"""Model overrides: keys a user sets on the Megatron-Bridge model provider directly.

NeMo-RL's ``policy.megatron_cfg.model_overrides`` is merged into the model provider with
``dataclasses.replace`` before NeMo-RL applies its own keys (nemo_rl/models/megatron/setup.py,
``setup_model_config`` and ``_merge_model_overrides`` @ super-v3.5-posttraining): each key must
be an init field of the provider, a dict value is merged into a field that holds a mapping or a
config object, anything else replaces the field's value. The provider extends Megatron-Core's
``TransformerConfig``, so its fields are Megatron-Core's (``generated/transformer_config_0_19_2``)
and those the pinned Megatron-Bridge providers declare
(``recipekit.megatron_bridge.generated.model_provider_fields``): both tables are generated from
the pinned sources by ``tools/generate_override_fields.py`` and imported only when a stage sets
an override.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from functools import cache
from typing import Any

from recipekit.errors import Issue, did_you_mean
from recipekit.model_card import ModelCard
from recipekit.upstream.values import matches


@cache
def provider_fields() -> dict[str, tuple[str, ...]]:
    """Each field of the model provider, with its declared types (Megatron-Core's, then the
    providers' re-declarations): a value of any of them passes."""
    from recipekit.megatron_bridge.generated import model_provider_fields
    from recipekit.megatron_core.generated import transformer_config_0_19_2 as core

    out: dict[str, tuple[str, ...]] = {name: (text,) for name, text in core.FIELDS.items()}
    for name, text in model_provider_fields.FIELDS.items():
        out[name] = (*out.get(name, ()), text)
    return out


def wrong_type(name: str, value: Any) -> str | None:
    """The declared types ``value`` is none of, as text; None when it is one (or ``name`` is no
    field)."""
    types = provider_fields().get(name)
    if types is None or any(matches(value, t) for t in types):
        return None
    return " or ".join(dict.fromkeys(types))


def override_issues(overrides: Mapping[str, Any], path: str, cite: str) -> Iterator[Issue]:
    """Each override at ``path`` that is no field of the model provider, or whose value is of
    none of the field's declared types; ``cite`` is where the framework applies them."""
    fields = provider_fields()
    for name, value in overrides.items():
        if name not in fields:
            yield Issue(
                f"{path}.{name}",
                "names no field of the Megatron-Bridge model provider (Megatron-Core's "
                "TransformerConfig and the providers' own fields): the framework raises "
                f"AttributeError when it merges the overrides ({cite})",
                value=value,
                hint=did_you_mean(name, fields, what="provider fields"),
            )
        elif (declared := wrong_type(name, value)) is not None:
            yield Issue(
                f"{path}.{name}",
                f"the model provider declares {name} {declared}: the framework sets the value "
                f"as given ({cite}), and the model fails on it later",
                value=value,
            )


def overridden_options(
    overrides: Mapping[str, Any], options: frozenset[str], set_later: frozenset[str]
) -> dict[str, Any]:
    """The overrides that stand in the model config Megatron-Core checks: those naming one of
    ``options`` (the fields the rules model) that the framework does not set afterwards
    (``set_later``), with a value of the declared type (a list as a tuple)."""
    fields = provider_fields()
    return {
        name: tuple(value) if isinstance(value, list) else value
        for name, value in overrides.items()
        if name in options
        and name in fields
        and name not in set_later
        and wrong_type(name, value) is None
    }


# Each provider field the checkpoint's weights fix, and the model card's attribute that records
# it (dotted through the card's MoE and Mamba parts).
CHECKPOINT_SIZES: dict[str, str] = {
    "num_layers": "num_layers",
    "hidden_size": "hidden",
    "vocab_size": "vocab",
    "ffn_hidden_size": "ffn",
    "num_attention_heads": "attention_heads",
    "num_query_groups": "kv_heads",
    "kv_channels": "head_dim",
    "num_moe_experts": "moe.num_experts",
    "moe_ffn_hidden_size": "moe.expert_ffn",
    "moe_shared_expert_intermediate_size": "moe.shared_ffn",
    "moe_latent_size": "moe.latent",
    "mamba_num_heads": "mamba.num_heads",
    "mamba_head_dim": "mamba.head_dim",
    "mamba_state_dim": "mamba.state_size",
    "mamba_num_groups": "mamba.groups",
}


def checkpoint_shape(model: ModelCard) -> dict[str, int]:
    """The provider fields that the weights of ``model``'s checkpoint fix, with the checkpoint's
    values: the sizes Megatron-Core builds each parameter from (layers, widths, heads, experts,
    Mamba's state and heads, the vocabulary). Only those the model card records: a size it
    leaves at 0 or a part it has not (a dense model's experts) is nothing to compare."""
    shape: dict[str, int] = {}
    for name, attribute in CHECKPOINT_SIZES.items():
        value: Any = model.architecture
        for step in attribute.split("."):
            value = getattr(value, step, None)
        if value:
            shape[name] = int(value)
    return shape


def shape_issues(
    overrides: Mapping[str, Any], path: str, model: ModelCard, loads: str
) -> Iterator[Issue]:
    """Each override of a size the checkpoint's weights fix (``checkpoint_shape``) to another
    value. The framework builds the model from the overridden provider and then loads the
    checkpoint into it by parameter name (``loads`` says from where): another width or head
    count fails to load, fewer layers or experts load a part of the weights and train a
    smaller model than the checkpoint's, with nothing said."""
    shape = checkpoint_shape(model)
    for name, value in overrides.items():
        fixed = shape.get(name)
        if fixed is None or isinstance(value, bool) or not isinstance(value, int):
            continue
        if value != fixed:
            yield Issue(
                f"{path}.{name}",
                f"{model.name}'s weights, which {loads}, have {name} = {fixed}: a model built "
                f"with {value} is not the checkpoint's (a shape mismatch when the weights load, "
                "or a part of them loaded and the rest of the model left out)",
                value=value,
                hint="drop it: another architecture is another model, with its own checkpoint",
            )
