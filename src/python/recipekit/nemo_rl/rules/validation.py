"""GRPO setup's rules on validation sampling and early stopping (super-v3.5-posttraining).

Each check mirrors one upstream line of ``nemo_rl/algorithms/grpo.py`` (or the NeMo Gym runner,
``examples/nemo_gym/run_grpo_nemo_gym.py``) at 5d63149a, cited in its docstring.
"""

from __future__ import annotations

from collections.abc import Iterator

from recipekit.errors import Issue
from recipekit.markers import Marker
from recipekit.nemo_rl.checks import CheckContext
from recipekit.nemo_rl.keys import value_of
from recipekit.nemo_rl.rules.citation import where

GEN = "policy.generation"


def _val_overrides(ctx: CheckContext) -> list[str]:
    """The val_* sampling keys that differ from the training ones (grpo.py, setup)."""
    gen = ctx.generation
    if gen is None or not hasattr(gen, "val_top_k"):
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


def pass_k_needs_several_validation_generations(ctx: CheckContext) -> Iterator[Issue]:
    """grpo.py, setup: stopping at pass@k needs more than one validation generation per prompt."""
    grpo = ctx.config.grpo
    metric = value_of(grpo, "stop_at_validation_metric")
    per_prompt = value_of(grpo, "val_num_generations_per_prompt")
    per_prompt = 1 if isinstance(per_prompt, Marker) or per_prompt is None else per_prompt
    if metric == "pass_k" and per_prompt <= 1:
        yield Issue(
            "grpo.val_num_generations_per_prompt",
            "NeMo-RL's GRPO setup refuses it: stop_at_validation_metric 'pass_k' needs more "
            "than one generation per validation prompt ("
            + where("nemo-rl.grpo.pass-k-needs-several-val-generations")
            + ")",
            value=per_prompt,
        )


def early_stop_needs_a_threshold(ctx: CheckContext) -> Iterator[Issue]:
    """grpo.py, setup: a validation stop metric needs its threshold."""
    grpo = ctx.config.grpo
    metric = value_of(grpo, "stop_at_validation_metric")
    threshold = value_of(grpo, "stop_at_validation_threshold")
    if isinstance(metric, str) and (threshold is None or isinstance(threshold, Marker)):
        yield Issue(
            "grpo.stop_at_validation_threshold",
            f"NeMo-RL's GRPO setup refuses a missing one: grpo.stop_at_validation_metric is "
            f"{metric!r} ({where('nemo-rl.grpo.early-stop-needs-threshold')})",
        )


def multiple_dataloaders_split_the_step(ctx: CheckContext) -> Iterator[Issue]:
    """grpo.py, setup: with several dataloaders each step's prompts split evenly among them."""
    data, grpo = ctx.config.data, ctx.config.grpo
    if value_of(data, "use_multiple_dataloader") is not True:
        return
    per_loader = value_of(data, "num_prompts_per_dataloader")
    if not isinstance(per_loader, int):
        return
    multiplier = grpo.batch_multiplier if grpo.use_dynamic_sampling else 1
    multiplier = 1 if isinstance(multiplier, Marker) else multiplier
    step, loader = int(grpo.num_prompts_per_step * multiplier), int(per_loader * multiplier)
    if step % loader:
        yield Issue(
            "data.num_prompts_per_dataloader",
            f"NeMo-RL's GRPO setup refuses it: the {step} prompts of a step must be a multiple "
            f"of the {loader} each dataloader gives ("
            + where("nemo-rl.grpo.dataloaders-split-the-step")
            + ")",
            value=per_loader,
        )


def nemo_gym_takes_no_max_val_samples(ctx: CheckContext) -> Iterator[Issue]:
    """run_grpo_nemo_gym.py, main: NeMo Gym validates on the whole validation set as given."""
    max_val = ctx.config.grpo.max_val_samples
    if ctx.uses_nemo_gym and max_val is not None:
        yield Issue(
            "grpo.max_val_samples",
            "NeMo-RL's NeMo Gym runner refuses it: validation uses the dataset exactly as given "
            "(" + where("nemo-rl.gym-runner.no-max-val-samples") + ")",
            value=max_val,
            hint="set it to null; repeat samples in the dataset instead",
        )


ERROR_CHECKS = (
    validation_sampling_only_on_gym_vllm,
    nemo_gym_takes_no_val_top_k,
    pass_k_needs_several_validation_generations,
    early_stop_needs_a_threshold,
    multiple_dataloaders_split_the_step,
    nemo_gym_takes_no_max_val_samples,
)
WARNING_CHECKS: tuple[()] = ()
