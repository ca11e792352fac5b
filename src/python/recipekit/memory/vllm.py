"""Per-GPU memory of vLLM serving a hybrid model: what its budget holds and how many sequences.

vLLM takes ``gpu_memory_utilization`` x HBM for itself. From that budget it loads the weights,
profiles one forward pass of ``max_num_batched_tokens`` tokens, sets CUDA graphs aside, and
gives everything left to the KV cache (vLLM's ``determine_available_memory``, v1 GPU worker).
For a hybrid model, each sequence needs the attention layers' keys and values for every token
and, per Mamba layer, one fixed-size state: the convolution window and the SSM state
(vLLM's ``MambaSpec``; the SSM state's type is ``mamba_ssm_cache_dtype``).
"""

from __future__ import annotations

import attrs

from recipekit.memory import parameters as params
from recipekit.memory.estimate import GIB, Term
from recipekit.model_card import Architecture

# CUDA graphs captured for decode batch sizes and the process's CUDA context: an allowance.
GRAPHS_ALLOWANCE = 1.5 * GIB
EAGER_ALLOWANCE = 0.5 * GIB
# vLLM's engine defaults, for a stage whose config or command line leaves them out.
VLLM_MAX_NUM_SEQS = 256
VLLM_MAX_BATCHED_TOKENS = 8192


@attrs.frozen(kw_only=True)
class VllmSetup:
    tp: int = 1
    pp: int = 1
    util: float
    max_model_len: int
    max_num_seqs: int = VLLM_MAX_NUM_SEQS
    max_num_batched_tokens: int = VLLM_MAX_BATCHED_TOKENS
    weight_bytes: float = 2.0
    kv_bytes: float = 2.0
    ssm_state_bytes: float = 2.0
    enforce_eager: bool = False
    # Sequences the stage hands one vLLM instance at once (None: unknown).
    wanted_sequences: int | None = None
    keys: dict[str, str] = attrs.field(factory=dict, eq=False, hash=False)

    def key(self, name: str) -> str:
        return self.keys.get(name, name)


def sequence_bytes(arch: Architecture, setup: VllmSetup) -> float:
    """One sequence of ``max_model_len`` tokens in the cache of one GPU."""
    kv_heads = max(arch.kv_heads // setup.tp, 1)  # replicated once TP exceeds the KV heads
    per_token = 2 * kv_heads * arch.head_dim * setup.kv_bytes  # keys and values
    attention = arch.count(params.ATTENTION) * per_token * setup.max_model_len
    mamba = 0.0
    if arch.mamba is not None:
        m = arch.mamba
        channels = (m.inner + 2 * m.groups * m.state_size) / setup.tp
        conv = channels * (m.conv_kernel - 1) * setup.kv_bytes
        ssm = m.num_heads / setup.tp * m.head_dim * m.state_size * setup.ssm_state_bytes
        mamba = arch.count(params.MAMBA) * (conv + ssm)
    return (attention + mamba) / setup.pp


def weights_per_gpu(arch: Architecture) -> float:
    return params.language_model(arch).total


def serving_terms(
    arch: Architecture, setup: VllmSetup, hbm_gib: float
) -> tuple[tuple[Term, ...], float, str]:
    """(terms, the budget in bytes, a note on the sequences that fit)."""
    s = setup
    shards = s.tp * s.pp
    language = params.language_model(arch).total / shards
    # vLLM runs the vision tower whole on every rank.
    vision = arch.vision.params if arch.vision is not None else 0
    weights = (language * s.weight_bytes) + vision * 2.0
    activations = _profile_peak(arch, s)
    graphs = EAGER_ALLOWANCE if s.enforce_eager else GRAPHS_ALLOWANCE
    budget = s.util * hbm_gib * GIB
    per_sequence = sequence_bytes(arch, s)
    cache = budget - weights - activations - graphs
    fits = int(cache // per_sequence) if cache > 0 else 0
    shrink_weights = (s.key("tp"), s.key("weight_bytes"))
    kv = max(cache, per_sequence)
    wanted = s.wanted_sequences
    note = (
        f"KV and Mamba state: {per_sequence / GIB:.3f} GiB per sequence of {s.max_model_len} "
        f"tokens; {fits} fit"
        + (f" (the stage runs up to {wanted} at once per instance)" if wanted else "")
    )
    return (
        (
            Term(
                "weights",
                weights,
                shrink_weights,
                f"{language / 1e9:.2f}B parameters / (TP x PP)"
                + (f" + vision {vision / 1e9:.2f}B whole" if vision else ""),
            ),
            Term(
                "activations (profile run)",
                activations,
                (s.key("max_num_batched_tokens"),),
                f"one forward pass of {s.max_num_batched_tokens} tokens and the sampler",
            ),
            Term("CUDA graphs", graphs, (s.key("enforce_eager"),), "an allowance"),
            Term(
                "KV cache + Mamba state",
                kv,
                (s.key("util"), s.key("max_model_len")),
                "what the budget leaves (at least one sequence)",
            ),
        ),
        budget,
        note,
    )


def _profile_peak(arch: Architecture, s: VllmSetup) -> float:
    """The widest intermediate tensors of one layer for the profile batch, plus the sampler's
    fp32 logits for ``max_num_seqs`` sequences."""
    tokens = s.max_num_batched_tokens
    widths: list[float] = [arch.hidden * 2]
    if arch.attention_heads:
        widths.append((arch.attention_heads + 2 * arch.kv_heads) * arch.head_dim / s.tp)
    if arch.mamba is not None:
        m = arch.mamba
        widths.append((2 * m.inner + 2 * m.groups * m.state_size + m.num_heads) / s.tp)
    if arch.moe is not None:
        e = arch.moe
        # Fused MoE: every token's top-k expert inputs and intermediate (gated: twice).
        widths.append(e.top_k * ((2 if e.gated else 1) * e.expert_ffn + (e.latent or arch.hidden)))
    if arch.ffn:
        widths.append((2 if arch.gated_mlp else 1) * arch.ffn / s.tp)
    layer = 2 * tokens * max(widths) * 2.0  # input and output of the widest step, bf16
    sampler = min(s.max_num_seqs, tokens) * arch.vocab * 4.0
    return layer + sampler
