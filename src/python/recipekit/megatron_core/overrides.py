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
