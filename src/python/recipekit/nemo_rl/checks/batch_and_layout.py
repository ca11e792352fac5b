"""The training layout and the batch shape over it."""

from __future__ import annotations

from collections.abc import Iterator

from recipekit.errors import Issue
from recipekit.markers import Marker
from recipekit.nemo_rl.checks.context import (
    CheckContext,
)
from recipekit.nemo_rl.keys import has_key, value_of
from recipekit.nemo_rl.schema_super_v3 import (
    SequencePacking,
)
from recipekit.parallelism import model_layout_issues


def parallel_layout_holds(ctx: CheckContext) -> Iterator[Issue]:
    """Every Megatron-Core layout rule (``recipekit.parallelism.LAYOUT_RULES``) on the
    training GPUs, in the keys of the backend that trains."""
    lay = ctx.layout
    nodes = lay.nodes
    after = ", after the generation nodes)" if not nodes.colocated else ")"
    yield from model_layout_issues(
        lay.parallel,
        lay.keys,
        ctx.hardware.node,
        ctx.model,
        f"the {nodes.training_gpus} training GPUs ({nodes.training_nodes} nodes x "
        f"{ctx.hardware.gpus_per_node}{after}",
    )


def batch_divides_data_parallel(ctx: CheckContext) -> Iterator[Issue]:
    training, policy, grpo = ctx.layout.parallel, ctx.config.policy, ctx.config.grpo
    dp = training.dp
    gbs, mbs = policy.train_global_batch_size, policy.train_micro_batch_size
    if not isinstance(gbs, int):
        return
    samples = grpo.num_prompts_per_step * grpo.num_generations_per_prompt
    if samples % gbs:
        yield Issue(
            "policy.train_global_batch_size",
            f"the {grpo.num_prompts_per_step} x {grpo.num_generations_per_prompt} = {samples} "
            "samples of a step must split into whole global batches",
            value=gbs,
        )
    if dp <= 0:
        return  # the layout rules report it
    if gbs % dp:
        yield Issue(
            "policy.train_global_batch_size",
            f"must be a multiple of the data-parallel size DP = {dp}",
            value=gbs,
        )
    packing = policy.sequence_packing
    packed = isinstance(packing, SequencePacking) and packing.enabled
    if not packed and gbs % dp == 0 and (gbs // dp) % mbs:
        yield Issue(
            "policy.train_micro_batch_size",
            f"each DP rank gets {gbs} / {dp} = {gbs // dp} samples, not a multiple of this",
            value=mbs,
        )


def micro_batches_agree_at_large_tp(ctx: CheckContext) -> Iterator[Issue]:
    """lm_policy.py, Policy.__init__ (both versions), asked only where the policy's config has a
    logprob_batch_size. GRPO and PPO turn the check off themselves (NRL_IGNORE_TP_ACCURACY_CHECK)
    under loss_fn.force_on_policy_ratio (grpo.py's and ppo.py's setup; super-v3's grpo.py
    setup)."""
    policy, tp = ctx.config.policy, ctx.layout.parallel.tp
    logprob = policy.logprob_batch_size
    if tp < 4 or isinstance(logprob, Marker) or logprob == policy.train_micro_batch_size:
        return
    forced = value_of(value_of(ctx.config, "loss_fn"), "force_on_policy_ratio")
    if forced is True and any(has_key(ctx.config, name) for name in ("grpo", "ppo")):
        return
    yield Issue(
        "policy.logprob_batch_size",
        f"with TP={tp} (>= 4) NeMo-RL requires it to equal "
        f"train_micro_batch_size ({policy.train_micro_batch_size}) for logprob accuracy",
        value=logprob,
        hint="or, for GRPO and PPO, loss_fn.force_on_policy_ratio: true, which skips the check",
    )
