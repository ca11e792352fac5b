#!/usr/bin/env python3
"""Measure Megatron-Core's memory on a real GPU, term by term, and compare recipekit's estimate.

On a machine with a GPU, PyTorch and the ``megatron-core`` wheel (no Transformer Engine: the
local layer spec, wrapped in ``Float16Module`` as Megatron's training loop wraps it):

    python3 tools/calibrate_memory.py measure --out tools/calibration/h200.json

trains small attention + MLP and attention + MoE models, one per process, with the distributed
optimizer, at several sequence lengths and micro-batch sizes, with and without full recompute,
and records for each: the bf16 weights, the gradient buffer, the optimizer state (fp32 master
weights and Adam's moments, allocated by the first step), the activations stored at the end of
the forward pass, the peak of a whole training step, and what the process holds outside
PyTorch's allocator (CUDA context, NCCL). Anywhere, with recipekit importable:

    python3 tools/calibrate_memory.py compare tools/calibration/h200.json

prints, per run and term, the measurement, recipekit's estimate for the same model and layout,
and the error. ``tools/calibrate_memory_test.py`` holds the errors within the bounds
docs/design/memory-model.md states.

Mamba layers are not measured here: Megatron-Core's Mamba mixer needs the ``mamba_ssm`` and
``causal_conv1d`` CUDA kernels, which cannot be built or carried to the lent GPU (no compiler
toolchain for them, no network). Their terms are estimated from what the fused kernel saves for
its backward pass (see ``recipekit/memory/megatron.py``).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from recipekit.memory.megatron import MegatronSetup
    from recipekit.model_card import Architecture

GIB = 1024**3

# The first grid (8 layers, hidden 2048, GQA 16/4, vocabulary 32k, 16 runs): every run of it
# is in the fit set. Its file is tools/calibration/h200-megatron-core-0.19.2.json.
MODELS: dict[str, dict[str, Any]] = {
    "dense": {
        "layers": 8, "hidden": 2048, "heads": 16, "kv_heads": 4, "ffn": 8192,
        "experts": 0, "top_k": 0, "expert_ffn": 0, "vocab": 32768,
    },
    "moe": {
        "layers": 8, "hidden": 2048, "heads": 16, "kv_heads": 4, "ffn": 0,
        "experts": 16, "top_k": 2, "expert_ffn": 2048, "vocab": 32768,
    },
}
RUNS = [
    (seq, micro, recompute)
    for seq in (1024, 4096)
    for micro in (1, 2)
    for recompute in ("none", "full")
]

# The wide grid (tools/calibration/h200-megatron-core-0.19.2-wide.json): hidden 1024-4096, MHA
# and GQA, vocabularies 32k-256k, dense (plain and SwiGLU) and MoE with 8-128 experts and top-k
# 1-8, micro-batches 1-4, sequences 1k-16k, recompute none, selective (core attention) and full.
# Each run says, before anything is fitted, whether it is fitted on ("fit") or only checked
# against ("check"): two whole models (dense-3k-mha-256k, moe-64x-top8) are check-only, and
# every other model holds back runs of shapes (16k, micro-batch 4, selective) it is not fitted on.
# The "allocator" runs repeat three shapes with PyTorch's expandable segments, in neither set.
WIDE_MODELS: dict[str, dict[str, Any]] = {
    "dense-1k-mha": {
        "layers": 8, "hidden": 1024, "heads": 8, "kv_heads": 8, "ffn": 4096,
        "experts": 0, "top_k": 0, "expert_ffn": 0, "vocab": 32768,
    },
    "dense-2k-gqa": MODELS["dense"],
    "dense-4k-gqa-swiglu": {
        "layers": 4, "hidden": 4096, "heads": 32, "kv_heads": 8, "ffn": 11008, "gated": True,
        "experts": 0, "top_k": 0, "expert_ffn": 0, "vocab": 131072,
    },
    "dense-3k-mha-256k": {
        "layers": 4, "hidden": 3072, "heads": 24, "kv_heads": 24, "ffn": 8192,
        "experts": 0, "top_k": 0, "expert_ffn": 0, "vocab": 256000,
    },
    "moe-8x-top1": {
        "layers": 6, "hidden": 2048, "heads": 16, "kv_heads": 4, "ffn": 0,
        "experts": 8, "top_k": 1, "expert_ffn": 4096, "vocab": 65536,
    },
    "moe-16x-top2": MODELS["moe"],
    "moe-64x-top8": {
        "layers": 4, "hidden": 1024, "heads": 8, "kv_heads": 2, "ffn": 0,
        "experts": 64, "top_k": 8, "expert_ffn": 512, "vocab": 32768,
    },
    "moe-128x-top4": {
        "layers": 4, "hidden": 2048, "heads": 16, "kv_heads": 4, "ffn": 0,
        "experts": 128, "top_k": 4, "expert_ffn": 512, "vocab": 151936,
    },
}
K = 1024
# (model, sequence, micro-batch, recompute, set)
WIDE_RUNS: list[tuple[str, int, int, str, str]] = [
    *[("dense-1k-mha", s, b, r, "fit") for s, b, r in [
        (1 * K, 1, "none"), (1 * K, 4, "none"), (4 * K, 1, "none"), (4 * K, 2, "selective"),
        (8 * K, 1, "full"), (16 * K, 1, "full")]],
    *[("dense-1k-mha", s, b, r, "check") for s, b, r in [
        (16 * K, 1, "selective"), (8 * K, 2, "selective"), (4 * K, 4, "full")]],
    *[("dense-4k-gqa-swiglu", s, b, r, "fit") for s, b, r in [
        (1 * K, 1, "none"), (2 * K, 2, "none"), (4 * K, 1, "none"), (4 * K, 1, "selective"),
        (8 * K, 1, "full")]],
    *[("dense-4k-gqa-swiglu", s, b, r, "check") for s, b, r in [
        (8 * K, 1, "selective"), (4 * K, 2, "full"), (2 * K, 4, "selective")]],
    *[("moe-8x-top1", s, b, r, "fit") for s, b, r in [
        (1 * K, 1, "none"), (1 * K, 4, "none"), (4 * K, 1, "none"), (4 * K, 2, "full"),
        (8 * K, 1, "selective")]],
    *[("moe-8x-top1", s, b, r, "check") for s, b, r in [
        (16 * K, 1, "full"), (2 * K, 2, "selective"), (8 * K, 2, "full")]],
    *[("moe-128x-top4", s, b, r, "fit") for s, b, r in [
        (1 * K, 1, "none"), (2 * K, 2, "none"), (4 * K, 1, "selective"), (4 * K, 1, "full")]],
    *[("moe-128x-top4", s, b, r, "check") for s, b, r in [
        (8 * K, 1, "full"), (1 * K, 4, "selective"), (8 * K, 1, "selective")]],
    *[("dense-3k-mha-256k", s, b, r, "check") for s, b, r in [
        (1 * K, 1, "none"), (1 * K, 4, "none"), (2 * K, 2, "selective"), (4 * K, 1, "none"),
        (4 * K, 2, "full"), (8 * K, 1, "full"), (8 * K, 1, "selective")]],
    *[("moe-64x-top8", s, b, r, "check") for s, b, r in [
        (1 * K, 1, "none"), (1 * K, 2, "selective"), (4 * K, 1, "none"), (4 * K, 4, "full"),
        (8 * K, 2, "selective"), (16 * K, 1, "full"), (16 * K, 1, "selective")]],
    *[("dense-2k-gqa", s, b, r, "check") for s, b, r in [
        (8 * K, 1, "full"), (2 * K, 4, "selective"), (16 * K, 1, "full")]],
    *[("moe-16x-top2", s, b, r, "check") for s, b, r in [
        (8 * K, 1, "full"), (16 * K, 1, "full"), (4 * K, 4, "selective")]],
]
EXPANDABLE = [("moe-8x-top1", 4 * K, 2, "full"), ("dense-2k-gqa", 4 * K, 2, "full"),
              ("moe-16x-top2", 4 * K, 1, "full")]
# The optimizer real stages run is a fused Adam (Transformer Engine's FusedAdam: no fp32
# temporaries, the moments made by the first step as torch's). The local spec has no TE, so
# these runs stand in torch's fused AdamW (one kernel, no temporaries) for it: eight wide-grid
# runs' shapes and two first-grid ones (moe-16x-top2 and dense-2k-gqa are the first grid's
# models), in neither set, to see which of the allocator's excess is the
# step's temporaries and which the moments' placement.
FUSED_ADAM = [
    ("dense-4k-gqa-swiglu", 4 * K, 1, "none"), ("dense-4k-gqa-swiglu", 8 * K, 1, "full"),
    ("moe-128x-top4", 2 * K, 2, "none"), ("moe-128x-top4", 4 * K, 1, "selective"),
    ("dense-3k-mha-256k", 4 * K, 2, "full"), ("dense-3k-mha-256k", 1 * K, 4, "none"),
    ("moe-16x-top2", 4 * K, 1, "full"), ("dense-2k-gqa", 4 * K, 2, "full"),
    ("dense-1k-mha", 16 * K, 1, "full"), ("moe-64x-top8", 4 * K, 4, "full"),
]
# Ten more shapes of WIDE_RUNS with a fused Adam (eight the wide file never measured, two it
# did: dense-1k-mha at 4k, moe-64x-top8 at 16k full), measured after the allocator's constant
# was chosen with FUSED_ADAM in view: the clean hold-out of the estimate real stages get
# ("fused-check").
FUSED_ADAM_CHECK = [
    ("dense-1k-mha", 4 * K, 1, "none"), ("dense-1k-mha", 8 * K, 2, "selective"),
    ("dense-4k-gqa-swiglu", 2 * K, 4, "selective"), ("moe-8x-top1", 4 * K, 2, "full"),
    ("moe-8x-top1", 8 * K, 1, "selective"), ("moe-128x-top4", 8 * K, 1, "full"),
    ("dense-3k-mha-256k", 8 * K, 1, "full"), ("moe-64x-top8", 16 * K, 1, "full"),
    ("dense-2k-gqa", 16 * K, 1, "full"), ("moe-16x-top2", 4 * K, 4, "selective"),
]
# The second clean hold-out ("check2", tools/calibration/h200-megatron-core-0.19.2-check2.json):
# twelve shapes never measured before, chosen with the model frozen (after LOGITS_BLOCKS) and
# before any of them ran. Four new models (hidden 1536 GQA with a 50k vocabulary, hidden 4096
# MHA SwiGLU, 32 experts top-2 with a 100k vocabulary, 96 experts top-6) and new shapes of two
# wide-grid models; micro-batches 1-4 (3 too), sequences 1k-16k, recompute none, selective and
# full. Nine run torch's multi-tensor AdamW (Megatron-Core's default without TE or Apex), three a
# fused Adam (the ``True`` runs).
HOLDOUT_MODELS: dict[str, dict[str, Any]] = {
    "dense-1.5k-gqa-50k": {
        "layers": 6, "hidden": 1536, "heads": 12, "kv_heads": 4, "ffn": 6144,
        "experts": 0, "top_k": 0, "expert_ffn": 0, "vocab": 50304,
    },
    "dense-4k-mha-swiglu-32k": {
        "layers": 3, "hidden": 4096, "heads": 32, "kv_heads": 32, "ffn": 11008, "gated": True,
        "experts": 0, "top_k": 0, "expert_ffn": 0, "vocab": 32000,
    },
    "moe-32x-top2-100k": {
        "layers": 4, "hidden": 2048, "heads": 16, "kv_heads": 8, "ffn": 0,
        "experts": 32, "top_k": 2, "expert_ffn": 1024, "vocab": 100352,
    },
    "moe-96x-top6": {
        "layers": 4, "hidden": 1536, "heads": 12, "kv_heads": 2, "ffn": 0,
        "experts": 96, "top_k": 6, "expert_ffn": 384, "vocab": 65536,
    },
}
# (model, sequence, micro-batch, recompute, fused Adam)
HOLDOUT_RUNS: list[tuple[str, int, int, str, bool]] = [
    ("dense-1.5k-gqa-50k", 2 * K, 2, "none", False),
    ("dense-1.5k-gqa-50k", 8 * K, 1, "selective", False),
    ("dense-1.5k-gqa-50k", 16 * K, 1, "full", False),
    ("dense-4k-mha-swiglu-32k", 4 * K, 1, "selective", False),
    ("dense-4k-mha-swiglu-32k", 1 * K, 3, "none", False),
    ("moe-32x-top2-100k", 4 * K, 2, "full", False),
    ("moe-32x-top2-100k", 2 * K, 1, "none", False),
    ("moe-96x-top6", 8 * K, 1, "selective", False),
    ("dense-3k-mha-256k", 2 * K, 1, "none", False),
    ("moe-96x-top6", 1 * K, 4, "none", True),
    ("dense-4k-mha-swiglu-32k", 8 * K, 1, "full", True),
    ("moe-128x-top4", 2 * K, 1, "full", True),
]
# The third clean hold-out ("check3", tools/calibration/h200-megatron-core-0.19.2-check3.json):
# chosen and measured before the session that re-derived the activation and allocator terms
# (SwiGLU's stored tensors, GQA's expanded keys and values, the step's packing) changed the
# model, and never shown to it. Shapes no earlier grid has: a Llama-like hidden 4096 GQA 32/8
# SwiGLU with a 128k vocabulary, gated (SwiGLU) experts (64 top-8, 151k vocabulary), a
# hidden 1024 MHA model with eight layers, 16 experts top-1 at hidden 3072, and hidden 2560
# GQA 20/4 with a 200k vocabulary; micro-batches 1-4, sequences 1k-16k, recompute none,
# selective and full; both optimizers.
HOLDOUT3_MODELS: dict[str, dict[str, Any]] = {
    "dense-4k-gqa8-swiglu-128k": {
        "layers": 3, "hidden": 4096, "heads": 32, "kv_heads": 8, "ffn": 14336, "gated": True,
        "experts": 0, "top_k": 0, "expert_ffn": 0, "vocab": 128256,
    },
    "moe-64x-top8-swiglu-151k": {
        "layers": 4, "hidden": 2048, "heads": 16, "kv_heads": 4, "ffn": 0, "gated": True,
        "experts": 64, "top_k": 8, "expert_ffn": 768, "vocab": 151936,
    },
    "dense-1k-mha-8l": {
        "layers": 8, "hidden": 1024, "heads": 16, "kv_heads": 16, "ffn": 4096,
        "experts": 0, "top_k": 0, "expert_ffn": 0, "vocab": 32768,
    },
    "moe-16x-top1-3k": {
        "layers": 4, "hidden": 3072, "heads": 24, "kv_heads": 4, "ffn": 0,
        "experts": 16, "top_k": 1, "expert_ffn": 4096, "vocab": 64000,
    },
    "dense-2.5k-gqa-200k": {
        "layers": 4, "hidden": 2560, "heads": 20, "kv_heads": 4, "ffn": 10240,
        "experts": 0, "top_k": 0, "expert_ffn": 0, "vocab": 200064,
    },
}
# (model, sequence, micro-batch, recompute, fused Adam)
HOLDOUT3_RUNS: list[tuple[str, int, int, str, bool]] = [
    ("dense-4k-gqa8-swiglu-128k", 4 * K, 2, "none", False),
    ("dense-4k-gqa8-swiglu-128k", 8 * K, 1, "selective", True),
    ("dense-4k-gqa8-swiglu-128k", 16 * K, 1, "full", False),
    ("moe-64x-top8-swiglu-151k", 4 * K, 1, "none", True),
    ("moe-64x-top8-swiglu-151k", 8 * K, 2, "full", False),
    ("moe-64x-top8-swiglu-151k", 2 * K, 3, "selective", False),
    ("dense-1k-mha-8l", 1 * K, 4, "none", False),
    ("dense-1k-mha-8l", 16 * K, 1, "selective", True),
    ("moe-16x-top1-3k", 2 * K, 3, "selective", True),
    ("moe-16x-top1-3k", 8 * K, 1, "none", False),
    ("dense-2.5k-gqa-200k", 4 * K, 1, "full", False),
    ("dense-2.5k-gqa-200k", 2 * K, 2, "none", True),
]
# The fourth clean hold-out ("check4"): chosen and measured before the allocator's share was
# re-derived after check3 showed it under-estimated, and kept from that work. Five more models (a
# hidden 3072 GQA 24/6 SwiGLU with a 64k vocabulary, 32 gated experts top-4 at hidden 2560, a
# plain-MLP hidden 2048 MHA with a 160k vocabulary, 8 experts top-2 at hidden 4096, a hidden 1536
# SwiGLU with a 256k vocabulary); a 12k sequence beside 1k-8k; micro-batches 1-4; every recompute
# mode; both optimizers.
HOLDOUT4_MODELS: dict[str, dict[str, Any]] = {
    "dense-3k-gqa6-swiglu-64k": {
        "layers": 4, "hidden": 3072, "heads": 24, "kv_heads": 6, "ffn": 8192, "gated": True,
        "experts": 0, "top_k": 0, "expert_ffn": 0, "vocab": 64000,
    },
    "moe-32x-top4-swiglu-32k": {
        "layers": 4, "hidden": 2560, "heads": 20, "kv_heads": 4, "ffn": 0, "gated": True,
        "experts": 32, "top_k": 4, "expert_ffn": 1024, "vocab": 32768,
    },
    "dense-2k-mha-160k": {
        "layers": 6, "hidden": 2048, "heads": 16, "kv_heads": 16, "ffn": 5632,
        "experts": 0, "top_k": 0, "expert_ffn": 0, "vocab": 163840,
    },
    "moe-8x-top2-4k": {
        "layers": 3, "hidden": 4096, "heads": 32, "kv_heads": 8, "ffn": 0,
        "experts": 8, "top_k": 2, "expert_ffn": 8192, "vocab": 32000,
    },
    "dense-1.5k-swiglu-256k": {
        "layers": 4, "hidden": 1536, "heads": 12, "kv_heads": 4, "ffn": 4096, "gated": True,
        "experts": 0, "top_k": 0, "expert_ffn": 0, "vocab": 256000,
    },
}
HOLDOUT4_RUNS: list[tuple[str, int, int, str, bool]] = [
    ("dense-3k-gqa6-swiglu-64k", 4 * K, 3, "none", False),
    ("dense-3k-gqa6-swiglu-64k", 8 * K, 2, "selective", True),
    ("dense-3k-gqa6-swiglu-64k", 12 * K, 1, "full", True),
    ("moe-32x-top4-swiglu-32k", 2 * K, 4, "selective", False),
    ("moe-32x-top4-swiglu-32k", 8 * K, 1, "full", False),
    ("moe-32x-top4-swiglu-32k", 4 * K, 2, "none", True),
    ("dense-2k-mha-160k", 4 * K, 2, "full", False),
    ("dense-2k-mha-160k", 2 * K, 1, "none", True),
    ("moe-8x-top2-4k", 4 * K, 1, "selective", False),
    ("moe-8x-top2-4k", 2 * K, 2, "none", True),
    ("dense-1.5k-swiglu-256k", 8 * K, 1, "full", False),
    ("dense-1.5k-swiglu-256k", 1 * K, 4, "none", False),
]
# The fifth clean hold-out ("check5"): chosen on 2026-12-05 with the model as it stood at
# 10593ad, written here and committed before any of it ran, and never used to change the model.
# Five more models (hidden 5120 GQA 40/8 SwiGLU with a 152k vocabulary, 128 gated experts top-8
# with head dimension 64, a ten-layer hidden 1024 GQA 16/2 model, 64 plain experts top-6 at
# hidden 3072, a hidden 6144 MHA model); sequences 1k-16k (12k too); micro-batches 1-4; every
# recompute mode; both optimizers.
HOLDOUT5_MODELS: dict[str, dict[str, Any]] = {
    "dense-5k-gqa8-swiglu-152k": {
        "layers": 2, "hidden": 5120, "heads": 40, "kv_heads": 8, "ffn": 13824, "gated": True,
        "experts": 0, "top_k": 0, "expert_ffn": 0, "vocab": 152064,
    },
    "moe-128x-top8-swiglu-hd64": {
        "layers": 3, "hidden": 2048, "heads": 32, "kv_heads": 4, "ffn": 0, "gated": True,
        "experts": 128, "top_k": 8, "expert_ffn": 768, "vocab": 151936,
    },
    "dense-1k-gqa2-10l": {
        "layers": 10, "hidden": 1024, "heads": 16, "kv_heads": 2, "ffn": 4096,
        "experts": 0, "top_k": 0, "expert_ffn": 0, "vocab": 49152,
    },
    "moe-64x-top6-3k": {
        "layers": 3, "hidden": 3072, "heads": 24, "kv_heads": 8, "ffn": 0,
        "experts": 64, "top_k": 6, "expert_ffn": 1408, "vocab": 102400,
    },
    "dense-6k-mha-32k": {
        "layers": 2, "hidden": 6144, "heads": 48, "kv_heads": 48, "ffn": 16384,
        "experts": 0, "top_k": 0, "expert_ffn": 0, "vocab": 32000,
    },
}
HOLDOUT5_RUNS: list[tuple[str, int, int, str, bool]] = [
    ("dense-5k-gqa8-swiglu-152k", 4 * K, 1, "none", False),
    ("dense-5k-gqa8-swiglu-152k", 8 * K, 1, "full", True),
    ("dense-5k-gqa8-swiglu-152k", 2 * K, 3, "selective", False),
    ("moe-128x-top8-swiglu-hd64", 4 * K, 2, "full", False),
    ("moe-128x-top8-swiglu-hd64", 2 * K, 1, "none", True),
    ("moe-128x-top8-swiglu-hd64", 8 * K, 1, "selective", False),
    ("dense-1k-gqa2-10l", 16 * K, 1, "full", False),
    ("dense-1k-gqa2-10l", 4 * K, 4, "none", True),
    ("dense-1k-gqa2-10l", 12 * K, 1, "selective", False),
    ("moe-64x-top6-3k", 8 * K, 1, "full", True),
    ("moe-64x-top6-3k", 1 * K, 4, "none", False),
    ("moe-64x-top6-3k", 4 * K, 2, "selective", False),
    ("dense-6k-mha-32k", 4 * K, 1, "full", False),
    ("dense-6k-mha-32k", 2 * K, 2, "none", True),
]
# The runs whose whole-GPU estimate missed the band (-3%..+10%) at 10593ad, measured again with
# the allocator's event trace of one training step (``trace``): what the simulation in
# step_trace.py is to reproduce. In no set. Measured on an H100 on 2026-12-05
# (calibration/h100-megatron-core-0.19.2-traced.json.gz, gzipped: 4.6 MB of events); the 16k run
# of dense-2k-gqa ran out of its 79.2 GiB and was traced on an H200 instead
# (calibration/h200-megatron-core-0.19.2-traced.json.gz).
TRACED_RUNS: list[tuple[str, int, int, str, bool]] = [
    ("dense-4k-gqa-swiglu", 8 * K, 1, "full", True),
    ("dense-4k-mha-swiglu-32k", 8 * K, 1, "full", True),
    ("moe-32x-top2-100k", 4 * K, 2, "full", False),
    ("moe-32x-top4-swiglu-32k", 8 * K, 1, "full", False),
    ("dense-4k-gqa8-swiglu-128k", 4 * K, 2, "none", False),
    ("dense-2k-gqa", 16 * K, 1, "full", False),
]
# Issue 44, chosen and committed before any of it ran. "block": full recompute as Megatron-Core
# runs it (recompute.py:157-181 @ 0.19.2) beside no recompute, on two models no grid has (a
# twelve-layer hidden 2048 GQA 16/8 SwiGLU with a 64k vocabulary, 32 experts top-2 in eight
# layers): uniform over one and over several layers a checkpoint, and block over the first 2 to 9
# layers, the rest keeping every activation. "expandable": PyTorch's expandable segments
# (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True) on two more new models (hidden 3072 GQA 24/4
# SwiGLU with a 100k vocabulary, 48 experts top-4), every recompute mode, both optimizers, and on
# one block-recompute shape; three of its shapes again with the default allocator ("twin"), for
# the allocator's share alone.
ISSUE44_MODELS: dict[str, dict[str, Any]] = {
    "dense-2k-gqa8-swiglu-12l": {
        "layers": 12, "hidden": 2048, "heads": 16, "kv_heads": 8, "ffn": 5632, "gated": True,
        "experts": 0, "top_k": 0, "expert_ffn": 0, "vocab": 65536,
    },
    "moe-32x-top2-8l": {
        "layers": 8, "hidden": 2048, "heads": 16, "kv_heads": 4, "ffn": 0,
        "experts": 32, "top_k": 2, "expert_ffn": 1024, "vocab": 32768,
    },
    "dense-3k-gqa4-swiglu-100k": {
        "layers": 4, "hidden": 3072, "heads": 24, "kv_heads": 4, "ffn": 8192, "gated": True,
        "experts": 0, "top_k": 0, "expert_ffn": 0, "vocab": 100352,
    },
    "moe-48x-top4-2k": {
        "layers": 4, "hidden": 2048, "heads": 16, "kv_heads": 4, "ffn": 0,
        "experts": 48, "top_k": 4, "expert_ffn": 1024, "vocab": 65536,
    },
}
EXPANDABLE_SEGMENTS = "expandable_segments:True"
# (model, sequence, micro-batch, recompute, method, layers a checkpoint or blocked, fused Adam,
#  set)
ISSUE44_RUNS: list[tuple[str, int, int, str, str, int, bool, str]] = [
    ("dense-2k-gqa8-swiglu-12l", 4 * K, 1, "none", "", 0, True, "block"),
    ("dense-2k-gqa8-swiglu-12l", 4 * K, 1, "full", "uniform", 1, True, "block"),
    ("dense-2k-gqa8-swiglu-12l", 4 * K, 1, "full", "uniform", 3, True, "block"),
    ("dense-2k-gqa8-swiglu-12l", 4 * K, 1, "full", "block", 3, True, "block"),
    ("dense-2k-gqa8-swiglu-12l", 4 * K, 1, "full", "block", 6, True, "block"),
    ("dense-2k-gqa8-swiglu-12l", 4 * K, 1, "full", "block", 9, True, "block"),
    ("dense-2k-gqa8-swiglu-12l", 2 * K, 2, "full", "block", 4, False, "block"),
    ("moe-32x-top2-8l", 4 * K, 1, "none", "", 0, False, "block"),
    ("moe-32x-top2-8l", 4 * K, 1, "full", "uniform", 1, False, "block"),
    ("moe-32x-top2-8l", 4 * K, 1, "full", "uniform", 2, False, "block"),
    ("moe-32x-top2-8l", 4 * K, 1, "full", "block", 2, False, "block"),
    ("moe-32x-top2-8l", 4 * K, 1, "full", "block", 5, False, "block"),
    ("dense-3k-gqa4-swiglu-100k", 4 * K, 1, "none", "", 0, True, "expandable"),
    ("dense-3k-gqa4-swiglu-100k", 8 * K, 1, "full", "uniform", 1, True, "expandable"),
    ("dense-3k-gqa4-swiglu-100k", 2 * K, 2, "selective", "", 0, False, "expandable"),
    ("moe-48x-top4-2k", 4 * K, 1, "selective", "", 0, False, "expandable"),
    ("moe-48x-top4-2k", 2 * K, 2, "none", "", 0, True, "expandable"),
    ("moe-48x-top4-2k", 8 * K, 1, "full", "uniform", 1, False, "expandable"),
    ("dense-2k-gqa8-swiglu-12l", 4 * K, 1, "full", "block", 6, True, "expandable"),
    ("moe-32x-top2-8l", 4 * K, 1, "none", "", 0, False, "expandable"),
    ("dense-3k-gqa4-swiglu-100k", 4 * K, 1, "none", "", 0, True, "twin"),
    ("moe-48x-top4-2k", 4 * K, 1, "selective", "", 0, False, "twin"),
    ("moe-48x-top4-2k", 8 * K, 1, "full", "uniform", 1, False, "twin"),
]
# Multi-token prediction (MTP), chosen and committed before any of it ran: one or two prediction
# depths (mtp_num_layers; the local spec's MTP block, gpt_layer_specs.get_gpt_mtp_block_spec @
# 0.19.2) on three issue-44 models, each beside the same shape without MTP measured in the same
# call ("twin"), with no recompute, full recompute and selective recompute, and with a 100k
# vocabulary (a depth's logits). The depths share one block (mtp_use_repeated_layer, as
# Megatron-Bridge's Nemotron recipes set it), but for one run of two depths with a block each.
# What recipekit's model of the depths (head_activations, the depths' layers and logits) was
# written from the source alone is checked here.
# (model, sequence, micro-batch, recompute, depths, one shared block)
MTP_RUNS: list[tuple[str, int, int, str, int, bool]] = [
    ("dense-2k-gqa8-swiglu-12l", 4 * K, 1, "none", 0, True),
    ("dense-2k-gqa8-swiglu-12l", 4 * K, 1, "none", 1, True),
    ("dense-2k-gqa8-swiglu-12l", 4 * K, 1, "none", 2, True),
    ("dense-2k-gqa8-swiglu-12l", 4 * K, 1, "none", 2, False),
    ("dense-2k-gqa8-swiglu-12l", 4 * K, 1, "full", 2, True),
    ("moe-32x-top2-8l", 4 * K, 1, "none", 0, True),
    ("moe-32x-top2-8l", 4 * K, 1, "none", 1, True),
    ("moe-32x-top2-8l", 4 * K, 1, "none", 2, True),
    ("dense-3k-gqa4-swiglu-100k", 4 * K, 1, "none", 0, True),
    ("dense-3k-gqa4-swiglu-100k", 4 * K, 1, "none", 2, True),
    ("dense-3k-gqa4-swiglu-100k", 2 * K, 2, "selective", 1, True),
]
# Selective recompute of the modules the Super stages rebuild besides core_attn (layernorm, moe;
# and mlp for dense layers), chosen and committed before any of it ran. moe_act needs grouped
# experts (TE's or the grouped_gemm package), which the local spec cannot build here. On four
# issue-44 models, with twins without recompute in the same call.
# (model, sequence, micro-batch, recompute modules; none for no recompute)
SELECTIVE_RUNS: list[tuple[str, int, int, tuple[str, ...]]] = [
    ("dense-2k-gqa8-swiglu-12l", 4 * K, 1, ()),
    ("dense-2k-gqa8-swiglu-12l", 4 * K, 1, ("layernorm",)),
    ("dense-2k-gqa8-swiglu-12l", 4 * K, 1, ("mlp",)),
    ("dense-2k-gqa8-swiglu-12l", 4 * K, 1, ("layernorm", "mlp", "core_attn")),
    ("moe-32x-top2-8l", 4 * K, 1, ()),
    ("moe-32x-top2-8l", 4 * K, 1, ("moe",)),
    ("moe-32x-top2-8l", 4 * K, 1, ("layernorm", "moe", "core_attn")),
    ("dense-3k-gqa4-swiglu-100k", 4 * K, 1, ("layernorm", "core_attn")),
    ("moe-48x-top4-2k", 4 * K, 1, ("layernorm", "moe")),
]
# Several GPUs, one process each (torch.distributed.run), chosen and committed before any of it
# ran: the layouts real stages use, on four issue-44 models. Tensor parallelism without sequence
# parallelism (the local spec's torch norms refuse it: torch_norm.py @ 0.19.2), expert
# parallelism with the alltoall dispatcher, and the distributed optimizer sharded over the data
# parallel ranks (dense: GPUs / TP; experts: GPUs / (EP x ETP)). A one-GPU twin of the first
# model in the same call. Rank 0 is recorded, with every rank's peaks beside it.
# (model, sequence, micro-batch, recompute, GPUs, TP, EP)
PARALLEL_RUNS: list[tuple[str, int, int, str, int, int, int]] = [
    ("dense-2k-gqa8-swiglu-12l", 4 * K, 1, "none", 1, 1, 1),
    ("dense-2k-gqa8-swiglu-12l", 4 * K, 1, "none", 4, 1, 1),
    ("dense-2k-gqa8-swiglu-12l", 4 * K, 1, "none", 4, 2, 1),
    ("dense-2k-gqa8-swiglu-12l", 8 * K, 1, "full", 4, 4, 1),
    ("dense-3k-gqa4-swiglu-100k", 4 * K, 1, "selective", 4, 2, 1),
    ("moe-32x-top2-8l", 4 * K, 1, "none", 4, 1, 4),
    ("moe-32x-top2-8l", 4 * K, 2, "none", 4, 1, 2),
    ("moe-48x-top4-2k", 4 * K, 2, "full", 4, 1, 2),
    ("moe-48x-top4-2k", 4 * K, 1, "none", 2, 1, 2),
]
# MoE with TP needs sequence parallelism (moe_layer.py raises without it), which the local spec
# cannot build: the two TP 2 x EP 2 runs first chosen became EP-only after their first try.
# A hold-out of layouts on five models of the earlier hold-outs, chosen and committed before it
# ran (the estimate unchanged since the first parallel runs): as PARALLEL_RUNS.
PARALLEL_CHECK_RUNS: list[tuple[str, int, int, str, int, int, int]] = [
    ("dense-5k-gqa8-swiglu-152k", 4 * K, 1, "full", 4, 4, 1),
    ("dense-3k-gqa6-swiglu-64k", 4 * K, 2, "selective", 4, 2, 1),
    ("dense-2k-mha-160k", 8 * K, 1, "full", 2, 2, 1),
    ("moe-128x-top8-swiglu-hd64", 4 * K, 1, "full", 4, 1, 4),
    ("moe-64x-top6-3k", 4 * K, 1, "selective", 4, 1, 2),
    ("moe-32x-top4-swiglu-32k", 2 * K, 2, "none", 2, 1, 2),
]
STEPS = 3


def parallel_specs(emulate: bool = False, check: bool = False) -> list[dict[str, Any]]:
    """The multi-GPU runs (PARALLEL_RUNS, or PARALLEL_CHECK_RUNS), each with a fused Adam as
    real stages run; ``emulate``: each as rank 0 alone on one GPU (measure_one's fake process
    group)."""
    first = "parallel-check" if check else "parallel"
    return [
        _wide_spec(
            name, seq, micro, recompute, which=first if gpus > 1 else "parallel-twin",
            fused_adam=True, gpus=gpus, tp=tp, ep=ep,
            **({"emulated": True} if emulate and gpus > 1 else {}),
        )
        for name, seq, micro, recompute, gpus, tp, ep in (
            PARALLEL_CHECK_RUNS if check else PARALLEL_RUNS
        )
    ]


def selective_specs() -> list[dict[str, Any]]:
    """The selective-recompute runs (SELECTIVE_RUNS); no modules is the twin without recompute."""
    return [
        _wide_spec(name, seq, micro, "selective", which="selective", recompute_modules=modules)
        if modules
        else _wide_spec(name, seq, micro, "none", which="selective-twin")
        for name, seq, micro, modules in SELECTIVE_RUNS
    ]


def mtp_specs() -> list[dict[str, Any]]:
    """The MTP runs (MTP_RUNS): a depth count of 0 is the twin without MTP."""
    return [
        _wide_spec(
            name, seq, micro, recompute, which="mtp" if depth else "twin", mtp=depth,
            mtp_repeated=repeated,
        )
        for name, seq, micro, recompute, depth, repeated in MTP_RUNS
    ]


def wide_specs() -> list[dict[str, Any]]:
    """Every run of the wide grid, the check set's after the fit set's."""
    specs = [_wide_spec(*run[:4], which=run[4]) for run in WIDE_RUNS]
    specs.sort(key=lambda spec: spec["set"] != "fit")
    specs += [
        _wide_spec(*run, which="allocator", alloc_conf="expandable_segments:True")
        for run in EXPANDABLE
    ]
    return specs


_ALL_MODELS = {
    **WIDE_MODELS, **HOLDOUT_MODELS, **HOLDOUT3_MODELS, **HOLDOUT4_MODELS, **HOLDOUT5_MODELS,
    **ISSUE44_MODELS,
}


def _wide_spec(
    name: str, seq: int, micro: int, recompute: str, *, which: str, **extra: Any
) -> dict[str, Any]:
    """One run of a wide-grid model: the model's sizes, the shape, its set."""
    return {
        "name": name, **_ALL_MODELS[name], "seq": seq,
        "micro_batch": micro,
        "recompute": recompute, "set": which, **extra,
    }  # fmt: skip


def fused_adam_specs(check: bool = False) -> list[dict[str, Any]]:
    """The wide-grid shapes of FUSED_ADAM (or FUSED_ADAM_CHECK), with a fused Adam."""
    which = "fused-check" if check else "fused"
    return [
        _wide_spec(*run, which=which, fused_adam=True)
        for run in (FUSED_ADAM_CHECK if check else FUSED_ADAM)
    ]


def holdout_specs(which: str = "check2") -> list[dict[str, Any]]:
    """A hold-out's runs (HOLDOUT_RUNS as "check2", HOLDOUT3_RUNS as "check3", ...)."""
    runs = {
        "check3": HOLDOUT3_RUNS, "check4": HOLDOUT4_RUNS, "check5": HOLDOUT5_RUNS,
        "traced": TRACED_RUNS,
    }.get(which, HOLDOUT_RUNS)
    extra = {"trace": True} if which == "traced" else {}
    return [
        _wide_spec(name, seq, micro, recompute, which=which, fused_adam=fused, **extra)
        for name, seq, micro, recompute, fused in runs
    ]


def issue44_specs() -> list[dict[str, Any]]:
    """The block-recompute and expandable-segments runs (ISSUE44_RUNS), in that order."""
    specs = []
    for name, seq, micro, recompute, method, layers, fused, which in ISSUE44_RUNS:
        extra: dict[str, Any] = {"fused_adam": fused}
        if recompute == "full":
            extra |= {"recompute_method": method, "recompute_num_layers": layers}
        if which == "expandable":
            extra["alloc_conf"] = EXPANDABLE_SEGMENTS
        if which in ("expandable", "twin"):
            # The allocator's own events of two steps (sizes, addresses, segments mapped), to
            # replay through recipekit's model of each allocator.
            extra["trace"] = True
        specs.append(_wide_spec(name, seq, micro, recompute, which=which, **extra))
    return specs


class _Done:
    """The handle of an asynchronous collective that has already happened."""

    def wait(self) -> bool:
        return True


def _mirror_collectives() -> None:
    """Collectives as if every rank of the group held what this one holds (the ranks of one
    layout are alike but for their data): a gather repeats this rank's part, an all-to-all
    receives from each rank the part this one sends to the first, a reduction keeps its input.
    So the fake process group's buffers carry values a rank could hold (the token counts an
    expert-parallel dispatcher sizes its buffers by), and their sizes are the real rank's."""
    import torch.distributed as dist  # pants: no-infer-dep

    def done(async_op: bool = False) -> Any:
        return _Done() if async_op else None

    def all_gather_into_tensor(
        output: Any, input: Any, group: Any = None, async_op: bool = False
    ) -> Any:
        flat = input.reshape(-1)
        output.view(-1).copy_(flat.repeat(output.numel() // max(flat.numel(), 1)))
        return done(async_op)

    def reduce_scatter_tensor(
        output: Any, input: Any, op: Any = None, group: Any = None, async_op: bool = False
    ) -> Any:
        output.view(-1).copy_(input.reshape(-1)[: output.numel()])
        return done(async_op)

    def all_to_all_single(
        output: Any, input: Any, output_split_sizes: Any = None, input_split_sizes: Any = None,
        group: Any = None, async_op: bool = False,
    ) -> Any:
        size = dist.get_world_size(group)
        # The splits are a list or an array (whose truth is ambiguous): test its length.
        given = input_split_sizes is not None and len(input_split_sizes) > 0
        first = input[: int(input_split_sizes[0])] if given else input.chunk(size)[0]
        if output.numel() == first.numel() * size:
            output.copy_(first.repeat(size, *[1] * (first.dim() - 1)).view_as(output))
        return done(async_op)

    def all_gather(
        tensors: list[Any], tensor: Any, group: Any = None, async_op: bool = False
    ) -> Any:
        for each in tensors:
            each.copy_(tensor)
        return done(async_op)

    def unchanged(tensor: Any, *args: Any, async_op: bool = False, **kwargs: Any) -> Any:
        return done(async_op)

    dist.all_gather_into_tensor = all_gather_into_tensor
    dist._all_gather_base = all_gather_into_tensor
    dist.reduce_scatter_tensor = reduce_scatter_tensor
    dist._reduce_scatter_base = reduce_scatter_tensor
    dist.all_to_all_single = all_to_all_single
    dist.all_gather = all_gather
    dist.all_reduce = unchanged
    dist.broadcast = unchanged


def measure_one(spec: dict[str, Any]) -> dict[str, Any] | None:
    """One model, one layout, in this process: the bytes of each term (None on a rank other
    than 0 of a multi-GPU run, which rank 0 reports for)."""
    import torch  # pants: no-infer-dep
    import torch.distributed as dist  # pants: no-infer-dep

    emulated = bool(spec.get("emulated"))
    if emulated:
        # Before Megatron-Core's modules take their aliases of the collectives (mappings.py,
        # param_and_grad_buffer.py: dist_all_gather_func = torch.distributed....).
        _mirror_collectives()
    from megatron.core import distributed as ddp  # pants: no-infer-dep
    from megatron.core import optimizer as mcore_optimizer  # pants: no-infer-dep
    from megatron.core import parallel_state  # pants: no-infer-dep
    from megatron.core.models.gpt import gpt_layer_specs  # pants: no-infer-dep
    from megatron.core.models.gpt.gpt_model import GPTModel  # pants: no-infer-dep
    from megatron.core.tensor_parallel import random as mcore_random  # pants: no-infer-dep
    from megatron.core.transformer import transformer_config  # pants: no-infer-dep
    from megatron.core.transformer.module import Float16Module  # pants: no-infer-dep

    DistributedDataParallel = ddp.DistributedDataParallel
    DistributedDataParallelConfig = ddp.DistributedDataParallelConfig
    get_gpt_layer_local_spec = gpt_layer_specs.get_gpt_layer_local_spec
    OptimizerConfig, get_megatron_optimizer = (
        mcore_optimizer.OptimizerConfig,
        mcore_optimizer.get_megatron_optimizer,
    )
    model_parallel_cuda_manual_seed = mcore_random.model_parallel_cuda_manual_seed
    TransformerConfig = transformer_config.TransformerConfig
    gelu = torch.nn.functional.gelu

    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29517")
    # One process a GPU under torch.distributed.run (a run with "gpus"), else this one alone.
    world, rank = int(os.environ.get("WORLD_SIZE", "1")), int(os.environ.get("RANK", "0"))
    tp, ep = spec.get("tp", 1), spec.get("ep", 1)
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    if emulated:
        # Rank 0 of the layout alone on one GPU: PyTorch's fake process group returns from every
        # collective without moving data, so each buffer a collective fills is allocated as on
        # the real rank, its values not. No NCCL buffers: outside_pytorch is not the real one's.
        from torch.testing._internal.distributed import fake_pg  # pants: no-infer-dep

        world = spec["gpus"]
        dist.init_process_group("fake", rank=0, world_size=world, store=fake_pg.FakeStore())
    else:
        dist.init_process_group("nccl", rank=rank, world_size=world)
    parallel_state.initialize_model_parallel(
        tp,
        1,
        expert_model_parallel_size=ep,
        expert_tensor_parallel_size=1,
        create_gloo_process_groups=not emulated,
    )
    model_parallel_cuda_manual_seed(1234)
    cuda = torch.cuda
    torch.ones(1, device="cuda")  # the CUDA context, before any model or NCCL buffer
    free, total = cuda.mem_get_info()
    context = (total - free) - cuda.memory_reserved()
    base = cuda.memory_allocated()

    moe = spec["experts"] > 0
    config = TransformerConfig(
        num_layers=spec["layers"],
        hidden_size=spec["hidden"],
        num_attention_heads=spec["heads"],
        num_query_groups=spec["kv_heads"],
        ffn_hidden_size=spec["expert_ffn"] if moe else spec["ffn"],
        num_moe_experts=spec["experts"] or None,
        moe_router_topk=spec["top_k"] or 2,
        # Megatron-Core refuses top-1 routing with the softmax after the top-k (a constant 1).
        moe_router_pre_softmax=spec["top_k"] == 1,
        moe_token_dispatcher_type="alltoall",
        moe_aux_loss_coeff=0.0,
        tensor_model_parallel_size=tp,
        expert_model_parallel_size=ep,
        expert_tensor_parallel_size=1,
        add_bias_linear=False,
        hidden_dropout=0.0,
        attention_dropout=0.0,
        normalization="RMSNorm",
        bf16=True,
        params_dtype=torch.bfloat16,
        pipeline_dtype=torch.bfloat16,
        gated_linear_unit=spec.get("gated", False),
        activation_func=torch.nn.functional.silu if spec.get("gated") else gelu,
        recompute_granularity=None if spec["recompute"] == "none" else spec["recompute"],
        recompute_method=spec.get("recompute_method", "uniform")
        if spec["recompute"] == "full"
        else None,
        recompute_num_layers=spec.get("recompute_num_layers", 1)
        if spec["recompute"] == "full"
        else None,
        recompute_modules=list(spec["recompute_modules"]) if "recompute_modules" in spec else None,
        mtp_num_layers=spec.get("mtp") or None,
        mtp_use_repeated_layer=bool(spec.get("mtp") and spec.get("mtp_repeated", True)),
    )
    layer_spec = get_gpt_layer_local_spec(
        num_experts=spec["experts"] or None, moe_grouped_gemm=False, normalization="RMSNorm"
    )
    mtp_block_spec = (
        gpt_layer_specs.get_gpt_mtp_block_spec(config, layer_spec, use_transformer_engine=False)
        if spec.get("mtp")
        else None
    )
    model = GPTModel(
        config=config,
        transformer_layer_spec=layer_spec,
        vocab_size=spec["vocab"],
        max_sequence_length=spec["seq"],
        position_embedding_type="none",
        mtp_block_spec=mtp_block_spec,
    ).cuda()
    model = Float16Module(config, model)
    weights = cuda.memory_allocated() - base
    ddp_config = DistributedDataParallelConfig(
        grad_reduce_in_fp32=True, use_distributed_optimizer=True, overlap_grad_reduce=False
    )
    model = DistributedDataParallel(config, ddp_config, model)
    gradients = cuda.memory_allocated() - base - weights
    if spec.get("fused_adam"):
        # Without TE or Apex, Megatron-Core builds torch.optim.AdamW by that name when it builds
        # the optimizer (optimizer/__init__.py:557): a fused one in its place, in this process.
        unfused = torch.optim.AdamW

        class FusedAdamW(unfused):  # type: ignore[misc, valid-type]
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                kwargs.pop("foreach", None)
                super().__init__(*args, **{**kwargs, "fused": True})

        torch.optim.AdamW = FusedAdamW
    optimizer = get_megatron_optimizer(
        OptimizerConfig(
            optimizer="adam", lr=1e-5, bf16=True, use_distributed_optimizer=True,
            params_dtype=torch.bfloat16,
        ),
        [model],
        # The fake process group has no Gloo twin (initialize_model_parallel made none).
        use_gloo_process_groups=not emulated,
    )
    master = cuda.memory_allocated() - base - weights - gradients

    seq, micro = spec["seq"], spec["micro_batch"]
    tokens = torch.randint(0, spec["vocab"], (micro, seq), device="cuda")
    position = torch.arange(seq, device="cuda").unsqueeze(0).expand(micro, -1)
    mask = torch.ones(1, 1, seq, seq, dtype=torch.bool, device="cuda").tril().logical_not()

    # With ``trace``, the allocator's own event history (torch.cuda.memory._record_memory_history)
    # of the first two steps, each phase's start marked by the event count there.
    marks: list[tuple[str, int]] = []

    def mark(phase: str) -> None:
        if spec.get("trace"):
            marks.append((phase, len(cuda.memory._snapshot()["device_traces"][0])))

    def step(record: dict[str, int] | None) -> dict[str, int]:
        model.zero_grad_buffer()
        optimizer.zero_grad()
        before = cuda.memory_allocated()
        cuda.reset_peak_memory_stats()
        mark("forward")
        loss = model(tokens, position, mask, labels=tokens).float().mean()
        stored = cuda.memory_allocated() - before
        mark("backward")
        loss.backward()
        cuda.synchronize()
        backward_peak = cuda.max_memory_allocated() - before
        mark("optimizer")
        optimizer.step()
        cuda.synchronize()
        mark("end")
        if record is not None:
            record["stored_activations"] = stored
            record["step_peak_over_state"] = cuda.max_memory_allocated() - before
        return {
            "backward_peak_over_state": backward_peak,
            "step_peak_over_state": cuda.max_memory_allocated() - before,
            "reserved": cuda.memory_reserved(),
        }

    steps = []
    if spec.get("trace"):
        cuda.memory._record_memory_history(
            enabled="all", context="alloc", stacks="python", max_entries=2_000_000
        )
    state_before = cuda.memory_allocated()
    steps.append(step(None))  # Adam's moments are allocated by the first step
    moments = cuda.memory_allocated() - state_before
    # The optimizer's own tensors, counted one by one: its fp32 master weights (the keys of its
    # state) and Adam's two moments. The allocation delta above also holds anything else the
    # first step left allocated.
    # Expert parallelism chains a second optimizer (the experts' data-parallel group differs).
    inners = [
        getattr(chained, "optimizer", chained)
        for chained in getattr(optimizer, "chained_optimizers", None) or [optimizer]
    ]
    inner = inners[0]
    counted = 0
    optimizer_tensors = 0
    for param, state in (item for each in inners for item in each.state.items()):
        counted += param.numel() * param.element_size()
        held = [t for t in state.values() if torch.is_tensor(t) and t.numel() > 1]
        counted += sum(t.numel() * t.element_size() for t in held)
        optimizer_tensors += 1 + len(held)
    record: dict[str, int] = {}
    steps.append(step(record))
    trace = _allocator_trace(marks) if spec.get("trace") else None
    for _ in range(spec.get("steps", STEPS) - 2):
        steps.append(step(None))
    free, total = cuda.mem_get_info()
    stats = cuda.memory_stats()
    result = {
        **spec,
        "weights": weights,
        "gradients": gradients,
        "optimizer": counted,
        "optimizer_allocated": master + moments,
        "optimizer_tensors": optimizer_tensors,
        **record,
        "backward_peak_over_state": steps[1]["backward_peak_over_state"],
        "steps": steps,
        "peak_allocated": cuda.max_memory_allocated() - base,
        "reserved": cuda.memory_reserved(),
        "max_reserved": cuda.max_memory_reserved(),
        "outside_pytorch": (total - free) - cuda.memory_reserved(),
        "context": context,
        "allocator": {
            key: stats.get(key, 0)
            for key in (
                "requested_bytes.all.peak", "allocated_bytes.all.peak",
                "reserved_bytes.all.peak", "reserved_bytes.small_pool.peak",
                "reserved_bytes.large_pool.peak", "inactive_split_bytes.all.peak",
                "segment.all.peak", "segment.large_pool.peak", "active.all.peak",
                "num_alloc_retries",
            )
        },
        **({"trace": trace} if trace is not None else {}),
        "adam": f"{type(inner).__name__} fused={inner.defaults.get('fused')}",
        "gpu": cuda.get_device_name(),
        "torch": torch.__version__,
    }
    if world > 1 and not emulated:
        # Every rank's own peaks: ranks of one layout differ by the routing of their tokens.
        mine = {
            key: result[key]
            for key in ("peak_allocated", "reserved", "stored_activations", "outside_pytorch")
        }
        ranks: list[Any] = [None] * world
        dist.all_gather_object(ranks, mine)
        result["ranks"] = ranks
    dist.destroy_process_group()
    return result if rank == 0 else None


def _allocator_trace(marks: list[tuple[str, int]]) -> dict[str, Any]:
    """The allocator's events of the traced steps, small enough to keep: per event its action,
    size, address and the innermost Megatron-Core frame that asked (file:line function); the
    phase marks (event index where each phase began); and the segments as they stand after the
    second step (reserved memory never shrinks, so that is the peak's layout): per segment its
    size and its blocks' sizes, allocated or not."""
    import torch  # pants: no-infer-dep

    snapshot = torch.cuda.memory._snapshot()
    torch.cuda.memory._record_memory_history(enabled=None)
    keep = {
        "alloc": "a", "free_completed": "f", "segment_alloc": "s", "segment_free": "x",
        # expandable segments map and unmap pages of one segment instead
        "segment_map": "m", "segment_unmap": "u",
    }  # fmt: skip
    events = []
    for entry in snapshot["device_traces"][0]:
        action = keep.get(entry["action"])
        if action is None:
            continue
        where = ""
        for frame in entry.get("frames", []):
            name = frame.get("filename", "")
            if "megatron/core/" in name:
                where = f"{name.split('megatron/core/')[1]}:{frame['line']}:{frame['name']}"
                break
        events.append([action, entry["size"], entry["addr"], where])
    segments = [
        [segment["total_size"], [[block["size"], block["state"] == "active_allocated"]
                                 for block in segment["blocks"]]]
        for segment in snapshot["segments"]
    ]
    return {"marks": marks, "events": events, "segments": segments}


def measure(
    out: Path, grid: str, only: str | None, pick: str, budget_s: float, emulate: bool = False
) -> int:
    """Each run in its own process; the file is rewritten after each run, so a run cut short by
    the budget or the device's time limit keeps what it measured."""
    if grid == "first":
        specs = [
            {"name": name, **model, "seq": seq, "micro_batch": micro, "recompute": recompute,
             "set": "fit"}
            for name, model in MODELS.items()
            for seq, micro, recompute in RUNS
        ]
    elif grid in ("fused", "fused-check"):
        specs = fused_adam_specs(check=grid == "fused-check")
    elif grid in ("check2", "check3", "check4", "check5", "traced"):
        specs = holdout_specs(grid)
    elif grid == "issue44":
        specs = issue44_specs()
    elif grid == "mtp":
        specs = mtp_specs()
    elif grid == "selective":
        specs = selective_specs()
    elif grid in ("parallel", "parallel-check"):
        specs = parallel_specs(emulate, check=grid == "parallel-check")
    else:
        specs = wide_specs()
    if only:
        specs = [spec for spec in specs if spec["set"] == only]
    if pick:
        wanted = {tuple(item.split(":")) for item in pick.split(",")}
        specs = [
            spec for spec in specs
            if (spec["name"], str(spec["seq"]), str(spec["micro_batch"]), spec["recompute"])
            in wanted
        ]
    results: list[dict[str, Any]] = []
    out.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    for index, spec in enumerate(specs, 1):
        if time.monotonic() - started > budget_s:
            print(f"budget of {budget_s:.0f} s spent: {len(specs) - index + 1} runs left out")
            break
        method = (f" {spec['recompute_method']} {spec['recompute_num_layers']}"
                  if "recompute_method" in spec else "")
        print(f"[{index}/{len(specs)}] {spec['set']} {spec['name']} seq {spec['seq']} x "
              f"{spec['micro_batch']} recompute {spec['recompute']}{method}"
              f" {spec.get('alloc_conf', '')}", flush=True)
        env = dict(os.environ)
        if "alloc_conf" in spec:
            env["PYTORCH_CUDA_ALLOC_CONF"] = spec["alloc_conf"]
        one_started = time.monotonic()
        launch = [sys.executable]
        if spec.get("gpus", 1) > 1 and not spec.get("emulated"):
            launch += ["-m", "torch.distributed.run", "--standalone",
                       f"--nproc_per_node={spec['gpus']}"]  # fmt: skip
        done = subprocess.run(
            [*launch, __file__, "one", json.dumps(spec)],
            capture_output=True, text=True, check=False, env=env,
        )
        seconds = round(time.monotonic() - one_started, 1)
        if done.returncode != 0:
            print(done.stderr[-3000:], file=sys.stderr)
            results.append({**spec, "error": done.stderr[-500:], "seconds": seconds})
        else:
            results.append({**json.loads(done.stdout.strip().splitlines()[-1]),
                            "seconds": seconds})
        text = json.dumps({"runs": results}, indent=1) + "\n"
        if out.suffix == ".gz":  # a traced grid: megabytes of events
            out.write_bytes(gzip.compress(text.encode()))
        else:
            out.write_text(text)
    print(f"wrote {out}")
    return 0


def run_architecture_setup(run: dict[str, Any]) -> tuple[Architecture, MegatronSetup]:
    """The run's model and layout as recipekit describes them."""
    from recipekit.memory.megatron import MegatronSetup
    from recipekit.model_card import Architecture, MoE
    from recipekit.parallelism import ParallelLayout

    moe = run["experts"] > 0
    depth = run.get("mtp", 0)
    arch = Architecture(
        name=run["name"],
        pattern=("*E" if moe else "*-") * run["layers"],
        # The local spec's MTP depth is the decoder's last layer again (get_gpt_mtp_block_spec).
        mtp_pattern=("*E" if moe else "*-") if depth else "",
        mtp_depth=depth,
        hidden=run["hidden"],
        vocab=run["vocab"],
        attention_heads=run["heads"],
        kv_heads=run["kv_heads"],
        head_dim=run["hidden"] // run["heads"],
        ffn=run["ffn"],
        gated_mlp=run.get("gated", False),
        # measure_one's gated_linear_unit makes every MLP gated, the experts' too.
        moe=MoE(
            num_experts=run["experts"],
            top_k=run["top_k"],
            expert_ffn=run["expert_ffn"],
            gated=run.get("gated", False),
        )
        if moe
        else None,
    )
    gpus, tp, ep = run.get("gpus", 1), run.get("tp", 1), run.get("ep", 1)
    setup = MegatronSetup(
        parallel=ParallelLayout(gpus=gpus, tp=tp, ep=ep, etp=1, sp=False),
        tokens=run["seq"] * run["micro_batch"],
        sequence=run["seq"],
        recompute=run["recompute"],
        recompute_modules=tuple(run.get("recompute_modules", ("core_attn",))),
        recompute_method=run.get("recompute_method", "uniform"),
        recompute_num_layers=run.get("recompute_num_layers", 1),
        # PYTORCH_CUDA_ALLOC_CONF as measure set it for the run's process
        expandable_segments="expandable_segments:True" in run.get("alloc_conf", ""),
        fused_attention=False,  # the local spec's attention is unfused
        transformer_engine=False,  # get_gpt_layer_local_spec: separate norms, SequentialMLP
        # no Transformer Engine or Apex: torch's AdamW, or its fused kernel (FUSED_ADAM)
        fused_adam=bool(run.get("fused_adam", False)),
        mtp=bool(depth),
        mtp_shared=run.get("mtp_repeated", True),
    )
    return arch, setup


def estimate(run: dict[str, Any]) -> dict[str, float]:
    """recipekit's terms for the run's model and layout (bytes)."""
    from recipekit.memory.megatron import ALLOCATOR, training_terms

    arch, setup = run_architecture_setup(run)
    terms = {t.name: t.bytes for t in training_terms(arch, setup)}
    # After the forward pass the bf16 logits are gone; the fp32 ones stay for the loss's backward,
    # the model's and each MTP depth's.
    depths = 1 + run.get("mtp", 0)
    # Vocabulary-parallel: a rank holds its TP share of each token's logits.
    fp32_logits = depths * run["seq"] * run["micro_batch"] * run["vocab"] * 4 / run.get("tp", 1)
    stored = terms.get("activations", 0.0) + fp32_logits
    allocated = sum(
        v for k, v in terms.items() if not k.startswith("runtime") and k != ALLOCATOR
    )
    return {
        "weights": terms["weights (bf16)"],
        "gradients": terms["gradients (fp32)"],
        "optimizer": terms["optimizer state (Adam)"],
        "stored_activations": stored,
        "peak_allocated": allocated,
        "allocator": terms[ALLOCATOR],
        "outside_pytorch": terms["runtime (CUDA, NCCL)"],
        "whole_gpu": sum(terms.values()),
    }


def measured(run: dict[str, Any], term: str) -> float:
    """The run's measurement of a term: the allocator's share is what it reserved beyond the
    allocated peak, the whole GPU what it reserved and what lies outside PyTorch."""
    if term == "allocator":
        return float(run["reserved"] - run["peak_allocated"])
    if term == "whole_gpu":
        return float(run["reserved"] + run["outside_pytorch"])
    return float(run[term])


TERMS = ("weights", "gradients", "optimizer", "stored_activations", "peak_allocated", "whole_gpu")
# Each file's runs, and which of them the estimate's constants were chosen on: every run of the
# first grid, and the wide grid's "fit" runs; its "check" runs only check. The "allocator" runs
# (PyTorch's expandable segments) are in neither set.
# The "fused" runs (fused_adam_specs: a fused Adam, as real stages run) are in neither set: they
# were measured after the constants were chosen, so they check the estimate stages get.
FILES = (
    "h200-megatron-core-0.19.2.json",
    "h200-megatron-core-0.19.2-wide.json",
    "h200-megatron-core-0.19.2-fused-adam.json",
    "h200-megatron-core-0.19.2-fused-adam-check.json",
    "h200-megatron-core-0.19.2-check2.json",
    "h200-megatron-core-0.19.2-check3.json",
    "h200-megatron-core-0.19.2-check4.json",
    # Measured on an H100 80GB (the lent machine that day): the same bytes per term, and the four
    # runs past its 79.2 GiB an OOM each (their errors kept); those four measured again on an
    # H200 the same afternoon, in the next file.
    "h100-megatron-core-0.19.2-check5.json",
    "h200-megatron-core-0.19.2-check5.json",
    # Issue 44 (ISSUE44_RUNS), on a lent H100 80GB: "block" (block recompute beside uniform and
    # none), "expandable" (PyTorch's expandable segments) and "twin" (three of those shapes with
    # the default allocator); chosen and committed before they ran, none fitted on.
    "h100-megatron-core-0.19.2-issue44.json",
)


def measured_runs(which: str) -> list[dict[str, Any]]:
    """The measured runs of one set ("fit" or "check") over every file in tools/calibration/."""
    here = Path(__file__).parent / "calibration"
    runs = [
        {"set": "fit", **run}
        for name in FILES
        for run in json.loads((here / name).read_text())["runs"]
    ]
    return [run for run in runs if run["set"] == which and "error" not in run]


def errors(runs: list[dict[str, Any]]) -> dict[str, list[float]]:
    """Per term, the relative error (estimate - measured) / measured of every run."""
    found: dict[str, list[float]] = {term: [] for term in TERMS}
    for run in runs:
        if "error" in run:
            continue
        guess = estimate(run)
        for term in TERMS:
            found[term].append((guess[term] - measured(run, term)) / measured(run, term))
    return found


def compare(path: Path) -> int:
    runs = json.loads(path.read_text())["runs"]
    print("| run | set | term | measured GiB | estimate GiB | error |")
    print("|---|---|---|---|---|---|")
    for run in runs:
        label = f"{run['name']} s{run['seq']} b{run['micro_batch']} {run['recompute']}"
        which = run.get("set", "fit")
        if "error" in run:
            print(f"| {label} | {which} | failed | | | |")
            continue
        guess = estimate(run)
        for term in (*TERMS[:-1], "allocator", "outside_pytorch", "whole_gpu"):
            got, want = measured(run, term), guess[term]
            print(f"| {label} | {which} | {term} | {got / GIB:.3f} | {want / GIB:.3f} | "
                  f"{100 * (want - got) / got:+.0f}% |")
    print()
    for which in sorted({run.get("set", "fit") for run in runs}):
        chosen = [run for run in runs if run.get("set", "fit") == which]
        found = errors(chosen)
        print(f"{which} set, {len(found['weights'])} runs:")
        for term, values in found.items():
            if not values:
                continue
            low, high = 100 * min(values), 100 * max(values)
            if term == "whole_gpu":
                print("  whole GPU (reserved + outside PyTorch):"
                      f" error {low:+.0f}% to {high:+.0f}%")
            else:
                print(f"  {term}: error {low:+.0f}% to {high:+.0f}%")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("measure", help="on a GPU: measure every run, write JSON")
    run.add_argument("--out", type=Path, required=True)
    run.add_argument(
        "--grid",
        choices=(
            "first", "wide", "fused", "fused-check", "check2", "check3", "check4", "check5",
            "traced", "issue44", "mtp", "selective", "parallel", "parallel-check",
        ),
        default="wide",
    )
    run.add_argument("--set", choices=("fit", "check", "allocator"), dest="only",
                     help="only the runs of this set")
    run.add_argument("--pick", default="", help="only these runs: NAME:SEQ:MICRO:RECOMPUTE,...")
    run.add_argument("--budget-s", type=float, default=1e9,
                     help="start no run after this many seconds")
    run.add_argument("--emulate", action="store_true",
                     help="--grid parallel on one GPU: each run as its rank 0 alone")
    one = sub.add_parser("one", help="(internal) measure one run in this process")
    one.add_argument("spec")
    cmp = sub.add_parser("compare", help="measured against recipekit's estimate")
    cmp.add_argument("file", type=Path)
    args = parser.parse_args()
    if args.command == "measure":
        return measure(args.out, args.grid, args.only, args.pick, args.budget_s, args.emulate)
    if args.command == "one":
        result = measure_one(json.loads(args.spec))
        if result is not None:
            print(json.dumps(result))
        return 0
    return compare(args.file)


if __name__ == "__main__":
    sys.exit(main())
