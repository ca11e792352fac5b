"""NeMo-RL's phases as memory: Megatron training, vLLM generation, and colocated, both in turn.

Non-colocated, generation and training run on their own GPUs and each is checked alone.
Colocated (``policy.generation.colocated.enabled``), every GPU runs both, in this order each
step (``nemo_rl/algorithms/grpo.py``, the loop of ``grpo_train``):

1. generation: vLLM wakes and takes ``gpu_memory_utilization`` x HBM; the policy has moved its
   optimizer state to the host (``offload_before_refit``, ``offload_after_refit``: "unload
   optimizer to make space for generation"), its weights and gradient buffers stay;
2. training: vLLM sleeps (weights to the host, KV cache freed), the policy trains.
"""

from __future__ import annotations

from collections.abc import Callable

from recipekit.hardware import Hardware
from recipekit.markers import Marker, given
from recipekit.megatron_core.options import from_nemo_rl
from recipekit.memory.estimate import GIB, MemoryEstimate, Phase, Term
from recipekit.memory.megatron import BF16, MegatronSetup, adam_state, training_terms
from recipekit.memory.switches import allocator_conf, expandable
from recipekit.memory.vllm import (
    EAGER_ALLOWANCE,
    VLLM_MAX_BATCHED_TOKENS,
    VLLM_MAX_NUM_SEQS,
    VllmSetup,
    serving_terms,
)
from recipekit.model_card import ModelCard
from recipekit.nemo_rl.checks.context import GrpoConfig
from recipekit.nemo_rl.keys import value_of
from recipekit.nemo_rl.layout import Layout
from recipekit.nemo_rl.schema_super_v3 import Megatron, VllmConfig
from recipekit.parallelism import ParallelKeys, ParallelLayout

MEGATRON = "policy.megatron_cfg"
VLLM = "policy.generation.vllm_cfg"
DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "auto": 2, "half": 2, "float32": 4, "float": 4}
FP8 = ("fp8", "fp8_e4m3", "fp8_e5m2")


def megatron_setup(config: GrpoConfig, layout: Layout) -> MegatronSetup | None:
    return _megatron_setup(config, layout.parallel, layout.keys)


def _megatron_setup(
    config: GrpoConfig, parallel: ParallelLayout, keys: ParallelKeys
) -> MegatronSetup | None:
    """What one training rank runs; None where the config leaves a micro-batch's token budget
    out (a recipe that sets it UNSET: key_needs warns that NeMo-RL reads it), which nothing
    prices."""
    # Of the layout, the training GPUs' sizes and their keys alone: what layout_pricer keys on.
    policy = config.policy
    m = policy.megatron_cfg
    assert isinstance(m, Megatron), "the layout's backend is megatron"
    optimizer, ddp = m.optimizer, m.distributed_data_parallel_config
    packing = given(policy.sequence_packing, None)
    dynamic = policy.dynamic_batching
    if packing is not None and packing.enabled:
        tokens, tokens_key = packing.train_mb_tokens, "policy.sequence_packing.train_mb_tokens"
    elif dynamic.enabled:
        tokens, tokens_key = dynamic.train_mb_tokens, "policy.dynamic_batching.train_mb_tokens"
    else:
        tokens = policy.train_micro_batch_size * policy.max_total_sequence_length
        tokens_key = "policy.max_total_sequence_length"
    # A pipeline stage holds at most the step's micro-batches in flight; packed or dynamic
    # batches make as many as the sequences' lengths give, so no bound is taken from them.
    global_batch, dp = policy.train_global_batch_size, parallel.dp
    microbatches = (
        max(1, global_batch // (policy.train_micro_batch_size * dp))
        if isinstance(global_batch, int)
        and dp
        and not (packing and packing.enabled)
        and not dynamic.enabled
        else None
    )
    if not isinstance(tokens, int):
        return None
    # NeMo-RL's activation_checkpointing turns recompute on, at recompute_granularity (full,
    # uniform, one layer, by default; selective rebuilds recompute_modules, Megatron-Core's
    # core_attn by default): read as NeMo-RL's setup passes it, as the config checks read it.
    options = from_nemo_rl(m, parallel, keys)
    modules = options.recompute_modules or ("core_attn",)
    return MegatronSetup.of(
        parallel,
        tokens=tokens,
        recompute=options.recompute_granularity or "none",
        recompute_modules=tuple(modules),
        recompute_method=options.recompute_method or "uniform",
        recompute_num_layers=options.recompute_num_layers or 1,
        microbatches=microbatches,
        distributed_optimizer=optimizer.use_distributed_optimizer,
        optimizer_offload=float(optimizer.optimizer_offload_fraction)
        if optimizer.optimizer_cpu_offload
        else 0.0,
        # NeMo-RL hands the optimizer section to Megatron-Core's OptimizerConfig as written
        # (setup.py, optimizer_kwargs @ super-v3.5-posttraining), whose dtypes it declares
        # none of: fp32 states, and no fp8_recipe there, so Transformer Engine keeps the main
        # parameters (as remainders beside bf16 ones).
        adam=adam_state(
            precision_aware=optimizer.use_precision_aware_optimizer is True,
            bf16_params=policy.precision == "bfloat16",
        ),
        grad_bytes=4 if ddp.grad_reduce_in_fp32 else BF16,
        mtp=bool(given(m.mtp_num_layers, 0)),
        # A block per depth only where the stage says so (setup.py's _apply_mtp_config hands
        # megatron_cfg.mtp_use_repeated_layer to the provider; main's schema).
        mtp_shared=value_of(m, "mtp_use_repeated_layer", None) is not False,
        # NeMo-RL sets the policy's env_vars over what the workers inherit (lm_policy.py).
        expandable_segments=expandable(allocator_conf(given(m.env_vars, None), config_first=True)),
        keys={
            **keys.size_keys(),
            "dp": "the training nodes",
            "optimizer_offload": f"{MEGATRON}.optimizer.optimizer_cpu_offload",
            "recompute": f"{MEGATRON}.activation_checkpointing",
            "tokens": tokens_key,
        },
    )


def _vllm_setup(config: GrpoConfig, tp: int, pp: int, instances: int) -> VllmSetup:
    # Of the layout, vLLM's sizes and its instance count alone: what layout_pricer keys on.
    generation = config.policy.generation
    assert not isinstance(generation, Marker), "the estimate reads vLLM's only where it is set"
    vllm = generation.vllm_cfg
    assert isinstance(vllm, VllmConfig), "the estimate reads vLLM's only where it is set"
    kwargs = given(generation.vllm_kwargs, {})
    # vLLM's dtype "auto" is the checkpoint's: bf16 for these models.
    precision = str(given(vllm.precision, "bfloat16"))
    weight_bytes = 1 if precision in FP8 else DTYPE_BYTES.get(precision, 2)
    kv_bytes = 1 if vllm.kv_cache_dtype in FP8 else 2
    ssm = str(kwargs.get("mamba_ssm_cache_dtype", "auto"))
    max_num_seqs = int(kwargs.get("max_num_seqs") or VLLM_MAX_NUM_SEQS)
    samples = config.grpo.num_prompts_per_step * config.grpo.num_generations_per_prompt
    instances = max(instances, 1)
    wanted = min(max_num_seqs, -(-samples // instances)) if samples else None
    assert isinstance(vllm.max_model_len, int), "derived before the estimate"
    return VllmSetup(
        tp=tp,
        pp=pp,
        util=float(vllm.gpu_memory_utilization),
        max_model_len=vllm.max_model_len,
        max_num_seqs=max_num_seqs,
        max_num_batched_tokens=int(kwargs.get("max_num_batched_tokens") or VLLM_MAX_BATCHED_TOKENS),
        weight_bytes=weight_bytes,
        kv_bytes=kv_bytes,
        ssm_state_bytes=DTYPE_BYTES.get(ssm, 2),
        enforce_eager=bool(given(vllm.enforce_eager, False)),
        wanted_sequences=wanted,
        keys={
            "tp": f"{VLLM}.tensor_parallel_size",
            "weight_bytes": f"{VLLM}.precision",
            "util": f"{VLLM}.gpu_memory_utilization",
            "max_model_len": f"{VLLM}.max_model_len",
            "max_num_batched_tokens": "policy.generation.vllm_kwargs.max_num_batched_tokens",
            "enforce_eager": f"{VLLM}.enforce_eager",
        },
    )


def estimate(
    config: GrpoConfig, hardware: Hardware, card: ModelCard, layout: Layout
) -> MemoryEstimate | None:
    return layout_pricer(config, hardware, card)(layout)


def layout_pricer(
    config: GrpoConfig, hardware: Hardware, card: ModelCard
) -> Callable[[Layout], MemoryEstimate | None]:
    """``estimate`` of ``config`` on each layout it is given. The estimate reads every size from
    the layout, none from the config's size keys, so the layout search prices the layouts it
    proposes on the recipe's own config; what they share is made once here: a training layout's
    setup with every vLLM size and node split, vLLM's phase with every training layout."""
    arch = card.architecture
    hbm = float(hardware.node.gpu.hbm_gib)
    generation = config.policy.generation
    serves = not (
        isinstance(generation, Marker)
        or generation.backend != "vllm"
        or not isinstance(generation.vllm_cfg, VllmConfig)
    )
    setups: dict[tuple[ParallelLayout, ParallelKeys], MegatronSetup | None] = {}
    # The training phase of each training estimate, by the terms' identity (the estimate's
    # own cache hands the same terms back for the same setup, in the mode it prices in).
    training_phases: dict[int, Phase] = {}
    budgets: dict[tuple[int, int, int, bool], tuple[VllmSetup, float, Phase]] = {}

    def budget_phase(layout: Layout) -> tuple[VllmSetup, float, Phase]:
        tp, pp, instances = (
            layout.vllm_tensor_parallel,
            layout.vllm_pipeline_parallel,
            layout.vllm_instances,
        )
        key = (tp, pp, instances, layout.nodes.colocated)
        if key not in budgets:
            assert arch is not None
            serving = _vllm_setup(config, tp, pp, instances)
            vllm_terms, budget, note = serving_terms(arch, serving, hbm)
            where = "all GPUs" if layout.nodes.colocated else "generation GPUs"
            phase = Phase(
                "generation (vLLM budget)",
                where,
                vllm_terms,
                budget / GIB,
                limit_name=f"gpu_memory_utilization {serving.util} x HBM",
                notes=(note,),
                warn_when_full=False,
            )
            budgets[key] = (serving, budget, phase)
        return budgets[key]

    def price(layout: Layout) -> MemoryEstimate | None:
        if arch is None or layout.backend != "megatron" or not layout.nodes.training_gpus:
            return None
        sizes = (layout.parallel, layout.keys)
        if sizes not in setups:
            setups[sizes] = _megatron_setup(config, *sizes)
        setup = setups[sizes]
        if setup is None:
            return None
        training = training_terms(arch, setup)
        phase = training_phases.get(id(training))
        if phase is None or phase.terms is not training:
            phase = training_phases[id(training)] = Phase(
                "training", "training GPUs", training, hbm
            )
        if not serves:
            return MemoryEstimate(phases=(phase,))
        serving, budget, vllm_phase = budget_phase(layout)
        if not layout.nodes.colocated:
            return MemoryEstimate(phases=(vllm_phase, phase))
        return _colocated(training, serving, budget, vllm_phase, hbm)

    return price


def _colocated(
    training: tuple[Term, ...], serving: VllmSetup, budget: float, vllm_phase: Phase, hbm: float
) -> MemoryEstimate:
    kept = tuple(t for t in training if t.name.startswith(("weights", "gradients", "runtime")))
    vllm_share = Term(
        "vLLM (its whole budget)",
        budget,
        (serving.key("util"),),
        f"gpu_memory_utilization {serving.util} x {hbm} GiB",
    )
    asleep = Term(
        "vLLM asleep",
        EAGER_ALLOWANCE,
        (),
        "weights on the host, KV cache freed",
    )
    return MemoryEstimate(
        phases=(
            vllm_phase,
            Phase("generation (colocated)", "all GPUs", (vllm_share, *kept), hbm),
            Phase("training (colocated)", "all GPUs", (*training, asleep), hbm),
        ),
        assumptions=(
            "colocated: the policy keeps its weights and gradient buffers on the GPU while vLLM "
            "generates and moves its optimizer state to the host",
        ),
    )
