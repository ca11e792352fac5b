"""Megatron-Core's parallel layout rules that every framework on it shares, worded once.

A model-parallel group is TP x PP x CP GPUs; it must divide the GPUs that train, the rest being
data parallel (``megatron/core/parallel_state.py``: ``initialize_model_parallel`` refuses a
world size that is not a multiple of it). Errors name the keys the user sets, with their values,
so ``--set ...context_parallel_size=3`` is answered in terms of ``context_parallel_size``.
Whether a tensor-parallel group stays inside NVLink is the node's rule
(``NodeType.tensor_parallel_problem``, GB200 NVL72 trays included), used by every framework.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence

import attrs

from recipekit.errors import Issue
from recipekit.hardware import NodeType


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


SIZES = (1, 2, 4, 8, 16, 32, 64)


@attrs.frozen
class MegatronSizes:
    """One Megatron-Core layout: tensor, pipeline, context, expert and expert-tensor sizes."""

    tp: int
    pp: int
    cp: int
    ep: int
    etp: int

    def dp(self, gpus: int) -> int:
        return gpus // (self.tp * self.pp * self.cp)


def megatron_layouts(
    gpus: int, node: NodeType, num_layers: int, num_experts: int
) -> Iterator[MegatronSizes]:
    """Every layout Megatron-Core accepts on ``gpus`` GPUs of ``node``: TP x PP x CP and
    EP x ETP x PP divide them, TP and ETP stay inside NVLink, PP divides the layers, EP the
    experts (a dense model has EP 1)."""
    for tp, pp, cp in itertools.product(SIZES, SIZES[:4], SIZES[:5]):
        if gpus % (tp * pp * cp) or num_layers % pp or node.tensor_parallel_problem(tp):
            continue
        experts = [1] if not num_experts else [e for e in SIZES if num_experts % e == 0]
        for ep, etp in itertools.product(experts, SIZES[:4]):
            if gpus % (ep * etp * pp) or (etp > 1 and node.tensor_parallel_problem(etp)):
                continue
            if not num_experts and etp > 1:
                continue
            yield MegatronSizes(tp, pp, cp, ep, etp)
