#!/usr/bin/env python3
"""Measure what the cross entropy of several prediction depths keeps and peaks at, on one GPU.

The memory estimate's "logits and loss" term (recipekit/memory/megatron.py, _logits) keeps 4
bytes a logit per prediction depth (the fp32 softmax the vocabulary-parallel cross entropy saves
for its backward pass) and 2 more for the bf16 logits of the depth being scored. Two of Megatron
-Bridge's published Lightning runs that the estimate is under on use Megatron-Core's ``native``
fused cross entropy, whose steps are ``torch.compile``d (megatron/core/jit.py: jit_fuser) and
update their fp32 copy in place (fusions/fused_cross_entropy.py, tensor_parallel/
cross_entropy.py); whether a compiled in-place update takes a buffer of its own is what this
measures (4 more bytes a logit at the peak if it does: 2 GiB a depth at 4096 tokens; on an
H100 on 2026-12-06 it did, and the estimate counts it for ``native``). The GB200
runs use Transformer Engine's (``te``), which keeps an fp32 gradient from TE 2.18 on and the
bf16 logits before (docs/design/memory-model.md, "What is still not explained").

On the device machine, with PyTorch and the megatron-core wheel (Transformer Engine optional:
its implementation is measured where it imports):

    python3 tools/calibrate_memory_loss.py measure --out tools/calibration/h100-loss.json

runs, one process per implementation (``native``, ``unfused``, ``te``), three depths of 4096
tokens over Lightning's 131072-entry vocabulary as Megatron-Core's MTP runs them (each depth's
bf16 logits from an output-layer matmul, scored, then dropped), and records the bytes allocated
after each depth and the peak of the forward and of the backward pass. Anywhere:

    python3 tools/calibrate_memory_loss.py compare tools/calibration/h100-loss.json

prints, per implementation, the bytes a logit kept per depth and at the peak beside the
estimate's (4, and 4 x depths + 2).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

# Lightning's shape (recipekit.model_card.NEMOTRON_35_LIGHTNING_30B): hidden 2688, vocabulary
# 131072, the model's depth and MTP's two; 4096 tokens a rank, as sft.GB200 and pretrain.H100.
HIDDEN, VOCAB, DEPTHS, TOKENS = 2688, 131072, 3, 4096
IMPLEMENTATIONS = ("native", "unfused", "te")


def measure_one(implementation: str, tokens: int = TOKENS) -> dict[str, Any] | None:
    """One implementation in this process: bytes allocated after each depth, and the peaks."""
    import torch  # pants: no-infer-dep
    import torch.distributed as dist  # pants: no-infer-dep
    from megatron.core import parallel_state  # pants: no-infer-dep

    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29523")
    torch.cuda.set_device(0)
    dist.init_process_group("nccl", rank=0, world_size=1)
    parallel_state.initialize_model_parallel(1, 1)
    group = parallel_state.get_tensor_model_parallel_group()
    te_version = ""
    if implementation == "native":
        from megatron.core.fusions.fused_cross_entropy import (
            fused_vocab_parallel_cross_entropy,  # pants: no-infer-dep
        )

        def loss_of(logits: Any, labels: Any) -> Any:
            return fused_vocab_parallel_cross_entropy(logits, labels, group)
    elif implementation == "unfused":
        from megatron.core import tensor_parallel  # pants: no-infer-dep

        def loss_of(logits: Any, labels: Any) -> Any:
            return tensor_parallel.vocab_parallel_cross_entropy(logits, labels)
    else:
        try:
            import transformer_engine  # type: ignore[import-not-found]  # pants: no-infer-dep
            from transformer_engine.pytorch.cross_entropy import (  # type: ignore[import-not-found]  # noqa: E501
                parallel_cross_entropy,  # pants: no-infer-dep
            )
        except ImportError:
            return None
        te_version = str(getattr(transformer_engine, "__version__", ""))

        def loss_of(logits: Any, labels: Any) -> Any:
            return parallel_cross_entropy(logits, labels, 0.0, False, group)

    cuda = torch.cuda
    weight = torch.randn(VOCAB, HIDDEN, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    hidden = [
        torch.randn(tokens, 1, HIDDEN, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        for _ in range(DEPTHS)
    ]
    labels = torch.randint(0, VOCAB, (tokens, 1), device="cuda")
    # A first pass compiles the fused steps; the measured one follows.
    for measured in (False, True):
        cuda.synchronize()
        cuda.empty_cache()
        cuda.reset_peak_memory_stats()
        base = cuda.memory_allocated()
        after: list[int] = []
        losses = []
        for depth in range(DEPTHS):
            logits = torch.matmul(hidden[depth], weight.t())  # the output layer, bf16
            losses.append(loss_of(logits, labels).sum())
            del logits  # Megatron-Core's loop drops each depth's logits once it is scored
            cuda.synchronize()
            after.append(cuda.memory_allocated() - base)
        forward_peak = cuda.max_memory_allocated() - base
        cuda.reset_peak_memory_stats()
        torch.stack(losses).sum().backward()
        cuda.synchronize()
        backward_peak = cuda.max_memory_allocated() - base
        del losses
        weight.grad = None
        for h in hidden:
            h.grad = None
        if measured:
            return {
                "implementation": implementation,
                "transformer_engine": te_version,
                "torch": torch.__version__,
                "device": cuda.get_device_name(0),
                "tokens": tokens,
                "vocab": VOCAB,
                "depths": DEPTHS,
                "allocated_after_depth": after,
                "forward_peak": forward_peak,
                "backward_peak": backward_peak,
            }
    return None


def measure(out: Path) -> int:
    """Each implementation in a process of its own (the NCCL group and the compile caches)."""
    runs = []
    for implementation in IMPLEMENTATIONS:
        done = subprocess.run(
            [sys.executable, __file__, "one", implementation],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            print(done.stderr[-2000:], file=sys.stderr)
            continue
        record = json.loads(done.stdout.strip().splitlines()[-1])
        if record:
            runs.append(record)
    out.write_text(json.dumps({"runs": runs}, indent=1) + "\n")
    print(f"wrote {out}: {len(runs)} implementations")
    return 0 if runs else 1


def per_logit(run: dict[str, Any]) -> dict[str, float]:
    """The run's bytes a logit: kept per depth (the last depth's allocation over the depths) and
    at the forward's and backward's peaks."""
    logits = run["tokens"] * run["vocab"]
    return {
        "kept_per_depth": run["allocated_after_depth"][-1] / run["depths"] / logits,
        "forward_peak": run["forward_peak"] / logits,
        "backward_peak": run["backward_peak"] / logits,
    }


def estimated_peak(run: dict[str, Any]) -> int:
    """The estimate's bytes a logit at the loss's peak for the run's implementation."""
    from recipekit.memory.megatron import loss_peak_per_logit

    return loss_peak_per_logit(run["depths"], run["implementation"])


def compare(path: Path) -> int:
    # The estimate keeps each depth's logits in fp32 (recipekit/memory/megatron.py, _logits).
    from recipekit.memory.megatron import FP32

    data = json.loads(path.read_text())
    for run in data["runs"]:
        got = per_logit(run)
        estimate_peak = estimated_peak(run)
        print(
            f"{run['implementation']:8s} kept {got['kept_per_depth']:.2f} B/logit a depth"
            f" (estimate {FP32}); forward peak {got['forward_peak']:.2f} B/logit"
            f" (estimate {estimate_peak}); backward peak {got['backward_peak']:.2f}, the"
            f" weight's and inputs' gradients included"
        )
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    verbs = parser.add_subparsers(dest="verb", required=True)
    run = verbs.add_parser("measure", help="every implementation, one process each (a GPU)")
    run.add_argument("--out", type=Path, required=True)
    one = verbs.add_parser("one", help="one implementation in this process (JSON on stdout)")
    one.add_argument("implementation", choices=IMPLEMENTATIONS)
    cmp = verbs.add_parser("compare", help="a measured file beside the estimate")
    cmp.add_argument("file", type=Path)
    args = parser.parse_args()
    if args.verb == "measure":
        return measure(args.out)
    if args.verb == "one":
        print(json.dumps(measure_one(args.implementation)))
        return 0
    return compare(args.file)


if __name__ == "__main__":
    sys.exit(main())
