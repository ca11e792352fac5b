"""Memory switches of the pinned frameworks: what the estimate reads of them, and a plan warning
for each one a stage turns on that the estimate does not model, never silence.

The estimate (``memory/megatron.py``) models recompute (every granularity and method), the
distributed optimizer and its host offload fraction, frozen parts, MTP, fused attention and the
CUDA caching allocator's expandable segments (``PYTORCH_CUDA_ALLOC_CONF``; read here from the
environment the training workers see, ``allocator_conf``). These change what a GPU holds and
are not modelled yet; where a stage switches one on, the plan says the estimate does not cover
it and which way it may move the total:

- training CUDA graphs (``cuda_graph_impl``, ``enable_cuda_graph``, ``external_cuda_graph``:
  static input and output buffers and a private memory pool per graph; Megatron-Bridge #5356 was
  an out-of-memory from them);
- activation offloading to the host (``fine_grained_activation_offloading``, ``cpu_offloading``,
  ``activation_offload_fraction``: fewer activations on the GPU, plus pinned staging buffers).

Asynchronous checkpoint saves (a checkpoint section's ``async_save``) are no switch: Megatron-Core
stages the tensors it writes from the GPU to host memory, and does so the same way for a
synchronous save ("We do D2H later when the async_request is scheduled for both sync / async
checkpointing", dist_checkpointing/strategies/filesystem_async.py:162 @ 0.19.2; the staging copy
is ``preload_tensors``' ``tensor.to("cpu")``, :243). The GPU holds no copy of the state either way.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterable, Iterator, Mapping
from types import MappingProxyType
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


# The environment the training workers inherit from their job (the stage's ``environment``, or
# the job's as a cluster profile makes it), which estimates made inside worker_environment read.
_INHERITED: contextvars.ContextVar[Mapping[str, str]] = contextvars.ContextVar(
    "worker_environment", default=MappingProxyType({})
)


@contextlib.contextmanager
def worker_environment(environment: Mapping[str, str]) -> Iterator[None]:
    """Within the block, the training workers inherit ``environment``: the plan estimates a
    stage inside its own ``environment``, and submit again inside the job's (the profile's
    ``extra_env`` over the stage's), where that changes the allocator."""
    token = _INHERITED.set(MappingProxyType(dict(environment)))
    try:
        yield
    finally:
        _INHERITED.reset(token)


def allocator_conf(config_env: Any, *, config_first: bool) -> str | None:
    """The ``PYTORCH_CUDA_ALLOC_CONF`` the training workers see: the config's ``env_vars``
    section (``config_env``, a mapping or None) or what they inherit (``worker_environment``).
    ``config_first``: the framework sets its section over the inherited environment (NeMo-RL
    hands it to Ray as the workers' runtime_env, lm_policy.py); else the inherited value wins
    (Megatron-Bridge's apply_environment_variables only ``os.environ.setdefault``s its
    env_vars, training/config.py:1971-1990)."""
    configured = config_env.get(ALLOC_CONF) if isinstance(config_env, Mapping) else None
    inherited = _INHERITED.get().get(ALLOC_CONF)
    first, second = (configured, inherited) if config_first else (inherited, configured)
    chosen = first if first is not None else second
    return None if chosen is None or isinstance(chosen, Marker) else str(chosen)


def expandable(conf: str | None) -> bool:
    """Whether an allocator configuration turns on expandable segments (PyTorch reads the
    comma-separated ``key:value`` options of ``PYTORCH_CUDA_ALLOC_CONF``)."""
    if not conf:
        return False
    options = (part.strip().replace(" ", "") for part in conf.split(","))
    return any(option.lower() == "expandable_segments:true" for option in options)
