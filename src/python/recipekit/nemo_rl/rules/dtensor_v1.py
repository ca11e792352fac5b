"""The first DTensor policy worker (``policy.dtensor_cfg`` with ``_v2`` not true):
``nemo_rl/models/policy/workers/dtensor_policy_worker.py`` and the parallel plans it applies
(``nemo_rl/models/dtensor/parallelize.py``), super-v3.5-posttraining. Catalogue:
``rule_catalogue/nemo-rl.dtensor.toml``.

Every check here fires only where that worker is the one NeMo-RL starts: no Megatron policy,
DTensor enabled and ``_v2`` not true (lm_policy.py picks it so). The sizes are the DTensor
layout on the training GPUs (``ctx.layout.parallel``). As ``rules.model_support`` does, a model
card with Mamba layers is read as Nemotron-H, the family NeMo-RL parallelises with a plan of its
own (``_parallelize_nm5_h``).
"""

from __future__ import annotations

from collections.abc import Iterator

from recipekit.errors import Issue
from recipekit.nemo_rl.checks import Check, CheckContext
from recipekit.nemo_rl.keys import has_key, value_of
from recipekit.nemo_rl.rules.citation import cite, mirrors
from recipekit.nemo_rl.schema_super_v3 import Colocation, DTensor

DTENSOR_CFG = "policy.dtensor_cfg"
# The entry points that refit a generation engine from the policy between steps (GRPO's
# refit_policy_generation, which distillation and PPO call too): their config's own section.
REFITTING_SECTIONS = ("grpo", "distillation", "ppo")


def _v1(ctx: CheckContext) -> DTensor | None:
    """The DTensor section where the first DTensor worker trains the policy, else None."""
    dtensor = ctx.config.policy.dtensor_cfg
    if ctx.megatron is not None or dtensor.enabled is not True or dtensor.v2 is True:
        return None
    return dtensor


def _nemotron_h(ctx: CheckContext) -> bool:
    architecture = ctx.model.architecture
    return architecture is not None and architecture.mamba is not None


# The catalogue's rules of the first DTensor worker's parallel plan (parallelize_model).
PLAN = "nemo-rl.dtensor-v1.parallelize-model"


def tensor_parallel_divides_the_heads(ctx: CheckContext) -> Iterator[Issue]:
    """parallelize.py, _parallelize_model (two asserts): at TP above 1 the DTensor plan splits the
    key-value heads and then the attention heads over TP, and asserts that TP divides each (a
    Nemotron-H model is planned apart, before this). Heads the model card does not give are not
    checked."""
    tp, architecture = ctx.layout.parallel.tp, ctx.model.architecture
    if _v1(ctx) is None or tp <= 1 or architecture is None or _nemotron_h(ctx):
        return
    for heads, what, rule in (
        (architecture.kv_heads, "key-value heads", f"{PLAN}.tp-above-1-tp-divides-model-key"),
        (
            architecture.attention_heads,
            "attention heads",
            f"{PLAN}.tp-above-1-tp-divides-model-attention",
        ),
    ):
        if heads > 0 and heads % tp:
            fits = [n for n in range(2, heads + 1) if heads % n == 0]
            yield Issue(
                f"{DTENSOR_CFG}.tensor_parallel_size",
                f"{ctx.model.name} has {heads} {what}, which TP = {tp} does not divide; the "
                "first DTensor worker's parallel plan asserts that it does "
                f"({cite(ctx, v35=rule)})",
                value=tp,
                hint="use 1 or one of " + ", ".join(map(str, fits)) if fits else "use 1",
            )
            return  # the first failed assert stops the worker


@mirrors(v35="nemo-rl.dtensor-v1.parallelize-nm5-h.nemotron-h-model-dtensor-plan-takes-no-custom")
def custom_parallel_plan_not_on_nemotron_h(ctx: CheckContext) -> Iterator[Issue]:
    """parallelize.py, _parallelize_nm5_h: a Nemotron-H model gets NeMo-RL's own plan, which refuses
    a custom one (at every TP size: that plan is picked before TP is looked at)."""
    dtensor = _v1(ctx)
    plan = None if dtensor is None else dtensor.custom_parallel_plan
    if isinstance(plan, str) and _nemotron_h(ctx):
        yield Issue(
            f"{DTENSOR_CFG}.custom_parallel_plan",
            f"{ctx.model.name} is a Nemotron-H model, whose DTensor parallel plan asserts that "
            "no custom plan is given",
            value=plan,
            hint="set it null",
        )


@mirrors(v35="nemo-rl.dtensor-v1.init.sequence-parallelism-tp-1-does-nothing")
def sequence_parallel_needs_tensor_parallel(ctx: CheckContext) -> Iterator[Issue]:
    """dtensor_policy_worker.py, DTensorPolicyWorkerImpl.__init__ (a warning): sequence parallelism
    shards over the TP group, so at TP 1 it does nothing."""
    dtensor, tp = _v1(ctx), ctx.layout.parallel.tp
    if dtensor is not None and dtensor.sequence_parallel is True and tp == 1:
        yield Issue(
            f"{DTENSOR_CFG}.sequence_parallel",
            "has no effect at tensor_parallel_size = 1; the first DTensor policy worker warns "
            "so when it starts",
            value=True,
            hint="set tensor_parallel_size above 1, or this false",
        )


@mirrors(v35="nemo-rl.dtensor-v1.train.emptying-cuda-cache-few-micro-batches")
def cache_clearing_costs_time(ctx: CheckContext) -> Iterator[Issue]:
    """dtensor_policy_worker.py, DTensorPolicyWorkerImpl.train (a warning): a set
    clear_cache_every_n_steps empties the CUDA cache every that many micro-batches, which the worker
    warns about at every global batch of every training step."""
    dtensor = _v1(ctx)
    steps = None if dtensor is None else dtensor.clear_cache_every_n_steps
    if isinstance(steps, int) and not isinstance(steps, bool) and steps:
        yield Issue(
            f"{DTENSOR_CFG}.clear_cache_every_n_steps",
            f"emptying the CUDA cache every {steps} micro-batches slows training down; the "
            "first DTensor policy worker warns so at every global batch",
            value=steps,
            hint="leave it null unless memory fragmentation makes training fail",
        )


@mirrors(
    v35="nemo-rl.dtensor-v1.broadcast-weights-for-collective.cpu-offload-generation-gpus-own-moves"
)
def cpu_offload_with_separate_generation(ctx: CheckContext) -> Iterator[Issue]:
    """dtensor_policy_worker.py, DTensorPolicyWorkerImpl.broadcast_weights_for_collective (a
    warning): with generation on GPUs of its own and the default refit (vLLM, refit_transport null),
    every refit broadcasts the weights from the policy, which CPU offload moves onto the GPU and
    back off each time."""
    dtensor, gen = _v1(ctx), ctx.generation
    if dtensor is None or dtensor.cpu_offload is not True or gen is None:
        return
    if not any(has_key(ctx.config, section) for section in REFITTING_SECTIONS):
        return
    colocated = gen.colocated
    separate = isinstance(colocated, Colocation) and colocated.enabled is False
    transport = value_of(gen, "refit_transport")
    if gen.backend == "vllm" and separate and not isinstance(transport, str):
        yield Issue(
            f"{DTENSOR_CFG}.cpu_offload",
            "with policy.generation.colocated.enabled false, every refit moves the policy's "
            "weights onto the GPU and back to the CPU; the first DTensor policy worker warns "
            "so at each refit",
            value=True,
            hint="set it false unless the policy does not fit in GPU memory",
        )


ERROR_CHECKS: tuple[Check, ...] = (
    tensor_parallel_divides_the_heads,
    custom_parallel_plan_not_on_nemotron_h,
)
WARNING_CHECKS: tuple[Check, ...] = (
    sequence_parallel_needs_tensor_parallel,
    cache_clearing_costs_time,
    cpu_offload_with_separate_generation,
)
