#!/usr/bin/env python3
"""Megatron-Bridge's own measured runs of Nemotron 3.5 Lightning, as recipekit's layouts, beside
recipekit's estimate: the published check set of the memory estimate (issue 44).

Megatron-Bridge's verification card (``examples/model_verification_cards/nemotron-3.5-lightning/
card.yaml`` @ 067f987df, pinned in 3rdparty/reference/manifest.toml) records rank 0's
``peak_allocated_memory_gib`` and ``peak_reserved_memory_gib`` (PyTorch's max_memory_allocated and
max_memory_reserved) for seven training runs on H100 and GB200. Each run below is the recipe it
names, read at the same commit (recipes/nemotronh/{h100,gb200}/nemotron_3_nano.py and
perf_recipes/nemotronh/{h100,gb200}/nemotronh.py, with the card's command-line overrides), as
recipekit's ``MegatronSetup``: GPUs, TP/PP/CP/EP, micro-batch and sequence, recompute, MTP,
gradient precision and the allocator (every recipe sets PYTORCH_CUDA_ALLOC_CONF=
expandable_segments:True in its env_vars). None of them was used to choose anything in the
estimate. What a run turns on that the estimate does not model is listed with the run
(``Missing``), with how far it could move the total.

    python3 tools/published_runs.py            # the error table, from .reference/

The card's peaks are PyTorch's alone: the estimate is compared without its runtime term (CUDA
context, NCCL), which the card does not measure. They are decimal gigabytes (``CARD_GB``), and
they cover the run's setup and its first two iterations only: the training log reports memory
after iterations 1 and 2 and then stops (Megatron-Bridge @ 067f987df, src/megatron/bridge/
training/utils/train_utils.py:1141-1154). Transformer Engine's CUDA graphs are captured after
``cuda_graph_warmup_steps`` (3 in every Lightning recipe) iterations (training/train.py:433-441),
so no run's recorded peak includes them, and they are not listed as missing.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from recipekit.memory.estimate import GIB
from recipekit.memory.megatron import (
    ALLOCATOR,
    BF16,
    RUNTIME,
    MegatronSetup,
    adam_state,
    training_terms,
)
from recipekit.model_card import NEMOTRON_35_LIGHTNING_30B, Architecture
from recipekit.parallelism import ParallelLayout

CARD = "megatron-bridge/main/examples/model_verification_cards/nemotron-3.5-lightning/card.yaml"


def _architecture() -> Architecture:
    arch = NEMOTRON_35_LIGHTNING_30B.architecture
    assert arch is not None, "the Lightning card has its architecture"
    return arch


LIGHTNING = _architecture()


@attrs.frozen
class Missing:
    """A feature of the run the estimate does not model: the term it lacks, and which way and
    by about how much it could move the run's total (GiB, from the run's own sizes)."""

    feature: str
    moves: str


@attrs.frozen(kw_only=True)
class PublishedRun:
    # The card's item and hardware key (and variant), where its metrics are.
    item: tuple[str, ...]
    recipe: str
    gpus: int
    micro_batch: int
    sequence: int
    global_batch: int
    setup: MegatronSetup
    missing: tuple[Missing, ...] = ()

    @property
    def name(self) -> str:
        return ".".join(self.item)


def _setup(layout: ParallelLayout, micro_batch: int, sequence: int, global_batch: int,
           **settings: Any) -> MegatronSetup:  # fmt: skip
    """A Lightning run's rank as the recipes set it: bf16 gradient reduction (both the library
    recipes, grad_reduce_in_fp32=False, and the performance recipes' _perf_precision), the
    distributed optimizer with TE's FusedAdam, Transformer Engine's layer spec (transformer_impl
    "transformer_engine": fused attention, norms fused into the QKV and Mamba input projections,
    TEGroupedMLP experts; MegatronSetup's default), MTP trained (mtp_num_layers=2), expandable
    segments (COMMON_RECIPE_ENV_VARS and every perf recipe). The cross entropy is each recipe's:
    Transformer Engine's (the GB200 pretraining recipe and the perf recipes' _benchmark_common)
    unless a run says ``native`` (recipes/nemotronh/h100/nemotron_3_nano.py:166-167 and
    :328-329, which the H100 pretraining and the SFT recipes start from)."""
    return MegatronSetup.of(
        layout,
        tokens=micro_batch * sequence,
        sequence=sequence,
        microbatches=global_batch // (micro_batch * layout.dp),
        grad_bytes=BF16,
        mtp=True,
        expandable_segments=True,
        **{"cross_entropy": "te", **settings},
    )


EIGHT = ParallelLayout(gpus=8, ep=8)
SIXTEEN = ParallelLayout(gpus=16, ep=8)
RUNS: tuple[PublishedRun, ...] = (
    PublishedRun(
        item=("pretrain", "H100"),
        recipe="nemotron_3_5_lightning_pretrain_config",
        gpus=16, micro_batch=1, sequence=8192, global_batch=512,
        setup=_setup(
            ParallelLayout(gpus=16, cp=2, ep=8), 1, 8192, 512, recompute="selective",
            recompute_modules=("moe", "layernorm", "core_attn"), cross_entropy="native",
        ),
    ),
    PublishedRun(
        item=("pretrain", "GB200"),
        recipe="nemotron_3_5_lightning_pretrain_8k_config",
        gpus=8, micro_batch=2, sequence=8192, global_batch=512,
        setup=_setup(EIGHT, 2, 8192, 512, recompute="none"),
    ),
    PublishedRun(
        item=("pretrain_fsdp", "GB200", "variants", "bf16"),
        recipe="nemotron_3_5_lightning_pretrain_8k_fsdp_config",
        gpus=8, micro_batch=2, sequence=8192, global_batch=512,
        setup=_setup(EIGHT, 2, 8192, 512, recompute="none"),
        missing=(
            Missing(
                "Megatron FSDP (optim_grads_params)",
                "either way: parameters and gradients sharded over the 8 data-parallel ranks "
                "(fp32 main gradients), plus its gather and reduce buffers; the same recipe "
                "without FSDP (pretrain.GB200) measured 2.4 GiB less allocated, 3.7 less "
                "reserved",
            ),
        ),
    ),
    PublishedRun(
        item=("pretrain_fsdp", "GB200", "variants", "fp8_mx"),
        recipe="nemotron_3_5_lightning_pretrain_8gpu_gb200_fp8mx_fsdp_config",
        gpus=8, micro_batch=3, sequence=8192, global_batch=384,
        setup=_setup(EIGHT, 3, 8192, 384, recompute="none"),
        missing=(
            Missing(
                "MXFP8 (bf16_with_mxfp8_mixed)",
                "less: the linear layers keep their saved inputs in fp8 with a scale per 32 "
                "values (about 0.53 of bf16) and the weights an fp8 copy beside bf16; at most "
                "half of the activations term (48 of 96 GiB) less, 6 GiB of weight copies more",
            ),
            Missing(
                "Megatron FSDP (optim_grads_params)",
                "either way: about 2.4 GiB more on the bf16 recipe (pretrain_fsdp.GB200.bf16 "
                "against pretrain.GB200)",
            ),
        ),
    ),
    PublishedRun(
        item=("sft", "GB200"),
        recipe="nemotron_3_5_lightning_sft_openmathinstruct2_packed_tp1_config",
        gpus=8, micro_batch=1, sequence=4096, global_batch=128,
        setup=_setup(EIGHT, 1, 4096, 128, recompute="none", cross_entropy="native"),
    ),
    PublishedRun(
        item=("pretrain_performance", "H100"),
        recipe="nemotron_3_5_lightning_pretrain_16gpu_h100_bf16_config",
        gpus=16, micro_batch=1, sequence=8192, global_batch=512,
        setup=_setup(
            SIXTEEN, 1, 8192, 512, recompute="selective",
            recompute_modules=("moe_act", "layernorm"),
            # use_precision_aware_optimizer with bf16 moments, fp32 main parameters.
            adam=adam_state(precision_aware=True, exp_avg="bfloat16", exp_avg_sq="bfloat16"),
        ),
        missing=(
            Missing(
                "fine-grained activation offloading (expert_fc1, fraction 1.0)",
                "less: each MoE layer's routed tokens' fc1 input on the host, 6.1 GiB over 23 "
                "layers and the MTP block's, less a layer's staging",
            ),
        ),
    ),
    PublishedRun(
        item=("pretrain_performance", "GB200"),
        recipe="nemotron_3_5_lightning_pretrain_8gpu_gb200_bf16_config",
        gpus=8, micro_batch=2, sequence=8192, global_batch=512,
        setup=_setup(EIGHT, 2, 8192, 512, recompute="none"),
    ),
)  # fmt: skip


def estimated(run: PublishedRun) -> tuple[float, float]:
    """(peak allocated, reserved) bytes: every term but the runtime, and the allocator's."""
    terms = {t.name: t.bytes for t in training_terms(LIGHTNING, run.setup)}
    allocated = sum(v for k, v in terms.items() if k not in (ALLOCATOR, RUNTIME))
    return allocated, allocated + terms[ALLOCATOR]


# The card's peaks are decimal gigabytes, whatever their key says: the training log prints them
# once, as "memory (GB)" after iterations 1 and 2 (Megatron-Bridge @ 067f987df src/megatron/
# bridge/training/utils/train_utils.py:1141-1154), from torch.cuda.memory_stats() divided by 1e9
# and rounded to 5 significant digits (report_memory, :1195-1206); every value on the card has
# exactly 5 (68.547, 158.220, 169.54, ...), and no other output of the run records a peak.
CARD_GB = 1e9


def measured(card: Mapping[str, Any], run: PublishedRun) -> tuple[float, float]:
    """(peak allocated, peak reserved) bytes the card records for the run."""
    node: Any = card["items"]
    for key in run.item:
        node = node[key]
    metrics = node["metrics"]
    return (
        float(metrics["peak_allocated_memory_gib"]) * CARD_GB,
        float(metrics["peak_reserved_memory_gib"]) * CARD_GB,
    )


def read_card(reference: Path) -> dict[str, Any] | None:
    """The pinned card from a reference folder (tools/fetch-reference), or None where absent."""
    import yaml

    path = reference / CARD
    if not path.is_file():
        return None
    loaded: dict[str, Any] = yaml.safe_load(path.read_text())
    return loaded


def errors(card: Mapping[str, Any]) -> dict[str, tuple[float, float]]:
    """Per run, the relative error (estimate - measured) / measured of the peak allocated and
    the peak reserved."""
    found = {}
    for run in RUNS:
        guess, got = estimated(run), measured(card, run)
        found[run.name] = (
            (guess[0] - got[0]) / got[0],
            (guess[1] - got[1]) / got[1],
        )
    return found


def table(card: Mapping[str, Any]) -> str:
    """The error table (Markdown), a row per run, with what the estimate leaves out."""
    rows = [
        "| run (card item) | GPUs | layout | allocated: card / estimate | reserved: card / "
        "estimate | not modelled |",
        "|---|---|---|---|---|---|",
    ]
    for run in RUNS:
        (a, r), (ga, gr) = measured(card, run), estimated(run)
        s = run.setup
        layout = (
            f"TP{s.tp} CP{s.cp} EP{s.ep}, {run.micro_batch} x {run.sequence}, "
            f"recompute {s.recompute}"
        )
        rows.append(
            f"| {run.name} | {run.gpus} | {layout} | {a / GIB:.1f} / {ga / GIB:.1f} "
            f"({100 * (ga - a) / a:+.1f}%) | {r / GIB:.1f} / {gr / GIB:.1f} "
            f"({100 * (gr - r) / r:+.1f}%) | "
            + ("; ".join(m.feature for m in run.missing) or "none")
            + " |"
        )
    return "\n".join(rows)


def main() -> int:
    reference = Path(os.environ.get("RECIPEKIT_REFERENCE_DIR", ".reference"))
    card = read_card(reference)
    if card is None:
        print(f"{reference / CARD} is not there: run tools/fetch-reference", file=sys.stderr)
        return 1
    print(table(card))
    for run in RUNS:
        for missing in run.missing:
            print(f"- {run.name}: {missing.feature}: {missing.moves}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
