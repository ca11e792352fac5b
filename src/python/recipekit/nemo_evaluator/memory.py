"""The eval stage's vLLM server as memory: one phase, vLLM's budget on each serving GPU.

nemo-evaluator-launcher starts ``vllm serve`` with the deployment's TP, PP and
``gpu_memory_utilization`` and appends ``extra_args``; vLLM then sizes itself as in training's
generation (``recipekit.memory.vllm``). Where ``extra_args`` sets no ``--max-model-len``, vLLM
takes the model's own maximum (the card's ``max_positions``). The evaluation sends up to
``parallelism`` requests at once.
"""

from __future__ import annotations

import shlex

from recipekit.hardware import Hardware
from recipekit.markers import given_at
from recipekit.memory.estimate import GIB, MemoryEstimate, Phase
from recipekit.memory.vllm import (
    VLLM_MAX_BATCHED_TOKENS,
    VLLM_MAX_NUM_SEQS,
    VllmSetup,
    serving_terms,
)
from recipekit.model_card import ModelCard
from recipekit.nemo_evaluator.checks import ServingLayout
from recipekit.nemo_evaluator.schema import LauncherConfig

FP8 = ("fp8", "fp8_e4m3", "fp8_e5m2")


def _flags(extra_args: str) -> dict[str, str]:
    """``--name value`` and ``--name=value`` pairs of vLLM's command line."""
    words, found = shlex.split(extra_args or ""), {}
    for index, word in enumerate(words):
        if word.startswith("--"):
            name, sep, value = word[2:].partition("=")
            if not sep and index + 1 < len(words) and not words[index + 1].startswith("--"):
                value = words[index + 1]
            found[name.replace("_", "-")] = value
    return found


def estimate(
    config: LauncherConfig, hardware: Hardware, card: ModelCard, layout: ServingLayout
) -> MemoryEstimate | None:
    arch = card.architecture
    deployment = config.deployment
    if arch is None or deployment.type != "vllm":
        return None
    flags = _flags(deployment.extra_args)
    max_model_len = int(flags.get("max-model-len") or arch.max_positions or 0)
    if not max_model_len:
        return None
    params = given_at(config.evaluation, "nemo_evaluator_config", "config", "params")
    setup = VllmSetup(
        tp=layout.tensor_parallel,
        pp=layout.pipeline_parallel,
        util=float(deployment.gpu_memory_utilization),
        max_model_len=max_model_len,
        max_num_seqs=int(flags.get("max-num-seqs") or VLLM_MAX_NUM_SEQS),
        max_num_batched_tokens=int(flags.get("max-num-batched-tokens") or VLLM_MAX_BATCHED_TOKENS),
        kv_bytes=1 if flags.get("kv-cache-dtype") in FP8 else 2,
        ssm_state_bytes=4 if flags.get("mamba-ssm-cache-dtype") == "float32" else 2,
        wanted_sequences=given_at(params, "parallelism"),
        keys={
            "tp": "deployment.tensor_parallel_size",
            "util": "deployment.gpu_memory_utilization",
            "max_model_len": "deployment.extra_args (--max-model-len)",
            "max_num_batched_tokens": "deployment.extra_args (--max-num-batched-tokens)",
            "weight_bytes": "deployment.extra_args (--quantization)",
            "enforce_eager": "deployment.extra_args (--enforce-eager)",
        },
    )
    terms, budget, note = serving_terms(arch, setup, hardware.node.gpu.hbm_gib)
    phase = Phase(
        "serving (vLLM budget)",
        "serving GPUs",
        terms,
        budget / GIB,
        limit_name=f"gpu_memory_utilization {setup.util} x HBM",
        notes=(note,),
        warn_when_full=False,
    )
    assumed = (
        ()
        if "max-model-len" in flags
        else (f"max_model_len: the model's own {max_model_len} (no --max-model-len in extra_args)",)
    )
    return MemoryEstimate(phases=(phase,), assumptions=assumed)
