"""Megatron-Core's parallel layout rules that every framework on it shares, worded once.

A model-parallel group is TP x PP x CP GPUs; it must divide the GPUs that train, the rest being
data parallel (``megatron/core/parallel_state.py``: ``initialize_model_parallel`` refuses a
world size that is not a multiple of it). Errors name the keys the user sets, with their values,
so ``--set ...context_parallel_size=3`` is answered in terms of ``context_parallel_size``.
Whether a tensor-parallel group stays inside NVLink is the node's rule
(``NodeType.tensor_parallel_problem``, GB200 NVL72 trays included), used by every framework.
"""

from __future__ import annotations

from collections.abc import Sequence

from recipekit.errors import Issue


def product_of(factors: Sequence[tuple[str, int]]) -> tuple[int, str]:
    """The product of ``(key, value)`` factors and its arithmetic, keys named:
    ``tensor_model_parallel_size x context_parallel_size = 4 x 3 = 12``."""
    total = 1
    for _, value in factors:
        total *= value
    names = " x ".join(key for key, _ in factors)
    values = " x ".join(str(value) for _, value in factors)
    return total, f"{names} = {values} = {total}"


def model_parallel_issue(
    section: str, factors: Sequence[tuple[str, int]], gpus: int, gpus_text: str
) -> Issue | None:
    """The model-parallel group (``factors``: the TP, PP and CP keys of ``section``) does not
    divide ``gpus``; None when it does. ``gpus_text`` says which GPUs those are."""
    size, arithmetic = product_of(factors)
    if gpus > 0 and gpus % size == 0:
        return None
    return Issue(
        section,
        f"{arithmetic} does not divide {gpus_text}",
        hint=f"data parallel would be {gpus} / {size} = {gpus / size:g}; change one of "
        + ", ".join(f"{section}.{key}" for key, _ in factors),
    )
