"""Memory switches of the pinned frameworks the estimate does not model: each one a stage turns
on is a plan warning naming it, never silence.

The estimate (``memory/megatron.py``) models recompute (every granularity and method), the
distributed optimizer and its host offload fraction, frozen parts, MTP and fused attention.
These change what a GPU holds and are not modelled yet; where a stage switches one on, the plan
says the estimate does not cover it and which way it may move the total:

- training CUDA graphs (``cuda_graph_impl``, ``enable_cuda_graph``, ``external_cuda_graph``:
  static input and output buffers and a private memory pool per graph; Megatron-Bridge #5356 was
  an out-of-memory from them);
- activation offloading to the host (``fine_grained_activation_offloading``, ``cpu_offloading``,
  ``activation_offload_fraction``: fewer activations on the GPU, plus pinned staging buffers);
- asynchronous checkpoint saves (``async_save``: a copy of the state being written);
- the CUDA caching allocator's expandable segments (``PYTORCH_CUDA_ALLOC_CONF``): the allocator
  term assumes fixed segments, so the estimate is then high, not low.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import attrs

from recipekit.errors import Issue
from recipekit.markers import Marker


@attrs.frozen
class Switch:
    """A key whose value turns on what the estimate does not model."""

    what: str
    # Which way the unmodelled memory moves the total.
    effect: str
    on: Callable[[Any], bool]


def _true(value: Any) -> bool:
    return value is True


def _not_none(value: Any) -> bool:
    return value not in (None, "none", False)


def _positive(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value > 0


CUDA_GRAPHS = "training CUDA graphs (static buffers and a private pool per graph)"
MORE = "the GPU may hold more than estimated"
OFFLOAD = "activation offloading to the host"
LESS = "the GPU may hold less than estimated, plus pinned staging buffers"

# Megatron-Core's TransformerConfig keys (a Megatron-Bridge stage's model.*, NeMo-RL's
# policy.megatron_cfg.* or its model_overrides).
MEGATRON_CORE: Mapping[str, Switch] = {
    "cuda_graph_impl": Switch(CUDA_GRAPHS, MORE, _not_none),
    "enable_cuda_graph": Switch(CUDA_GRAPHS, MORE, _true),
    "external_cuda_graph": Switch(CUDA_GRAPHS, MORE, _true),
    "fine_grained_activation_offloading": Switch(OFFLOAD, LESS, _true),
    "cpu_offloading": Switch(OFFLOAD, LESS, _true),
    "activation_offload_fraction": Switch(OFFLOAD, LESS, _positive),
}
# A checkpoint section's keys.
CHECKPOINT: Mapping[str, Switch] = {
    "async_save": Switch(
        "asynchronous checkpoint saves (a copy of the state being written)", MORE, _true
    ),
}
ALLOC_CONF = "PYTORCH_CUDA_ALLOC_CONF"


def switched_on(
    values: Iterable[tuple[str, str, Any]], switches: Mapping[str, Switch]
) -> Iterator[Issue]:
    """A warning for each ``(key path, key, value)`` that turns a switch on."""
    for path, key, value in values:
        switch = switches.get(key)
        if switch is None or isinstance(value, Marker) or not switch.on(value):
            continue
        yield Issue(
            path,
            f"turns on {switch.what}, which the memory estimate does not model: {switch.effect}",
            value=value,
        )


def section_values(
    prefix: str, section: Any, keys: Iterable[str]
) -> Iterator[tuple[str, str, Any]]:
    """``(prefix.key, key, value)`` of each of ``keys`` a section (or a mapping) holds."""
    if section is None or isinstance(section, Marker):
        return
    for key in keys:
        value = section.get(key) if isinstance(section, dict) else getattr(section, key, None)
        if value is not None:
            yield f"{prefix}.{key}", key, value


def expandable_segments(env: Iterable[tuple[str, Mapping[str, str]]]) -> Iterator[Issue]:
    """A warning where an environment section turns on the allocator's expandable segments."""
    for path, variables in env:
        conf = variables.get(ALLOC_CONF, "")
        if isinstance(conf, str) and "expandable_segments:true" in conf.replace(" ", "").lower():
            yield Issue(
                f"{path}.{ALLOC_CONF}",
                "expandable segments: the memory estimate's caching-allocator term assumes fixed "
                "segments, so the estimate is high here (measured +9% and +18% on two runs)",
                value=conf,
            )
