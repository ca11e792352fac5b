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

from typing import Any

from recipekit.hardware import Hardware
from recipekit.memory.estimate import GIB, MemoryEstimate, Phase, Term
from recipekit.memory.megatron import BF16, MegatronSetup, training_terms
from recipekit.memory.vllm import EAGER_ALLOWANCE, VllmSetup, serving_terms
from recipekit.model_card import ModelCard
from recipekit.nemo_rl.layout import Layout

MEGATRON = "policy.megatron_cfg"
VLLM = "policy.generation.vllm_cfg"
DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "auto": 2, "half": 2, "float32": 4, "float": 4}
FP8 = ("fp8", "fp8_e4m3", "fp8_e5m2")
# vLLM's engine defaults where NeMo-RL's config leaves them out.
VLLM_MAX_NUM_SEQS = 256
VLLM_MAX_BATCHED_TOKENS = 8192


def megatron_setup(rendered: dict[str, Any], layout: Layout) -> MegatronSetup:
    policy = rendered["policy"]
    m = policy["megatron_cfg"]
    optimizer = m.get("optimizer") or {}
    ddp = m.get("distributed_data_parallel_config") or {}
    packing = policy.get("sequence_packing") or {}
    dynamic = policy.get("dynamic_batching") or {}
    if packing.get("enabled"):
        tokens, tokens_key = packing["train_mb_tokens"], "policy.sequence_packing.train_mb_tokens"
    elif dynamic.get("enabled"):
        tokens, tokens_key = dynamic["train_mb_tokens"], "policy.dynamic_batching.train_mb_tokens"
    else:
        tokens = policy["train_micro_batch_size"] * policy["max_total_sequence_length"]
        tokens_key = "policy.max_total_sequence_length"
    offload = optimizer.get("optimizer_offload_fraction") or 0.0
    return MegatronSetup.of(
        layout.parallel,
        tokens=int(tokens),
        # NeMo-RL's activation_checkpointing is Megatron's full, uniform recompute of 1 layer.
        recompute="full" if m.get("activation_checkpointing") else "none",
        distributed_optimizer=optimizer.get("use_distributed_optimizer", True) is not False,
        optimizer_offload=float(offload) if optimizer.get("optimizer_cpu_offload") else 0.0,
        grad_bytes=4 if ddp.get("grad_reduce_in_fp32") else BF16,
        mtp=bool(m.get("mtp_num_layers")),
        keys={
            **layout.keys.size_keys(),
            "dp": "the training nodes",
            "optimizer_offload": f"{MEGATRON}.optimizer.optimizer_cpu_offload",
            "recompute": f"{MEGATRON}.activation_checkpointing",
            "tokens": tokens_key,
        },
    )


def vllm_setup(rendered: dict[str, Any], layout: Layout) -> VllmSetup:
    generation = rendered["policy"]["generation"]
    vllm = generation["vllm_cfg"]
    kwargs = generation.get("vllm_kwargs") or {}
    precision = str(vllm.get("precision", "bfloat16"))
    weight_bytes = 1 if precision in FP8 else DTYPE_BYTES.get(precision, 2)
    kv_dtype = str(vllm.get("kv_cache_dtype", "auto"))
    kv_bytes = 1 if kv_dtype in FP8 else 2
    ssm = str(kwargs.get("mamba_ssm_cache_dtype", "auto"))
    max_num_seqs = int(kwargs.get("max_num_seqs") or VLLM_MAX_NUM_SEQS)
    grpo = rendered.get("grpo") or {}
    samples = (grpo.get("num_prompts_per_step") or 0) * (
        grpo.get("num_generations_per_prompt") or 0
    )
    instances = max(layout.vllm_instances, 1)
    wanted = min(max_num_seqs, -(-samples // instances)) if samples else None
    return VllmSetup(
        tp=layout.vllm_tensor_parallel,
        pp=layout.vllm_pipeline_parallel,
        util=float(vllm["gpu_memory_utilization"]),
        max_model_len=int(vllm["max_model_len"]),
        max_num_seqs=max_num_seqs,
        max_num_batched_tokens=int(kwargs.get("max_num_batched_tokens") or VLLM_MAX_BATCHED_TOKENS),
        weight_bytes=weight_bytes,
        kv_bytes=kv_bytes,
        ssm_state_bytes=DTYPE_BYTES.get(ssm, 2),
        enforce_eager=bool(vllm.get("enforce_eager")),
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
    rendered: dict[str, Any], hardware: Hardware, card: ModelCard, layout: Layout
) -> MemoryEstimate | None:
    arch = card.architecture
    policy = rendered.get("policy") or {}
    if arch is None or layout.backend != "megatron" or not layout.nodes.training_gpus:
        return None
    hbm = float(hardware.node.gpu.hbm_gib)
    training = training_terms(arch, megatron_setup(rendered, layout))
    generation = policy.get("generation") or {}
    if generation.get("backend") != "vllm" or not generation.get("vllm_cfg"):
        return MemoryEstimate(phases=(Phase("training", "training GPUs", training, hbm),))
    serving = vllm_setup(rendered, layout)
    vllm_terms, budget, note = serving_terms(arch, serving, hbm)
    where = "all GPUs" if layout.nodes.colocated else "generation GPUs"
    budget_phase = Phase(
        "generation (vLLM budget)",
        where,
        vllm_terms,
        budget / GIB,
        limit_name=f"gpu_memory_utilization {serving.util} x HBM",
        notes=(note,),
        warn_when_full=False,
    )
    if not layout.nodes.colocated:
        return MemoryEstimate(
            phases=(budget_phase, Phase("training", "training GPUs", training, hbm))
        )
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
            budget_phase,
            Phase("generation (colocated)", "all GPUs", (vllm_share, *kept), hbm),
            Phase("training (colocated)", "all GPUs", (*training, asleep), hbm),
        ),
        assumptions=(
            "colocated: the policy keeps its weights and gradient buffers on the GPU while vLLM "
            "generates and moves its optimizer state to the host",
        ),
    )
