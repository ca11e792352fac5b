"""The learning-rate schedule: OptimizerParamScheduler's constructor checks, which both
frameworks reach when they build the optimizer at setup (the scheduler is made from the
optimizer's lr and min_lr and the scheduler section, in optimizer steps)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from recipekit.errors import Issue
from recipekit.megatron_bridge.rules import cite as bridge_cite
from recipekit.megatron_core.options import options_of
from recipekit.megatron_core.rules import cite


def lr_at_least_min_lr(ctx: Any) -> Iterator[Issue]:
    """optimizer_param_scheduler.py, OptimizerParamScheduler.__init__: the peak learning rate is at
    least the floor."""
    o = options_of(ctx)
    if o is None or o.lr is None or o.min_lr is None or o.lr >= o.min_lr:
        return
    yield Issue(
        o.key("min_lr"),
        f"is above the learning rate ({o.key('lr')} = {o.lr:g}): Megatron-Core's "
        f"scheduler asserts max_lr >= min_lr when the optimizer is built "
        f"{cite('megatron-core.optimizer-param-scheduler.init.learning-rate-least-min-lr')}",
        value=o.min_lr,
        hint=f"at most {o.lr:g}",
    )


def warmup_starts_at_most_lr(ctx: Any) -> Iterator[Issue]:
    """optimizer_param_scheduler.py, OptimizerParamScheduler.__init__: the warm-up starts at or
    below the peak."""
    o = options_of(ctx)
    if o is None or o.lr is None or o.lr_warmup_init is None or o.lr_warmup_init <= o.lr:
        return
    yield Issue(
        o.key("lr_warmup_init"),
        f"is above the learning rate ({o.key('lr')} = {o.lr:g}): Megatron-Core's scheduler "
        "asserts init_lr <= max_lr "
        + cite("megatron-core.optimizer-param-scheduler.init.warm-up-first-learning-rate-most"),
        value=o.lr_warmup_init,
        hint=f"at most {o.lr:g}",
    )


# Both frameworks validate Megatron-Bridge's ConfigContainer before they build the optimizer
# (NeMo-RL's Megatron worker: megatron_policy_worker.py, MegatronPolicyWorkerImpl.__init__ @
# super-v3.5-posttraining), and its scheduler-step calculation cuts a warm-up as long as the
# decay to one step less, with a warning: Megatron-Core's own assert on it
# (megatron-core.optimizer-param-scheduler.init.warm-up-ends-before-decay) is never reached.
BRIDGE_CUT = "megatron-bridge.config.calculate-scheduler-steps.warm-up-long-decay-longer-cut"


def warmup_ends_before_the_decay(ctx: Any) -> Iterator[Issue]:
    """A warning: the warm-up is as long as the decay or longer, which spans lr_decay_iters,
    or the run's train_iters when that is unset (bounded by run_iters), so Megatron-Bridge
    cuts it (BRIDGE_CUT) and the whole run warms up."""
    o = options_of(ctx)
    if o is None or o.lr_warmup_iters is None:
        return
    if o.lr_decay_iters is not None:
        decay, decay_key, bound = o.lr_decay_iters, o.key("lr_decay_iters"), ""
    elif o.run_iters is not None:
        decay, decay_key = o.run_iters, o.key("run_iters")
        bound = ", which bounds the run's train_iters" if o.run_iters_bound else ""
    else:
        return
    if o.lr_warmup_iters < decay:
        return
    yield Issue(
        o.key("lr_warmup_iters"),
        f"the warm-up does not end before the decay does ({decay_key} = {decay}{bound}): "
        f"Megatron-Bridge warns and cuts it to one step less {bridge_cite(BRIDGE_CUT)}",
        value=o.lr_warmup_iters,
    )


def weight_decay_does_not_fall(ctx: Any) -> Iterator[Issue]:
    """optimizer_param_scheduler.py, OptimizerParamScheduler.__init__: weight decay only grows over
    the run (end >= start); get_wd: with the constant style the two are one value (asserted at the
    first step, which the constructor takes)."""
    o = options_of(ctx)
    if o is None or o.start_weight_decay is None or o.end_weight_decay is None:
        return
    start, end = o.start_weight_decay, o.end_weight_decay
    if end < start:
        yield Issue(
            o.key("end_weight_decay"),
            f"is below start_weight_decay ({start:g}): Megatron-Core's scheduler asserts "
            "end_wd >= start_wd "
            + cite(
                "megatron-core.optimizer-param-scheduler.init.weight-decay-ends-above-where-starts"
            ),
            value=end,
            hint=f"at least {start:g}",
        )
    elif o.weight_decay_incr_style == "constant" and end != start:
        yield Issue(
            o.key("weight_decay_incr_style"),
            f"'constant' needs start_weight_decay = end_weight_decay ({start:g} != {end:g}): "
            f"Megatron-Core's scheduler asserts it at its first step "
            + cite(
                "megatron-core.optimizer-param-scheduler.get-wd.constant-weight-decay-starts-ends-one-value"
            ),
            value="constant",
            hint="'linear' or 'cosine' to move between them, or make them equal",
        )


def wsd_has_its_decay_length(ctx: Any) -> Iterator[Issue]:
    """optimizer_param_scheduler.py, OptimizerParamScheduler.__init__: the WSD style needs its decay
    phase's length, which Megatron-Bridge sets from lr_wsd_decay_iters and leaves None without it.
    NeMo-RL hands Megatron-Bridge its scheduler section as it is (setup.py,
    _create_megatron_config @ super-v3.5-posttraining), and that section has no
    lr_wsd_decay_iters (nor does NeMo-RL's MegatronSchedulerConfig), so WSD always stops there. (A
    Megatron-Bridge stage's recipe may state both: unread.)"""
    o = options_of(ctx)
    if o is None or o.lr_decay_style != "WSD":
        return
    yield Issue(
        o.key("lr_decay_style"),
        "needs its decay phase's length (lr_wsd_decay_iters), which this scheduler section "
        "cannot state, so Megatron-Bridge leaves it unset and Megatron-Core's scheduler "
        "asserts WSD has one "
        + cite("megatron-core.optimizer-param-scheduler.init.wsd-decay-style-has-decay-phase"),
        value="WSD",
        hint="cosine, linear, constant or inverse-square-root",
    )
