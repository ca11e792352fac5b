"""Per-GPU memory of Megatron-Core training, for the pipeline stage that holds the most.

Sources, each cited where its formula is used:

- weights, gradients and Adam state with the distributed optimizer: Rajbhandari et al. 2020
  (ZeRO, stage 1) and Megatron-LM's own theoretical report
  (``megatron/training/theoretical_memory_usage.py``: 6 + 12/DP bytes per parameter with bf16
  parameters and fp32 gradients); Megatron-Core shards the optimizer over the data-parallel
  group *with* context parallelism, and expert parameters over the expert-data-parallel group;
- activations of attention and MLP layers under tensor and sequence parallelism: Korthikanti et
  al. 2022, "Reducing Activation Recomputation in Large Transformer Models" (section 4); with a
  fused (flash) attention kernel the softmax and its ``a s^2 b`` terms are not stored, only the
  row statistics (Dao et al. 2022);
- Mamba-2 layers: the fused SSD scan (Dao & Gu 2024, section 6; mamba_ssm's
  ``mamba_split_conv1d_scan_combined``) saves its input projection and its output, and
  rebuilds the convolution and the chunk states in the backward pass;
- in-flight micro-batches of the 1F1B schedule: Narayanan et al. 2021 and Megatron-Core's
  ``schedules.get_pp_rank_microbatches`` (stage ``s`` runs ``PP - s - 1`` warm-up forwards, so
  holds ``min(PP - s, micro-batches)``; interleaved, ``2 (PP - s - 1) + (VPP - 1) x PP``
  warm-up model-chunk forwards, each chunk ``1 / VPP`` of the stage);
- the loss: every prediction depth (the model's and each MTP depth's) keeps its logits in fp32
  for the backward pass of the vocabulary-parallel cross entropy, beside the bf16 logits of the
  depth being scored; Megatron-Core's fused ``native`` cross entropy takes one more fp32 buffer
  a logit while it scores a depth (measured, ``tools/calibrate_memory_loss.py``).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import math
from collections.abc import Iterator
from typing import Any

import attrs

from recipekit.memory import caching_allocator, simulation_cache, step_trace
from recipekit.memory import parameters as params
from recipekit.memory.estimate import GIB, Term, terms
from recipekit.model_card import Architecture
from recipekit.parallelism import ParallelLayout

BF16 = 2
FP32 = 4
# The bytes of an optimizer dtype as Megatron-Core's OptimizerConfig takes it (a torch dtype,
# which a config spells as its name: torch.bfloat16, bfloat16, bf16, ...).
DTYPE_BYTES = {
    **dict.fromkeys(("float32", "fp32", "float"), FP32),
    **dict.fromkeys(("bfloat16", "bf16", "float16", "fp16", "half"), BF16),
    **dict.fromkeys(("uint8", "fp8", "float8_e4m3fn"), 1),
}


@attrs.frozen
class AdamState:
    """What Adam keeps for each trained parameter's shard, in bytes: the main (master) copy and
    the two moments. Megatron-Core's default is fp32 for all three."""

    master: float = FP32
    exp_avg: float = FP32
    exp_avg_sq: float = FP32

    @property
    def bytes(self) -> float:
        return self.master + self.exp_avg + self.exp_avg_sq


def dtype_bytes(value: object, default: float = FP32) -> float:
    """The bytes of a dtype as a config spells it; ``default`` where it is unset or unknown."""
    if not isinstance(value, str):
        return default
    return DTYPE_BYTES.get(value.removeprefix("torch.").lower(), default)


def adam_state(
    *,
    precision_aware: bool,
    main_params: object = None,
    exp_avg: object = None,
    exp_avg_sq: object = None,
    bf16_params: bool = True,
    store_param_remainders: bool = True,
    te_master_weights: bool = True,
) -> AdamState:
    """Adam's state with Megatron-Core's precision-aware optimizer (optimizer_config.py @
    0.19.2: ``use_precision_aware_optimizer``, ``main_params_dtype``, ``exp_avg_dtype``,
    ``exp_avg_sq_dtype``, ``store_param_remainders``), which hands Transformer Engine's
    FusedAdam the moments' dtypes and, where ``te_master_weights`` (Megatron-Core's
    ``use_precision_aware_optimizer_no_fp8_or_ds_fp8``: no FP8 parameters, or delayed scaling,
    or a host-offloaded optimizer), the main parameters too (optimizer/__init__.py,
    ``master_weight_dtype``). Of fp32 main parameters beside bf16 parameters it then stores
    only the 16 bits the bf16 copy does not hold (``store_param_remainders``, on by default).
    Without the precision-aware optimizer every part is fp32 (the config refuses another
    dtype)."""
    if not precision_aware:
        return AdamState()
    master = dtype_bytes(main_params)
    if te_master_weights and master == FP32 and bf16_params and store_param_remainders:
        master = BF16  # the remainder bits beside the bf16 parameter
    elif not te_master_weights:
        master = FP32  # Megatron-Core's own fp32 main parameters
    return AdamState(master, dtype_bytes(exp_avg), dtype_bytes(exp_avg_sq))


# What a training process holds outside PyTorch's allocator on one H200, measured
# (tools/calibrate_memory.py, every run of both grids alike): the CUDA context, 0.60 GiB, and
# what NCCL's first communicator and the math libraries add, 1.82 GiB (one GPU, world size 1).
RUNTIME_MEASURED = 2.42 * GIB
# NCCL's buffers grow with each communicator a rank joins across GPUs (TP, PP, DP, CP, EP), which
# one GPU cannot measure: an allowance per parallel group larger than one.
NCCL_PER_GROUP = 0.25 * GIB
RUNTIME_ALLOWANCE = RUNTIME_MEASURED + 2 * NCCL_PER_GROUP
WEIGHTS = "weights (bf16)"
RUNTIME = "runtime (CUDA, NCCL)"
ALLOCATOR = "caching allocator (PyTorch)"
# The caching allocator (c10/cuda/CUDACachingAllocator.cpp) rounds each block to 512 bytes and
# each segment to 2 MiB (20 MiB for blocks of 1-10 MiB, 2 MiB segments for the small pool):
# measured, allocated over requested bytes is at most 1.001 (tools/calibrate_memory.py).
ROUNDING = 0.001
# A freed short-lived block of a layer (one layer's fp32 attention scores, an up projection's
# output) is requested and freed again layer after layer, several of its size alive at once in
# the layer being differentiated; once the first step's moments split their segments, the next
# requests of that size take new ones: measured, the reserved peak holds 0.5-1.7 such blocks
# beyond the allocated peak. 1.25 keeps every fit-set run above its measurement (the error
# table of docs/design/memory-model.md).
# A fitted envelope, now a floor under the block-level simulation (_simulated_step, step_trace):
# the simulation alone is off by about one fp32 score block of the second step's growth on some
# runs, both ways (12 of the 71 runs of the first five files outside -3%..+10% on its own).
LARGEST_BLOCKS = 1.25
# The fp32 logits are one block per prediction depth, made once per micro-batch at the end of the
# forward pass (the vocabulary-parallel cross entropy's upcast, softmax in place) and freed in the
# loss's backward. The caching allocator hands out the smallest free block that holds a request
# (c10/cuda/CUDACachingAllocator.cpp, its header comment), so the logits re-take their own
# segment exactly, every micro-batch, unless the first step's moments split it; then the next
# micro-batch's logits take one new segment and the old one's free remainder, at most one block of
# that size, is the whole cost (best fit puts later requests in that remainder before another
# depth's whole segment). So the logits cost at most 1 x one depth's fp32 logits, no constant.
LOGITS_BLOCKS = 1.0
# The most blocks _simulated_step plays (about 40 us each): every calibration run (at most some
# 23,000: 128 experts in 4 layers) is simulated, a stage of many layers and local experts (one
# Nemotron 3 Super estimate would be 225,000 blocks, 8 s) keeps the envelope alone.
SIMULATED_BLOCKS = 40_000


# Its hash is kept (cache_hash): the estimate's caches key on it.
@attrs.frozen(kw_only=True, cache_hash=True)
class MegatronSetup:
    """What decides a Megatron-Core rank's memory: the stage's one parallel layout (its sizes
    read through the properties below, by Megatron's names) and the rest of its settings."""

    # The GPUs that train the model and how they are split (a single GPU by default).
    parallel: ParallelLayout = ParallelLayout(gpus=1)
    # Tokens of one micro-batch (sequence length x micro-batch size, or the packed budget).
    tokens: int
    # One sequence's length, where it differs from ``tokens`` (micro-batches of several).
    sequence: int | None = None
    # "none", "selective" (the modules in recompute_modules) or "full" (every layer's input,
    # one layer rebuilt at a time).
    recompute: str = "none"
    recompute_modules: tuple[str, ...] = ("core_attn",)
    # Full recompute as Megatron-Core runs it (megatron/core/recompute.py:157-181 @ 0.19.2):
    # "uniform" checkpoints chunks of recompute_num_layers layers, each rebuilt whole in the
    # backward pass; "block" checkpoints only the first recompute_num_layers layers of each
    # pipeline stage, one at a time, and the rest keep every activation.
    recompute_method: str = "uniform"
    recompute_num_layers: int = 1
    distributed_optimizer: bool = True
    # The share of the optimizer state kept in host memory (optimizer_cpu_offload).
    optimizer_offload: float = 0.0
    # Adam's state per trained parameter shard (``adam_state``: the precision-aware optimizer's
    # dtypes).
    adam: AdamState = AdamState()
    grad_bytes: int = FP32
    mtp: bool = False
    # The MTP depths share one block (mtp_use_repeated_layer, as the Nemotron recipes set it and
    # the cards' parameter totals count it); False builds a block per depth (measured:
    # tools/calibration/h100-megatron-core-0.19.2-mtp.json).
    mtp_shared: bool = True
    # Micro-batches per step and data-parallel rank (global batch / (micro-batch x DP)); a
    # pipeline stage holds at most that many in flight. None: not known, PP - stage bounds it.
    microbatches: int | None = None
    # Frozen parts keep their weights but have no gradients or optimizer state (PEFT freezes
    # the whole language model).
    train_language: bool = True
    train_vision: bool = True
    # Unfused attention stores its a x s^2 score and softmax matrices.
    fused_attention: bool = True
    # Transformer Engine's layer spec, Megatron-Core's default (transformer_config.py:1220 @
    # 0.19.2, transformer_impl="transformer_engine"; Megatron-Bridge's providers build it,
    # hybrid_provider.py:101-105 @ 067f987df): the norm of attention, Mamba and dense MLP layers
    # fused into their first linear (TELayerNormColumnParallelLinear), and the last stage's
    # heads counted as the code keeps them (head_activations). False: the local spec the
    # calibration runs train (tools/calibrate_memory.py).
    transformer_engine: bool = True
    # Transformer Engine's (or Apex's) FusedAdam updates every tensor in place; without either,
    # Megatron-Core falls back to torch's AdamW (megatron/core/optimizer/__init__.py, line 33),
    # whose multi-tensor step makes one fp32 temporary per parameter.
    fused_adam: bool = True
    # PyTorch's caching allocator with expandable segments (PYTORCH_CUDA_ALLOC_CONF=
    # expandable_segments:True in the workers' environment): one segment that grows in 20 MiB
    # pages instead of a segment per large request (step_trace.ExpandableSegments).
    expandable_segments: bool = False
    # The cross entropy of the language-model loss (Megatron-Core's cross_entropy_loss_fusion
    # and cross_entropy_fusion_impl): "unfused" (vocab_parallel_cross_entropy, Megatron-Core's
    # default, and what NeMo-RL's own loss functions keep), "native" (the torch.compile'd
    # fused one: an fp32 temporary a logit beside its kept copy while it scores a depth,
    # measured on an H100: 18 bytes a logit at the peak of three depths against 14 unfused,
    # tools/calibrate_memory_loss.py) or "te" (Transformer Engine's, priced as unfused).
    cross_entropy: str = attrs.field(
        default="unfused", validator=attrs.validators.in_(("unfused", "native", "te"))
    )
    # What each setting is called in the framework's config, for the "change ..." hint.
    keys: dict[str, str] = attrs.field(factory=dict, eq=False, hash=False)

    @classmethod
    def of(cls, layout: ParallelLayout, **settings: Any) -> MegatronSetup:
        """The setup of one rank of ``layout``; ``settings`` are the rest (tokens, recompute,
        optimizer, ...)."""
        return cls(parallel=layout, **settings)

    @property
    def tp(self) -> int:
        return self.parallel.tp

    @property
    def pp(self) -> int:
        return self.parallel.pp

    @property
    def cp(self) -> int:
        return self.parallel.cp

    @property
    def ep(self) -> int:
        return self.parallel.ep

    @property
    def etp(self) -> int:
        return self.parallel.etp

    @property
    def vpp(self) -> int:
        return self.parallel.vpp or 1

    @property
    def sequence_shards(self) -> int:
        """The ranks a sequence-parallel activation (outside attention and the MLP) is split
        over: TP with sequence parallelism, else 1."""
        return self.parallel.tp if self.parallel.sp else 1

    @property
    def dp(self) -> int:
        """The data-parallel ranks, rounded down where the layout does not divide (a layout
        rule reports that; the estimate still prices the nearest whole split)."""
        return self.parallel.whole_groups

    @property
    def expert_dp(self) -> int:
        return self.parallel.gpus // self.parallel.expert_group

    def key(self, name: str) -> str:
        return self.keys.get(name, name)


def stage_patterns(arch: Architecture, setup: MegatronSetup) -> list[str]:
    """The layer pattern of each pipeline stage, split as Megatron-Core splits it."""
    layers, pp = arch.pattern, setup.pp
    if pp == 1:
        return [layers]
    first = setup.parallel.first_stage_layers
    last = setup.parallel.last_stage_layers
    head = layers[:first] if first else ""
    tail = layers[len(layers) - last :] if last else ""
    middle = layers[len(head) : len(layers) - len(tail)]
    inner = pp - bool(head) - bool(tail)
    size = -(-len(middle) // inner) if inner else 0
    chunks = [middle[i * size : (i + 1) * size] for i in range(inner)]
    return [s for s in ([head] if head else []) + chunks + ([tail] if tail else [])]


# Whether the allocator's share plays the step through the allocator model (_simulated_step)
# or keeps its envelope alone: a lower bound on the estimate, which the layout search prices
# thousands of candidates with before it plans (and so estimates in full) the ones it shows.
_SIMULATE: contextvars.ContextVar[bool] = contextvars.ContextVar("simulate", default=True)


@contextlib.contextmanager
def lower_bound() -> Iterator[None]:
    """Within the block, estimates leave the allocator simulation out: every total is at most
    the full estimate's, so a layout refused here is refused by the full estimate too."""
    token = _SIMULATE.set(False)
    try:
        yield
    finally:
        _SIMULATE.reset(token)


def training_terms(arch: Architecture, setup: MegatronSetup) -> tuple[Term, ...]:
    """The terms of the pipeline stage with the largest total."""
    return _training_terms(arch, setup, simulate=_SIMULATE.get())


def clear_cache() -> None:
    """Forget every cached training estimate (a benchmark of a cold estimate)."""
    _training_terms.cache_clear()
    _checkpoint_chunks.cache_clear()


@functools.lru_cache(maxsize=4096)
def _training_terms(
    arch: Architecture, setup: MegatronSetup, *, simulate: bool
) -> tuple[Term, ...]:
    """training_terms, cached: the layout search prices one training layout with every vLLM
    size."""
    stages = stage_patterns(arch, setup)
    best: tuple[Term, ...] = ()
    for index, pattern in enumerate(stages):
        candidate = _stage_terms(
            arch,
            setup,
            pattern,
            first=index == 0,
            last=index == len(stages) - 1,
            stage=index,
            simulate=simulate,
        )
        if sum(t.bytes for t in candidate) > sum(t.bytes for t in best):
            best = candidate
    return best


def _stage_weights(
    arch: Architecture, s: MegatronSetup, pattern: str, *, first: bool, last: bool
) -> tuple[int, int, int]:
    """The parameters of one pipeline stage: dense (language), vision, and in experts."""
    count = params.stack(arch, pattern)
    dense, expert, vision = count.dense, count.expert, 0
    if first:
        dense += params.embedding(arch)
        vision = arch.vision.params if arch.vision is not None else 0
    if last:
        dense += params.output_layer(arch)
        if s.mtp:
            blocks = 1 if s.mtp_shared else max(arch.mtp_depth, 1)
            mtp = params.mtp(arch)
            dense, expert = dense + blocks * mtp.dense, expert + blocks * mtp.expert
    return dense, vision, expert


def _weights_term(s: MegatronSetup, dense: int, vision: int, expert: int) -> Term:
    """A rank's bf16 weights: dense and vision parameters split by TP, experts by EP x ETP."""
    dense_per_gpu = (dense + vision) / s.tp
    expert_per_gpu = expert / (s.ep * s.etp)
    per_gpu = dense_per_gpu + expert_per_gpu
    parallel = ["tp", "pp"] + (["ep", "etp"] if expert else [])
    return Term(
        WEIGHTS,
        per_gpu * BF16,
        tuple(s.key(k) for k in parallel),
        f"{per_gpu / 1e9:.2f}B parameters: {dense_per_gpu / 1e9:.2f}B / TP"
        + (f" + {expert_per_gpu / 1e9:.2f}B experts / (EP x ETP)" if expert else ""),
    )


def conversion_terms(arch: Architecture, setup: MegatronSetup) -> tuple[Term, ...]:
    """A rank converting a checkpoint (no training): the weights of the pipeline stage that
    holds most, one whole tensor gathered across its shards before it is written (Megatron-
    Bridge's export streams one Hugging Face tensor at a time; the embedding, vocabulary x
    hidden, is the largest), and the runtime allowance."""
    stages = stage_patterns(arch, setup)
    weights = max(
        (
            _weights_term(
                setup, *_stage_weights(arch, setup, p, first=i == 0, last=i == len(stages) - 1)
            )
            for i, p in enumerate(stages)
        ),
        key=lambda term: term.bytes,
    )
    gathered = params.embedding(arch) * BF16
    return (
        weights,
        Term("gathered tensor (bf16)", gathered, (), "the embedding, vocabulary x hidden"),
        Term(
            RUNTIME,
            RUNTIME_ALLOWANCE,
            (),
            "CUDA context and libraries (measured), NCCL: two parallel groups' allowance",
        ),
    )


def _stage_terms(
    arch: Architecture,
    setup: MegatronSetup,
    pattern: str,
    *,
    first: bool,
    last: bool,
    stage: int = 0,
    simulate: bool = True,
) -> tuple[Term, ...]:
    s = setup
    dense, vision, expert = _stage_weights(arch, s, pattern, first=first, last=last)
    expert_per_gpu = expert / (s.ep * s.etp)
    weights = _weights_term(s, dense, vision, expert)
    shrink_weights = weights.shrink
    trained_dense = (dense * s.train_language + vision * s.train_vision) / s.tp
    trained_expert = expert_per_gpu * s.train_language
    trained = trained_dense + trained_expert

    # ZeRO-1: the distributed optimizer shards fp32 master weights and both moments over the
    # data-parallel ranks (with CP) for dense parameters, and over expert-DP for experts.
    if s.distributed_optimizer:
        optimizer_params = trained_dense / (s.dp * s.cp) + trained_expert / s.expert_dp
    else:
        optimizer_params = trained
    optimizer = optimizer_params * s.adam.bytes * (1 - s.optimizer_offload)

    activations, peak_layer = _activations(arch, s, pattern, first=first, last=last, stage=stage)
    score_gradients = attention_backward(arch, s, pattern)
    peak_layer, score_gradients = _block_backward(arch, s, pattern, peak_layer, score_gradients)
    logits = _logits(arch, s) if last else 0.0
    # The loss and the output layer finish their backward pass (freeing the logits) before the
    # first transformer layer's begins, so the layers' backward working set adds only what it
    # holds beyond the logits: both its terms are scaled by that share.
    backward = peak_layer + score_gradients
    beyond_logits = max(0.0, backward - logits) / backward if backward else 0.0
    peak_layer, score_gradients = peak_layer * beyond_logits, score_gradients * beyond_logits
    # The optimizer step comes after the backward pass, when the activations are gone: PyTorch's
    # multi-tensor Adam (torch/optim/adam.py, _multi_tensor_adam) builds one fp32 temporary per
    # parameter (the square root of the second moment). It adds to the peak only where it
    # exceeds what the forward and backward passes held (measured, tools/calibrate_memory.py).
    step = 0.0 if s.fused_adam else optimizer_params * FP32 * (1 - s.optimizer_offload)
    through_backward = activations + peak_layer + score_gradients + logits
    step_beyond = max(0.0, step - through_backward)
    buffer = score_buffer(arch, s, pattern)
    allocations = (
        weights.bytes + trained * s.grad_bytes + optimizer + through_backward + step_beyond + buffer
    )
    allocator = _allocator(
        arch,
        s,
        allocations,
        through_backward,
        step,
        logits,
        pattern,
        first=first,
        last=last,
        stage=stage,
        simulate=simulate,
    )
    return terms(
        weights,
        Term(
            f"gradients ({'fp32' if s.grad_bytes == FP32 else 'bf16'})",
            trained * s.grad_bytes,
            shrink_weights,
            f"one per trained parameter ({trained / 1e9:.2f}B), grad_reduce_in_fp32 decides",
        )
        if trained
        else None,
        None
        if not trained
        else Term(
            "optimizer state (Adam)",
            optimizer,
            (s.key("optimizer_offload"), s.key("dp")),
            f"{s.adam.bytes:g} bytes x {optimizer_params / 1e9:.2f}B parameters' shards"
            + (f", {s.optimizer_offload:.0%} on the host" if s.optimizer_offload else ""),
        ),
        Term(
            "activations",
            activations,
            (s.key("recompute"), *_recompute_keys(s), s.key("tokens"), s.key("cp"), s.key("tp")),
            f"{len(pattern)} layers x {_in_flight(s, stage):.2f} micro-batches in flight"
            f" of {s.tokens} tokens / CP {s.cp}" + _recompute_note(arch, s, pattern),
        ),
        Term(
            "recomputed layer (backward)",
            peak_layer,
            (s.key("tokens"), s.key("cp"), *_recompute_keys(s)),
            (
                f"full recompute: one checkpoint of {s.recompute_num_layers} layers rebuilt at a"
                " time, and its gradients"
                if s.recompute_method == "uniform" and s.recompute_num_layers > 1
                else "full recompute: one layer rebuilt at a time, and its gradients"
            ),
        )
        if peak_layer
        else None,
        Term(
            "attention backward (unfused softmax)",
            score_gradients,
            (s.key("recompute"), s.key("tokens"), s.key("tp")),
            f"{BACKWARD_PER_SCORE} bytes a score where the scores are rebuilt, else"
            f" {BACKWARD_PER_SCORE - STORED_PER_SCORE}, in the layer being differentiated",
        )
        if score_gradients
        else None,
        Term(
            "logits and loss",
            logits,
            (s.key("tokens"), s.key("tp"), s.key("cp"))
            + ((s.key("cross_entropy"),) if s.cross_entropy == "native" else ()),
            "fp32 logits per prediction depth and one depth's bf16 logits, vocab / TP"
            + (NATIVE_TEMPORARY if s.cross_entropy == "native" else ""),
        )
        if logits
        else None,
        Term(
            "attention score buffer (Megatron's global buffer)",
            buffer,
            (s.key("tokens"), s.key("tp"), s.key("cp")),
            "one layer's bf16 raw scores, kept from the first forward pass to the end",
        )
        if buffer
        else None,
        Term(
            "optimizer step (beyond activations)",
            step_beyond,
            (s.key("optimizer_offload"), s.key("dp")),
            "Adam's fp32 working buffer, where larger than the activations it follows",
        )
        if step_beyond
        else None,
        allocator,
        _runtime(s),
    )


def _runtime(s: MegatronSetup) -> Term:
    groups = sum(size > 1 for size in (s.tp, s.pp, s.dp, s.cp, s.ep))
    return Term(
        RUNTIME,
        RUNTIME_MEASURED + groups * NCCL_PER_GROUP,
        (),
        f"CUDA context and libraries {RUNTIME_MEASURED / GIB:.2f} GiB (measured), NCCL"
        f" {NCCL_PER_GROUP / GIB:.2f} GiB x {groups} parallel groups (an allowance)",
    )


def _allocator(
    arch: Architecture,
    s: MegatronSetup,
    allocations: float,
    through_backward: float,
    step: float,
    logits: float,
    pattern: str,
    *,
    first: bool,
    last: bool,
    stage: int = 0,
    simulate: bool = True,
) -> Term:
    """What PyTorch's caching allocator reserves beyond the allocated peak: block rounding and
    the segments the step's blocks take beyond what they hold at once.

    The latter is simulated (``_simulated_step``): three training steps' large blocks, in
    Megatron-Core's order, through a model of the allocator's best fit, block splitting and
    segment sizes (``step_trace``), so the first step's Adam moments land in the freed
    activation segments they fit and the second step's activations take new segments where
    they no longer fit. On the measured runs it reproduces that growth to a block, except on
    some where the measurement displaced one fp32 score-sized block more than the simulation
    (its order of the unfused softmax's frees and of the moments is not exact), so the share
    is never taken below the earlier envelope (``_envelope``): the larger of the two. Playing
    every block costs about 40 us a block, so a stage of more than SIMULATED_BLOCKS blocks
    (``_simulation_size``: a model of many layers and local experts) keeps the envelope alone.

    With expandable segments (``s.expandable_segments``) the simulation plays the same blocks
    through ``step_trace.ExpandableSegments`` and is the share alone: free space merges in one
    segment, so no freed block strands a segment of its own, and what is mapped beyond the peak
    is the holes below the mapped end and the last page's rest."""
    simulated = 0.0
    shards = _optimizer_shards(arch, s, pattern, first=first, last=last) if simulate else []
    played = simulate and _simulation_size(arch, s, pattern, shards, stage) <= SIMULATED_BLOCKS
    if played:
        reserved, peak = simulation_cache.cached_pair(
            (arch, s, pattern, shards, first, last, stage),
            lambda: _simulated_step(arch, s, pattern, shards, first=first, last=last, stage=stage),
        )
        simulated = max(0.0, reserved - peak)
    keys = (s.key("tokens"), s.key("recompute"), s.key("dp"))
    if s.expandable_segments and (played or not simulate):
        # One segment that grows in pages: what it maps beyond the peak is the holes between live
        # blocks at the peak and the last page's rest, both in the simulation; the fixed-segment
        # envelope (a freed block split by smaller requests costing a new segment) does not
        # apply. Under lower_bound, block rounding alone.
        return Term(
            ALLOCATOR,
            ROUNDING * allocations + simulated,
            keys,
            f"expandable segments: free space below the mapped end at the peak and the last"
            f" 20 MiB page's rest ({simulated / GIB:.2f} GiB: three steps' large blocks through"
            f" PyTorch's best fit in one segment that grows a page at a time),"
            f" {ROUNDING:.1%} block rounding",
        )
    envelope, per_layer, fp32_logits = _envelope(
        arch, s, through_backward, step, logits, pattern, first=first, last=last
    )
    beyond = max(simulated, envelope)
    # Expandable segments on a stage too large to simulate keep the fixed segments' envelope,
    # which counts more than one growing segment leaves free: high, never low.
    fixed = "expandable segments, priced as fixed segments (too many blocks to simulate): " * (
        s.expandable_segments
    )
    return Term(
        ALLOCATOR,
        ROUNDING * allocations + beyond,
        keys,
        f"{fixed}segments the step's blocks take beyond what they hold at once"
        f" ({beyond / GIB:.2f} GiB:"
        f" three steps' large blocks through PyTorch's best fit {simulated / GIB:.2f} GiB, no"
        f" less than {LARGEST_BLOCKS} x a layer's largest short-lived block"
        f" ({per_layer / GIB:.2f} GiB) or {LOGITS_BLOCKS:g} x one depth's fp32 logits"
        f" ({fp32_logits / GIB:.2f} GiB) and the optimizer step's temporaries,"
        f" {envelope / GIB:.2f} GiB), {ROUNDING:.1%} block rounding",
    )


def _simulation_size(
    arch: Architecture,
    s: MegatronSetup,
    pattern: str,
    shards: list[tuple[float, float]],
    stage: int,
) -> float:
    """About how many blocks ``_simulated_step`` allocates: three steps of the micro-batches in
    flight, some 30 per layer and 14 per local expert (forward and backward; a third more
    under full recompute), and the optimizer's per parameter tensor."""
    experts = max(1, arch.moe.num_experts // s.ep) if arch.moe is not None else 0
    per_layer = sum(30 + (14 * experts if kind == params.MOE else 0) for kind in pattern)
    rebuilt = 4 / 3 if s.recompute == "full" else 1.0
    in_flight = max(1, math.ceil(_in_flight(s, stage)))
    return 3 * in_flight * per_layer * rebuilt + 5 * sum(count for _, count in shards)


def _envelope(
    arch: Architecture,
    s: MegatronSetup,
    through_backward: float,
    step: float,
    logits: float,
    pattern: str,
    *,
    first: bool,
    last: bool,
) -> tuple[float, float, float]:
    """(the envelope, a layer's largest short-lived block, one depth's fp32 logits): the freed
    largest blocks that smaller requests split (the larger of a layer's, LARGEST_BLOCKS times,
    and the logits', LOGITS_BLOCKS times) and, under torch's multi-tensor AdamW, the step's
    fp32 temporaries that the next step's activations cannot reuse (``_step_temporaries``)."""
    tokens = s.tokens / s.cp
    fp32_logits = FP32 * _logit_count(arch, s) if last else 0.0
    per_layer = max(
        FP32 * attention_scores(arch, s, tokens)
        if not s.fused_attention and params.ATTENTION in pattern
        else 0.0,
        BF16 * tokens * (2 if arch.gated_mlp else 1) * arch.ffn / s.tp,
        BF16 * tokens * 2 * arch.hidden / s.sequence_shards,
    )
    split = max(LARGEST_BLOCKS * per_layer, LOGITS_BLOCKS * fp32_logits)
    temporaries = (
        _step_temporaries(
            arch, s, through_backward, split, step, logits, pattern, first=first, last=last
        )
        if step
        else 0.0
    )
    return split + temporaries, per_layer, fp32_logits


def _step_temporaries(
    arch: Architecture,
    s: MegatronSetup,
    through_backward: float,
    split: float,
    step: float,
    logits: float,
    pattern: str,
    *,
    first: bool,
    last: bool,
) -> float:
    """What torch's multi-tensor AdamW leaves reserved beyond the allocated peak.

    Its first step makes Adam's two moments (``_init_group``, zeros_like each parameter, kept)
    and then, in ``_multi_tensor_adam``, one fp32 square root of the second moment per parameter
    (``torch._foreach_sqrt``; freed when the step returns): 3 x ``step`` bytes, after the
    backward pass freed the activation blocks it reserved (``through_backward`` and the blocks
    it split). Whatever of that does not fit there takes new segments, shaped like the
    parameters, and since the moments stay, what overflows is temporaries (at most ``step``).
    The next step's activations go into those freed segments only where one holds their block
    (``caching_allocator.reused``: the scores and logits of a long sequence fit no parameter's
    segment); the rest take new segments beside them. Reserved beyond the state and moments is
    then the activations' reserve plus the overflow less what is reused, against an allocated
    peak of the larger of the step and the backward pass. Which parameters' temporaries
    overflow is not known, so each parameter overflows by the same share."""
    moments = 2 * step
    overflow = max(0.0, min(step, moments + step - (through_backward + split)))
    if not overflow:
        return 0.0
    share = overflow / step
    free = caching_allocator.segments(
        (FP32 * size * (1 - s.optimizer_offload), count * share)
        for size, count in _optimizer_shards(arch, s, pattern, first=first, last=last)
    )
    blocks = _backward_blocks(arch, s, pattern, through_backward, logits, last=last)
    reused = min(overflow, caching_allocator.reused(blocks, free))
    return max(0.0, through_backward + overflow - reused - max(step, through_backward))


def _optimizer_shards(
    arch: Architecture,
    s: MegatronSetup,
    pattern: str,
    *,
    first: bool,
    last: bool,
    whole: bool = False,
) -> list[tuple[float, float]]:
    """(elements, how many) of the trained weight matrices' optimizer shards on one rank, one
    per parameter tensor (norms and biases are small-pool blocks, left out), in the order
    Adam's first step makes their moments: the distributed optimizer lists each buffer's
    parameters as the buffer holds them, the dense buffer's before the experts', each in
    reverse forward order (param_and_grad_buffer.py lays them out as ``params[::-1]``;
    distrib_optimizer.py, _build_optimizer_group_ranges), and torch's _init_group walks that."""
    dense_dp = s.dp * s.cp if s.distributed_optimizer and not whole else 1
    expert_dp = s.expert_dp if s.distributed_optimizer and not whole else 1
    h = arch.hidden
    shards: list[tuple[float, float]] = []
    experts: list[tuple[float, float]] = []

    def dense(elements: float, count: float = 1) -> None:
        if s.train_language and elements and count:
            shards.append((elements / s.tp / dense_dp, count))

    if first:
        dense(params.embedding(arch))
    q, kv = arch.attention_heads * arch.head_dim, arch.kv_heads * arch.head_dim
    for kind in pattern:
        if kind == params.ATTENTION:
            dense(h * (q + 2 * kv))
            dense(q * h)
        elif kind == params.MLP:
            dense(h * arch.ffn * (2 if arch.gated_mlp else 1))
            dense(arch.ffn * h)
        elif kind == params.MAMBA and arch.mamba is not None:
            m = arch.mamba
            dense(h * (2 * m.inner + 2 * m.groups * m.state_size + m.num_heads))
            dense(m.inner * h)
        elif kind == params.MOE and arch.moe is not None:
            e = arch.moe
            width, up = e.latent or h, 2 if e.gated else 1
            dense(e.num_experts * h)
            if s.train_language:
                # Each local expert's two matrices, in turn (one list operation: hundreds of
                # local experts a layer, priced for thousands of layouts).
                pair = [
                    (width * e.expert_ffn * up / s.etp / expert_dp, 1.0),
                    (e.expert_ffn * width / s.etp / expert_dp, 1.0),
                ]
                experts.extend(pair * max(1, e.num_experts // s.ep))
            dense(h * e.shared_ffn * up)
            dense(e.shared_ffn * h)
    if last and not arch.tied_embeddings:
        dense(params.embedding(arch))
    return shards[::-1] + experts[::-1]


def _backward_blocks(
    arch: Architecture,
    s: MegatronSetup,
    pattern: str,
    through_backward: float,
    logits: float,
    *,
    last: bool,
) -> dict[float, float]:
    """The blocks (size: how many) the backward pass holds at its peak: the unfused attention's
    score-sized tensors (those stored per layer, and the layer being differentiated's, as
    STORED_PER_SCORE and BACKWARD_PER_SCORE count them), each depth's fp32 logits, and the rest
    in blocks of one token-sized activation (the widest of the hidden state and the MLP's up
    projection)."""
    tokens = s.tokens / s.cp
    blocks: dict[float, float] = {}

    def add(size: float, count: float) -> None:
        if size > 0 and count > 0:
            blocks[size] = blocks.get(size, 0.0) + count

    attention_layers = pattern.count(params.ATTENTION)
    scores = attention_scores(arch, s, tokens)
    if not s.fused_attention and attention_layers:
        rebuilt = s.recompute == "full" or (
            s.recompute == "selective" and "core_attn" in s.recompute_modules
        )
        kept = 0 if rebuilt else attention_layers
        # stored: fp32 softmax output and bf16 probabilities; the differentiated layer adds the
        # bf16 gradient of the probabilities, its fp32 cast and the fp32 gradient of the scores
        # (and holds its own rebuilt fp32 and bf16 scores where they are not kept)
        add(FP32 * scores, kept + 2 + rebuilt)
        add(BF16 * scores, kept + 1 + rebuilt)
    if last:
        add(
            FP32 * _logit_count(arch, s),
            fp32_logit_blocks(_prediction_depths(arch, s), s.cross_entropy),
        )
    rest = through_backward - sum(size * count for size, count in blocks.items())
    widest = max(arch.ffn * (2 if arch.gated_mlp else 1) / s.tp, arch.hidden)
    add(BF16 * tokens * widest, rest / (BF16 * tokens * widest))
    return blocks


def _in_flight(s: MegatronSetup, stage: int = 0) -> float:
    """Micro-batches (of the whole stage's layers) whose activations pipeline stage ``stage``
    (0-based) holds at the peak of 1F1B: its warm-up forwards and the one that starts the
    steady state, never more than the step has (Megatron-Core 0.19.2, schedules.py,
    get_pp_rank_microbatches; microbatch_group_size_per_vp_stage defaults to PP). Interleaved,
    each forward is of one model chunk, 1 / VPP of the stage's layers."""
    if s.pp == 1:
        return 1.0
    chunks = s.vpp
    warmup = s.pp - stage - 1
    if chunks > 1:
        warmup = 2 * (s.pp - stage - 1) + (chunks - 1) * s.pp
    held = warmup + 1
    if s.microbatches is not None:
        held = min(held, s.microbatches * chunks)
    return held / chunks


def _rebuilt_unit(unit: str, per_kind: dict[str, float], scores: float = 0.0) -> float:
    """The peak of one checkpointed unit's backward pass under full recompute: the unit is
    rebuilt whole, then its layers are differentiated last first, each freeing what it kept
    before the one before it starts; while a layer is differentiated its activations'
    gradients sit beside it (twice the layer, tools/calibrate_memory.py) and the layers before
    it in the unit still hold theirs. So a GPT layer peaks at attention + 2 x MLP or 2 x
    attention, whichever is larger, not 2 x both. ``per_kind`` counts an unfused attention
    without its stored ``scores``: one rebuilt attention layer's are attention_backward's, and a
    checkpoint of several layers (uniform's recompute_num_layers) holds each other rebuilt
    attention layer's beside them (measured: 3 GPT layers a checkpoint, tools/calibration/
    h100-megatron-core-0.19.2-issue44.json)."""
    return max(
        (
            sum(per_kind[k] for k in unit[:i])
            + 2 * per_kind[unit[i]]
            + scores * max(0, unit[: i + 1].count(params.ATTENTION) - 1)
            for i in range(len(unit))
        ),
        default=0.0,
    )


def _recompute_keys(s: MegatronSetup) -> tuple[str, ...]:
    if s.recompute != "full":
        return ()
    return (s.key("recompute_method"), s.key("recompute_num_layers"))


def _recompute_note(arch: Architecture, s: MegatronSetup, pattern: str) -> str:
    """How full recompute splits the stage's layers, for the activations term (nothing to add
    for Megatron-Core's usual one layer a checkpoint)."""
    if s.recompute != "full" or (s.recompute_method, s.recompute_num_layers) == ("uniform", 1):
        return ""
    checkpointed, kept = recompute_chunks(
        checkpoint_units(arch, pattern), s.recompute_method, s.recompute_num_layers
    )
    if s.recompute_method == "block":
        return (
            f"; full recompute, block: {len(checkpointed)} checkpointed layers,"
            f" {len(kept)} keep all their activations"
        )
    return f"; full recompute, uniform: {len(checkpointed)} checkpoints of {s.recompute_num_layers}"


def recompute_chunks(units: list[str], method: str, layers: int) -> tuple[list[str], list[str]]:
    """(the checkpoints full recompute makes of a stage's layers, the layers it leaves whole),
    as Megatron-Core's _checkpointed_forward does (megatron/core/recompute.py:157-181 @ 0.19.2):
    uniform joins ``layers`` consecutive layers into one checkpoint, block checkpoints each of
    the first ``layers`` layers alone and runs the rest without one."""
    layers = max(1, layers)
    if method == "block":
        return units[:layers], units[layers:]
    return ["".join(units[i : i + layers]) for i in range(0, len(units), layers)], []


@functools.lru_cache(maxsize=1024)
def _checkpoint_chunks(
    arch: Architecture, pattern: str, method: str, layers: int
) -> tuple[tuple[str, ...], tuple[str, ...], frozenset[str]]:
    """recompute_chunks of a stage's checkpoint_units, and the distinct checkpoints, made once:
    the layout search prices thousands of layouts of the same few stage patterns."""
    checkpointed, kept = recompute_chunks(checkpoint_units(arch, pattern), method, layers)
    return tuple(checkpointed), tuple(kept), frozenset(checkpointed)


def checkpoint_units(arch: Architecture, pattern: str) -> list[str]:
    """The layers full recompute checkpoints one at a time (recompute_method uniform, one layer
    a checkpoint: transformer_block.py, _checkpointed_forward). A GPT model's TransformerLayer
    is attention and its MLP or MoE together, so a pattern of such pairs checkpoints pairs; a
    hybrid (Mamba) stack makes every character its own layer."""
    pairs = [pattern[i : i + 2] for i in range(0, len(pattern), 2)]
    gpt = arch.mamba is None and all(
        len(p) == 2 and p[0] == params.ATTENTION and p[1] in (params.MLP, params.MOE) for p in pairs
    )
    return pairs if gpt and pairs else list(pattern)


def _activations(
    arch: Architecture, s: MegatronSetup, pattern: str, *, first: bool, last: bool, stage: int = 0
) -> tuple[float, float]:
    """(stored activations of the stage, one layer rebuilt under full recompute)."""
    tokens = s.tokens / s.cp
    sp = s.sequence_shards
    per_kind = {kind: layer_activations(arch, s, kind, tokens, sp) for kind in set(pattern)}
    if s.recompute == "full":
        checkpointed, kept, distinct = _checkpoint_chunks(
            arch, pattern, s.recompute_method, s.recompute_num_layers
        )
        # Only each checkpoint's input survives the forward pass (sequence-parallel sharded);
        # a layer outside every checkpoint (block's rest) keeps all it stores.
        stored = len(checkpointed) * BF16 * tokens * arch.hidden / sp
        stored += sum(per_kind[kind] for unit in kept for kind in unit)
        # In the backward pass one checkpoint at a time is rebuilt, and its activations'
        # gradients sit beside it (twice the layer, tools/calibrate_memory.py). The rebuilt
        # attention's scores are attention_backward's.
        scores = STORED_PER_SCORE * attention_scores(arch, s, tokens)
        rebuilt_per_kind = dict(per_kind)
        if not s.fused_attention and params.ATTENTION in per_kind:
            rebuilt_per_kind[params.ATTENTION] -= scores
        else:
            scores = 0.0
        rebuilt = max(
            (_rebuilt_unit(chunk, rebuilt_per_kind, scores) for chunk in distinct), default=0.0
        )
    else:
        stored, rebuilt = sum(pattern.count(k) * v for k, v in per_kind.items()), 0.0
    if first and not s.transformer_engine:
        # The local spec's calibrated count (tools/calibration/): the embedding's output, which
        # is the first layer's input, in place of the final norm's two tensors (head_activations).
        stored += BF16 * tokens * arch.hidden / sp
    if last:
        stored += head_activations(arch, s, tokens, sp)
    if last and s.mtp and arch.mtp_pattern and not _mtp_recomputed(s):
        stored += arch.mtp_depth * sum(
            layer_activations(arch, s, kind, tokens, sp) for kind in arch.mtp_pattern
        )
    return stored * _in_flight(s, stage), rebuilt


def _mtp_recomputed(s: MegatronSetup) -> bool:
    """Whether full recompute checkpoints each MTP depth whole (its norms, eh_proj, layer and
    final norm: MultiTokenPredictionLayer._checkpointed_forward, multi_token_prediction.py:1491 @
    0.19.2); under the block method Megatron-Core warns and runs the depths as they are
    (:1416-1421). Measured: the depths' layers keep nothing and their heads half
    (tools/calibration/h100-megatron-core-0.19.2-mtp.json)."""
    return s.recompute == "full" and s.recompute_method != "block"


def head_activations(arch: Architecture, s: MegatronSetup, tokens: float, sp: int) -> float:
    """What the last stage keeps beyond its layers' own counts, per micro-batch: tensors of the
    hidden width a token.

    The final norm keeps its input (the last layer's output, no layer's count) and the output
    layer its normalised input: 2. With D prediction depths (MTP, Megatron-Core 2a75ac12
    transformer/multi_token_prediction.py) each depth also keeps its embedding's output (enorm's
    input, :1144), the concatenation eh_proj reads (2 wide, :1168-1169) and its own final norm's
    input (:1266); the block concatenates the model's and every depth's output (torch.cat,
    :1881) and the output layer reads each depth's logits from a view of it (process_mtp_loss,
    :805, :842), 1 + D; a depth's output before the last stays as the next depth's hnorm input
    (:1146), D - 1. Together 2 + 6 D (14 with Lightning's two depths).

    The local spec keeps the count its calibration runs hold: the depths' 6 D (measured with one
    and two depths, tools/calibration/h100-megatron-core-0.19.2-mtp.json), and the embedding's
    output on the first stage in place of the final norm's 2 (the first layer's input, which
    that layer's own count holds already; _activations). Full recompute checkpoints each depth
    from its two inputs (_mtp_recomputed): the enorm input and the previous depth's output stay,
    the concatenation and the final norm's input do not, so a depth keeps 3, not 6 (measured:
    6 widths for two depths)."""
    depths = arch.mtp_depth if s.mtp and arch.mtp_pattern else 0
    # Under full recompute a depth's checkpoint keeps its inputs alone: the enorm input stays
    # and the concatenation and the final norm's input are rebuilt, 3 of its 6.
    widths = (2 if s.transformer_engine else 0) + (3 if _mtp_recomputed(s) else 6) * depths
    return widths * BF16 * tokens * arch.hidden / sp


def layer_activations(
    arch: Architecture, s: MegatronSetup, kind: str, tokens: float, sp: int
) -> float:
    """Bytes one layer keeps for its backward pass, per micro-batch, on one rank."""
    h, t = arch.hidden, s.tp
    rebuilt = set(s.recompute_modules) if s.recompute == "selective" else set()
    # The pre-norm's input and output, sequence-parallel sharded (Korthikanti et al. 2022);
    # recomputing the norm keeps only its input. Under Transformer Engine an attention, Mamba or
    # dense MLP layer has no norm module of its own: TELayerNormColumnParallelLinear keeps its
    # input and the normalised ln_out for the weight gradient, and the layernorm recompute skips
    # the layer (transformer_layer.py:450-452 @ 2a75ac12: only a norm that is not IdentityOp;
    # hybrid_layer_specs.py:105-160 and 215-225 fuse it). An MoE layer's TENorm is recomputed.
    fused_norm = s.transformer_engine and kind in (params.ATTENTION, params.MAMBA, params.MLP)
    norm = (1 if "layernorm" in rebuilt and not fused_norm else 2) * BF16 * tokens * h / sp
    if kind == params.ATTENTION:
        qkv = BF16 * tokens * _stored_qkv(arch, s, rebuilt="core_attn" in rebuilt) / t
        context = BF16 * tokens * arch.attention_heads * arch.head_dim / t  # the projection's input
        if s.fused_attention:
            core = FP32 * tokens * arch.attention_heads / t  # flash attention's log-sum-exp
        elif "core_attn" in rebuilt:
            core = 0.0
        else:
            # Unfused (Megatron-Core's local DotProductAttention, whose softmax runs in fp32:
            # megatron/core/fusions/fused_softmax.py, forward_torch_softmax): per score element,
            # the fp32 softmax output its backward reads and the bf16 probabilities the product
            # with V reads, 6 a s^2 b bytes (Korthikanti et al. count 2 a s^2 b for a bf16
            # softmax). The causal mask is one s x s tensor every layer shares.
            core = STORED_PER_SCORE * attention_scores(arch, s, tokens)
        return norm + qkv + context + core
    if kind == params.MAMBA:
        m = arch.mamba
        assert m is not None
        # Megatron-Core's Mamba mixer runs mamba_ssm's fused split-conv1d-scan (Dao & Gu 2024,
        # ssd_combined.py, MambaSplitConv1dScanCombinedFn): it saves the input projection's
        # output (z, x, B, C, dt) and the scan's output, and rebuilds the convolution and the
        # per-chunk states in the backward pass.
        projected = BF16 * tokens * (2 * m.inner + 2 * m.groups * m.state_size + m.num_heads) / t
        scanned = BF16 * tokens * m.inner / t
        # Not counted yet, though the code keeps them: Megatron-Core's mixer normalises the
        # kernel's gated output itself (mamba_mixer.py:703-727 @ 2a75ac12: no rmsnorm_weight
        # passed, y = self.norm(y); mamba_ssm's RMSNormGated keeps its input,
        # ops/triton/layernorm_gated.py:360 @ e9594ce) and projects it out (out_proj, :521,
        # keeps the norm's output): two more tensors of the inner width, in either layer spec.
        # Counted together with the experts' one width (the MoE branch below), they bring the
        # Lightning runs closer (docs/design/memory-model.md, "Against Megatron-Bridge's
        # published Lightning runs") but put Super 3.5's sft stages at 82.0 GiB of an H100's 80,
        # a refusal, and the Super card's rank 0 at +12% of its allocated peak (-3.5% of its
        # reserved): that decision is the stages' owners', with the evidence in that section.
        return norm + projected + scanned
    if kind == params.MOE:
        e = arch.moe
        assert e is not None
        if "moe" in rebuilt:  # the whole MoE block rebuilt from its input
            return norm
        local = tokens / sp  # a rank routes its sequence-parallel share of the tokens
        width = e.latent or h
        up = 2 if e.gated else 1
        router = 2 * FP32 * local * e.num_experts  # logits and probabilities, fp32
        latent = 2 * BF16 * local * e.latent if e.latent else 0.0
        # Each token goes to top-k experts; balanced routing gives a rank as many tokens as it
        # sends. The experts keep their input, their up projection and its activation.
        routed = local * e.top_k
        kept = up if "moe_act" in rebuilt else mlp_saved_widths(e.gated)
        # Under Transformer Engine the code keeps one width, not two: TEGroupedMLP applies the
        # router's probabilities in its activation (experts.py:828-902 @ 2a75ac12, every
        # branch), so no dispatcher's combine keeps the experts' output (token_dispatcher.py:
        # 345-351, 890-898, 1458-1465 unpermute without probabilities; fused_a2a.py:478-517,
        # HybridEP's combine keeps only its handle). Not counted yet: it lands with the Mamba
        # mixer's two tensors (below), docs/design/memory-model.md says why.
        experts = BF16 * routed * (2 * width * s.etp + kept * e.expert_ffn)
        shared = mlp_saved_widths(e.gated) * BF16 * tokens * e.shared_ffn / t
        if "shared_experts" in rebuilt:
            shared = 0.0
        return norm + router + shared + latent + experts
    if kind == params.MLP:
        if "mlp" in rebuilt:
            return norm
        return norm + mlp_saved_widths(arch.gated_mlp) * BF16 * tokens * arch.ffn / t
    raise ValueError(f"unknown layer kind {kind!r}")


def mlp_saved_widths(gated: bool) -> int:
    """Tensors of the FFN's width that autograd keeps per token for one MLP's backward pass
    (Megatron-Core 0.19.2, megatron/core/transformer/mlp.py, MLP.forward without
    bias_activation_fusion, the provider's default). Plain: the up projection's output (the
    activation's input) and the activation's output (the down projection's input), 2. Gated,
    its glu: the up projection's output, 2 wide (silu keeps x_glu, a chunk, so the whole
    tensor), silu's output and ``x_linear + glu_linear_offset`` (a new tensor even for the
    offset 0.0), both kept by their product, and the product (the down projection's input): 5.
    """
    return 5 if gated else 2


def _stored_qkv(arch: Architecture, s: MegatronSetup, *, rebuilt: bool) -> float:
    """Elements per token that one attention layer keeps of its query, key and value (times TP).

    Fused kernels (TE, flash) take grouped keys and values as they are: q + 2 kv. Megatron-Core's
    unfused DotProductAttention (dot_product_attention.py, forward) repeat_interleaves K and V
    to every query head before its two batched products, which keep those copies (2 q); the
    query, split from the fused QKV projection, is a copy too where a partition has more than
    one KV group (attention.py, get_query_key_value_tensors: the reshape cannot be a view), so
    the QKV output itself is freed. One group per partition leaves the query a view, and the QKV
    output (q + 2 kv) stays. With core_attn recomputed the checkpoint keeps its inputs: the
    query and the key and value, views of the QKV output, so the copy and the whole output."""
    q, kv = arch.attention_heads * arch.head_dim, arch.kv_heads * arch.head_dim
    if s.fused_attention or arch.kv_heads >= arch.attention_heads:
        return q + 2 * kv
    groups = max(1, arch.kv_heads // s.tp)
    query_copied = groups > 1
    if rebuilt:
        return (q if query_copied else 0) + q + 2 * kv
    return (q if query_copied else q + 2 * kv) + 2 * q


# Bytes per attention-score element of the unfused softmax: kept for the backward pass (the fp32
# softmax output, the bf16 probabilities), and held at the backward's peak in the layer being
# differentiated (those, the bf16 gradient of the probabilities, its fp32 cast and the fp32
# gradient of the scores: 4 + 2 + 2 + 4 + 4).
STORED_PER_SCORE = FP32 + BF16
BACKWARD_PER_SCORE = FP32 + BF16 + BF16 + FP32 + FP32


def attention_scores(arch: Architecture, s: MegatronSetup, tokens: float) -> float:
    """Score elements of one unfused attention layer on one rank: heads / TP x the sequence each
    query sees x the rank's tokens."""
    return arch.attention_heads / s.tp * (s.sequence or s.tokens) * tokens


def score_buffer(arch: Architecture, s: MegatronSetup, pattern: str) -> float:
    """The unfused attention's raw scores go into a buffer Megatron-Core keeps for the whole
    run, one for every layer: [micro-batch x heads / TP, queries, keys] in the params dtype
    (megatron/core/transformer/dot_product_attention.py:189, get_global_memory_buffer; measured:
    that much stays allocated between steps, tools/calibrate_memory.py)."""
    if s.fused_attention or params.ATTENTION not in pattern:
        return 0.0
    return BF16 * attention_scores(arch, s, s.tokens / s.cp)


def attention_backward(arch: Architecture, s: MegatronSetup, pattern: str) -> float:
    """What the backward pass of one unfused attention layer holds beyond its stored activations:
    the score-sized gradients (BACKWARD_PER_SCORE less what is stored), or, where the scores
    are rebuilt (core_attn recomputed, or full recompute), the whole BACKWARD_PER_SCORE."""
    if s.fused_attention or params.ATTENTION not in pattern:
        return 0.0
    rebuilt = s.recompute == "full" or (
        s.recompute == "selective" and "core_attn" in s.recompute_modules
    )
    per_score = BACKWARD_PER_SCORE - (0 if rebuilt else STORED_PER_SCORE)
    return per_score * attention_scores(arch, s, s.tokens / s.cp)


def _block_backward(
    arch: Architecture, s: MegatronSetup, pattern: str, peak_layer: float, score_gradients: float
) -> tuple[float, float]:
    """(the recomputed layer's share, the score gradients' share) of the backward pass's peak
    beyond the stored activations, under full recompute's block method with layers left whole.

    The backward pass runs the last layers first: the whole layers (every activation stored,
    each freed as its own backward ends) and only then the checkpointed first ones. So its peak
    is the larger of two moments: the last whole layer differentiated with everything stored
    (its scores kept, BACKWARD_PER_SCORE less STORED_PER_SCORE a score), or a checkpoint rebuilt
    after one micro-batch's whole layers are gone (twice the layer, BACKWARD_PER_SCORE a score).
    Counting both beside every stored activation, as uniform's one moment, prices a rebuilt
    layer that never coexists with the whole layers' activations."""
    if s.recompute != "full" or s.recompute_method != "block":
        return peak_layer, score_gradients
    chunks, whole = recompute_chunks(
        checkpoint_units(arch, pattern), s.recompute_method, s.recompute_num_layers
    )
    if not whole:
        return peak_layer, score_gradients
    kept, rebuilt = "".join(whole), "".join(chunks)
    tokens, sp = s.tokens / s.cp, s.sequence_shards
    scores = 0.0
    if not s.fused_attention:
        scores = attention_scores(arch, s, tokens)
    last_whole = (
        (BACKWARD_PER_SCORE - STORED_PER_SCORE) * scores if params.ATTENTION in kept else 0.0
    )
    one_batch_whole = sum(layer_activations(arch, s, kind, tokens, sp) for kind in kept)
    rebuilt_scores = BACKWARD_PER_SCORE * scores if params.ATTENTION in rebuilt else 0.0
    checkpoint = peak_layer + rebuilt_scores - one_batch_whole
    if last_whole >= checkpoint:
        return 0.0, last_whole
    return checkpoint - min(rebuilt_scores, checkpoint), min(rebuilt_scores, checkpoint)


NATIVE_TEMPORARY = ", and the fused native cross entropy's fp32 temporary"


def _logit_count(arch: Architecture, s: MegatronSetup) -> float:
    """One prediction depth's logits on a rank: its tokens times its share of the vocabulary."""
    return s.tokens / s.cp * arch.vocab / s.tp


def fp32_logit_blocks(depths: int, cross_entropy: str) -> int:
    """The fp32 logit-sized blocks held while the last of ``depths`` prediction depths is
    scored: one kept per depth, and the fused native cross entropy's temporary."""
    return depths + (1 if cross_entropy == "native" else 0)


def loss_peak_per_logit(depths: int, cross_entropy: str) -> int:
    """Bytes a logit (of one depth) the loss holds at its peak: the fp32 blocks and the bf16
    logits of the depth being scored (tools/calibrate_memory_loss.py measures it)."""
    return fp32_logit_blocks(depths, cross_entropy) * FP32 + BF16


def _prediction_depths(arch: Architecture, s: MegatronSetup) -> int:
    """The depths the loss scores: the model's, and each MTP depth trained."""
    return 1 + (arch.mtp_depth if s.mtp else 0)


def _logits(arch: Architecture, s: MegatronSetup) -> float:
    """Each prediction depth's fp32 logits, which the vocabulary-parallel cross entropy keeps
    for its backward pass, and the bf16 logits of the depth being scored (measured: 4 bytes a
    logit stored after the forward pass, tools/calibrate_memory.py), with the native fused
    cross entropy's fp32 temporary (4 bytes a logit more at its peak,
    tools/calibrate_memory_loss.py)."""
    return _logit_count(arch, s) * loss_peak_per_logit(_prediction_depths(arch, s), s.cross_entropy)


def _simulated_step(
    arch: Architecture,
    s: MegatronSetup,
    pattern: str,
    shards: list[tuple[float, float]],
    *,
    first: bool,
    last: bool,
    stage: int,
) -> tuple[float, float]:
    """(reserved, allocated peak) of the large blocks of three training steps, played through
    step_trace's model of the caching allocator in Megatron-Core's order (step_trace's
    docstring): the allocator's share is the difference."""
    allocator: step_trace.CachingAllocator | step_trace.ExpandableSegments = (
        step_trace.ExpandableSegments() if s.expandable_segments else step_trace.CachingAllocator()
    )
    t = step_trace.Trace(allocator)
    tokens = s.tokens / s.cp
    sp = s.sequence_shards
    hidden = BF16 * tokens * arch.hidden / sp
    heads_q = arch.attention_heads * arch.head_dim
    q = BF16 * tokens * heads_q / s.tp
    kv = BF16 * tokens * arch.kv_heads * arch.head_dim / s.tp
    grouped = not s.fused_attention and arch.kv_heads < arch.attention_heads
    copied = grouped and max(1, arch.kv_heads // s.tp) > 1
    scores = attention_scores(arch, s, tokens)
    rebuilt = set(s.recompute_modules) if s.recompute == "selective" else set()
    in_flight = max(1, math.ceil(_in_flight(s, stage)))
    # Under full recompute, the checkpoints (each rebuilt whole in the backward pass) and, under
    # the block method, the layers after them that keep every activation; else the stage as one.
    if s.recompute == "full":
        chunks, whole = recompute_chunks(
            checkpoint_units(arch, pattern), s.recompute_method, s.recompute_num_layers
        )
        units = [*chunks, *whole]
        checkpointed = [True] * len(chunks) + [False] * len(whole)
    else:
        units, checkpointed = [pattern], [False]
    buffer: list[int] = []
    # The softmax's fp32 output and bf16 probabilities of each attention layer, by its kept list.
    cores: dict[int, list[int]] = {}

    def weight_grad(size: float) -> None:
        t.f(t.a(size))  # a bf16 weight gradient, added into the fp32 main_grad and freed

    def attention_core(keep: bool) -> tuple[list[int], int]:
        """The core attention's forward: (what its backward reads where kept, its output).
        Unfused (dot_product_attention.py, fused_softmax.py forward_torch_softmax): the bf16
        raw scores, their fp32 upcast, the fp32 softmax and its bf16 cast; without grad the
        fp32 softmax goes when its name is rebound to the cast, the upcast when the softmax
        returns, the raw scores and probabilities when the attention returns its context."""
        if s.fused_attention:
            return [t.a(FP32 * tokens * arch.attention_heads / s.tp)], t.a(q)
        if not buffer:
            buffer.append(t.a(BF16 * scores))  # the global memory buffer, kept for the run
        expanded = [t.a(q), t.a(q)] if grouped else []
        raw = t.a(BF16 * scores)
        upcast = t.a(FP32 * scores)
        probs32 = t.a(FP32 * scores)
        probs16 = t.a(BF16 * scores)
        if not keep:
            t.f(probs32)
        t.f(upcast)
        context = t.a(q)
        t.f(raw)
        if not keep:
            t.f(probs16, *expanded)
            return [], context
        return [probs32, probs16, *expanded], context

    def attention_forward(kept: list[int], grad: bool) -> None:
        checkpoint_core = "core_attn" in rebuilt
        kept.append(t.a(hidden))  # the pre-norm's output
        qkv = t.a(q + 2 * kv)
        parts = [t.a(q)] if copied else []
        core, context = attention_core(keep=grad and not checkpoint_core)
        if grad:
            cores[id(kept)] = core
            kept.extend(parts + [context])
            if copied and not checkpoint_core:
                t.f(qkv)  # nothing saved reads the fused output
            else:
                kept.append(qkv)
        else:
            t.f(qkv, *parts, context)
        out = t.a(hidden)
        kept.append(t.a(hidden))  # the residual sum, the next block's input
        t.f(out)

    def attention_backward(kept: list[int]) -> None:
        checkpoint_core = "core_attn" in rebuilt
        grad_context = t.a(q)
        weight_grad(BF16 * heads_q * arch.hidden / s.tp)
        core = cores.pop(id(kept), [])
        if not s.fused_attention:
            if checkpoint_core:
                core, rebuilt_context = attention_core(keep=True)
                kept.append(rebuilt_context)
            probs32, probs16, *expanded = core
            grad_probs16 = t.a(BF16 * scores)
            grad_value = t.a(q)
            t.f(probs16)
            grad_probs32 = t.a(FP32 * scores)
            t.f(grad_probs16)
            grad_scores32 = t.a(FP32 * scores)
            t.f(grad_probs32, probs32)
            masked = t.a(FP32 * scores)
            t.f(grad_scores32)
            grad_raw = t.a(BF16 * scores)
            t.f(masked)
            grad_query, grad_key = t.a(q), t.a(q)
            t.f(grad_raw, *expanded)
            grad_qkv = t.a(q + 2 * kv)
            t.f(grad_query, grad_key, grad_value, grad_context)
        else:
            grad_qkv = t.a(q + 2 * kv)
            t.f(grad_context, *core)
        weight_grad(BF16 * (heads_q + 2 * arch.kv_heads * arch.head_dim) * arch.hidden / s.tp)
        grad_norm = t.a(hidden)
        t.f(grad_qkv)
        t.f(*kept)
        kept.clear()
        t.f(t.a(hidden), grad_norm)  # the norm's input gradient, summed with the residual's

    def mlp_forward(kept: list[int], grad: bool, width: float, count: float, gated: bool) -> int:
        per = BF16 * count
        local = [t.a(per * width * (2 if gated else 1))]
        local.append(t.a(per * width))
        if gated:
            local.extend([t.a(per * width), t.a(per * width)])
        if grad:
            kept.extend(local)
        else:
            t.f(*local)
        return t.a(per * arch.hidden)  # the down projection's output

    def mlp_backward(kept: list[int], width: float, count: float, gated: bool) -> None:
        per = BF16 * count
        grad_product = t.a(per * width)
        weight_grad(BF16 * width * arch.hidden / s.tp)
        if gated:
            grad_act, grad_linear = t.a(per * width), t.a(per * width)
            t.f(grad_product)
            grad_glu = t.a(per * width)
            t.f(grad_act)
            grad_up = t.a(per * 2 * width)
            t.f(grad_glu, grad_linear)
        else:
            grad_up = t.a(per * width)
            t.f(grad_product)
        grad_in = t.a(per * arch.hidden)
        weight_grad(BF16 * width * (2 if gated else 1) * arch.hidden / s.tp)
        t.f(grad_up, *kept)
        kept.clear()
        t.f(grad_in)

    def ffn_forward(kind: str, kept: list[int], grad: bool) -> None:
        kept.append(t.a(hidden))  # the pre-norm's output
        outputs: list[int] = []
        if kind == params.MLP and "mlp" not in rebuilt:
            outputs.append(mlp_forward(kept, grad, arch.ffn / s.tp, tokens, arch.gated_mlp))
        elif kind == params.MOE and arch.moe is not None and "moe" not in rebuilt:
            e = arch.moe
            routed = tokens / sp * e.top_k
            experts = max(1, e.num_experts // s.ep)
            kept.append(t.a(BF16 * routed * (e.latent or arch.hidden)))  # permuted tokens
            for _ in range(experts):
                outputs.append(
                    mlp_forward(kept, grad, e.expert_ffn / s.etp, routed / experts, e.gated)
                )
            joined = t.a(BF16 * routed * (e.latent or arch.hidden))  # the experts' outputs
            t.f(*outputs)
            kept.append(joined)
            outputs = [t.a(hidden)]  # unpermuted
            if e.shared_ffn:
                outputs.append(mlp_forward(kept, grad, e.shared_ffn / s.tp, tokens, e.gated))
        elif kind in (params.MLP, params.MOE):
            outputs.append(t.a(hidden))  # the rebuilt block's output
        kept.append(t.a(hidden))  # the residual sum
        t.f(*outputs)

    def ffn_backward(kind: str, kept: list[int]) -> None:
        if kind == params.MLP:
            mlp_backward(kept, arch.ffn / s.tp, tokens, arch.gated_mlp)
        elif kind == params.MOE and arch.moe is not None:
            e = arch.moe
            routed = tokens / sp * e.top_k
            experts = max(1, e.num_experts // s.ep)
            grad_routed = t.a(BF16 * routed * (e.latent or arch.hidden))
            for _ in range(experts):
                mlp_backward([], e.expert_ffn / s.etp, routed / experts, e.gated)
            t.f(grad_routed, *kept)
            kept.clear()
        else:
            t.f(*kept)
            kept.clear()

    def other_forward(kind: str, kept: list[int], grad: bool) -> None:
        # A Mamba layer: what layer_activations counts, one block of each.
        size = layer_activations(arch, s, kind, tokens, sp)
        block = t.a(size)
        if grad:
            kept.append(block)
        else:
            t.f(block)
        kept.append(t.a(hidden))

    def layer_forward(kind: str, kept: list[int], grad: bool) -> None:
        if kind == params.ATTENTION:
            attention_forward(kept, grad)
        elif kind in (params.MLP, params.MOE):
            ffn_forward(kind, kept, grad)
        else:
            other_forward(kind, kept, grad)

    def layer_backward(kind: str, kept: list[int]) -> None:
        if kind == params.ATTENTION:
            attention_backward(kept)
        elif kind in (params.MLP, params.MOE):
            ffn_backward(kind, kept)
        else:
            grad = t.a(layer_activations(arch, s, kind, tokens, sp))
            t.f(*kept)
            kept.clear()
            t.f(grad)

    vocab = tokens * arch.vocab / s.tp
    depths = 1 + (arch.mtp_depth if s.mtp and last else 0)

    # The heads' block of each micro-batch in flight, in forward order (1F1B's backward runs
    # the micro-batches in that order too).
    heads: list[int] = []

    def micro_batch_forward() -> tuple[list[list[list[int]]], list[int]]:
        per_unit: list[list[list[int]]] = []
        for unit, rebuilt_later in zip(units, checkpointed, strict=True):
            if rebuilt_later:
                scratch: list[int] = []
                for kind in unit:
                    layer_forward(kind, scratch, grad=False)
                t.f(*scratch)
                per_unit.append([[t.a(hidden)]])  # the checkpoint's input
            else:
                layers = []
                for kind in unit:
                    kept: list[int] = []
                    layer_forward(kind, kept, grad=True)
                    layers.append(kept)
                per_unit.append(layers)
        loss: list[int] = []
        if last:
            # what the final norms, MTP's concatenations and the output layer keep (one block,
            # freed with the loss's backward)
            heads.append(t.a(head_activations(arch, s, tokens, sp)))
            for _ in range(depths):
                logits = t.a(BF16 * vocab)
                loss.append(t.a(FP32 * vocab))  # the cross entropy's fp32 softmax, kept
                if s.cross_entropy == "native":
                    t.f(t.a(FP32 * vocab))  # the compiled in-place steps' temporary
                t.f(logits)
        return per_unit, loss

    def micro_batch_backward(per_unit: list[list[list[int]]], loss: list[int]) -> None:
        for fp32_logits in loss:
            grad = t.a(BF16 * vocab)
            t.f(fp32_logits)
            t.f(t.a(hidden))  # the output layer's input gradient
            weight_grad(BF16 * arch.vocab * arch.hidden / s.tp)
            t.f(grad)
        if last:
            t.f(heads.pop(0))
        for unit, layers, rebuilt_now in zip(
            reversed(units), reversed(per_unit), reversed(checkpointed), strict=True
        ):
            if rebuilt_now:
                t.f(*layers[0])
                layers = []
                for kind in unit:
                    kept: list[int] = []
                    layer_forward(kind, kept, grad=True)
                    layers.append(kept)
            for kind, kept in zip(reversed(unit), reversed(layers), strict=True):
                layer_backward(kind, kept)
        if first:
            weight_grad(BF16 * arch.vocab * arch.hidden / s.tp)

    # Before training: the model's bf16 weights, made one by one; Megatron-Core's DDP moves
    # them into its contiguous parameter buffer beside the gradient buffer (param_and_grad_
    # buffer.py: copy_ then del old_param_data), leaving their blocks free in the cache; the
    # distributed optimizer then makes each fp32 main parameter (a bf16 clone, then float()).
    # Frozen parameters stay where they were made (DDP buffers only those that train), and
    # without the distributed optimizer there is no parameter buffer.
    if s.distributed_optimizer:
        trained = _optimizer_shards(arch, s, pattern, first=first, last=last, whole=True)
        t.f(*[t.a(BF16 * size) for size, count in trained for _ in range(math.ceil(count))])
    for size, count in shards:
        for _ in range(math.ceil(count)):
            clone = t.a(BF16 * size)
            t.a(s.adam.master * size)
            t.f(clone)
    # What stays allocated (the main parameters) counts in the optimizer term; the freed
    # weights' segments stay reserved.
    allocator.reserved_before = allocator.allocated
    allocator.peak = allocator.allocated = 0
    temporaries = not s.fused_adam
    for step in range(3):
        held = [micro_batch_forward() for _ in range(in_flight)]
        for per_unit, loss in held:
            micro_batch_backward(per_unit, loss)
        if step == 0:
            for size, count in shards:  # Adam's moments, kept
                moments = (
                    {s.adam.exp_avg: 2 * count}
                    if s.adam.exp_avg == s.adam.exp_avg_sq
                    else {
                        s.adam.exp_avg: count,
                        s.adam.exp_avg_sq: count,
                    }
                )
                for moment, blocks in moments.items():
                    for _ in range(math.ceil(blocks)):
                        t.a(moment * size * (1 - s.optimizer_offload))
        if temporaries:
            made = [
                t.a(FP32 * size * (1 - s.optimizer_offload))
                for size, count in shards
                for _ in range(math.ceil(count))
            ]
            t.f(*made)
        allocator.marks.append(allocator.reserved - allocator.reserved_before)
    return float(allocator.reserved - allocator.reserved_before), float(allocator.peak)
