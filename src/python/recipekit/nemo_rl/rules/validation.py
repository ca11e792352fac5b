"""GRPO setup's rules on validation sampling and early stopping (super-v3.5-posttraining).

Each check mirrors one upstream line of ``nemo_rl/algorithms/grpo.py`` (or the NeMo Gym runner,
``examples/nemo_gym/run_grpo_nemo_gym.py``) at 5d63149a, cited in its docstring.
"""

from __future__ import annotations

from collections.abc import Iterator

from recipekit.errors import Issue
from recipekit.markers import Marker
from recipekit.nemo_rl.checks import CheckContext
from recipekit.nemo_rl.keys import has_key, value_of
from recipekit.nemo_rl.rules.citation import where

GEN = "policy.generation"


def _val_overrides(ctx: CheckContext) -> list[str]:
    """The val_* sampling keys that differ from the training ones (grpo.py, setup)."""
    gen = ctx.generation
    if gen is None or not has_key(gen, "val_top_k"):
        return []
    pairs = (("val_temperature", "temperature"), ("val_top_p", "top_p"), ("val_top_k", "top_k"))
    return [
        val
        for val, train in pairs
        if not isinstance(getattr(gen, val), Marker) and getattr(gen, val) != getattr(gen, train)
    ]


def validation_sampling_only_on_gym_vllm(ctx: CheckContext) -> Iterator[Issue]:
    """grpo.py, setup: validation sampling unlike training's needs vLLM NeMo Gym rollouts."""
    gen = ctx.generation
    overridden = _val_overrides(ctx)
    if gen is None or not overridden:
        return
    gym = ctx.uses_nemo_gym
    if gen.backend != "vllm" or not gym:
        yield Issue(
            f"{GEN}.{overridden[0]}",
            "NeMo-RL's GRPO setup refuses it: validation sampling that differs from training's "
            "is only honoured on vLLM NeMo Gym rollouts ("
            + where("nemo-rl.grpo.validation-sampling-only-on-gym-vllm")
            + ")",
            value=getattr(gen, overridden[0]),
        )


def nemo_gym_takes_no_val_top_k(ctx: CheckContext) -> Iterator[Issue]:
    """grpo.py, setup: the NeMo Gym rollout path honours no val_top_k."""
    gen = ctx.generation
    if gen is None or not _val_overrides(ctx):
        return
    val_top_k = value_of(gen, "val_top_k")
    if not isinstance(val_top_k, Marker) and val_top_k:
        yield Issue(
            f"{GEN}.val_top_k",
            "NeMo-RL's GRPO setup refuses it: the NeMo Gym rollout path honours only "
            f"val_temperature and val_top_p ({where('nemo-rl.grpo.nemo-gym-takes-no-val-top-k')})",
            value=val_top_k,
            hint="leave it null",
        )


ERROR_CHECKS = (
    validation_sampling_only_on_gym_vllm,
    nemo_gym_takes_no_val_top_k,
)
WARNING_CHECKS: tuple[()] = ()
