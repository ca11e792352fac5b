"""Parameter counts of a hybrid Mamba / attention / MoE stack, by layer, from its model card.

Megatron-Core's NemotronH layers have no linear biases (the cards say so), so a layer's count is
its weight matrices, norms and, for Mamba-2, its per-head vectors. Each count is split into the
part every tensor-parallel rank shards (``dense``) and the routed experts that expert parallelism
shards (``expert``): the two are sharded and their optimizer state reduced over different groups.
"""

from __future__ import annotations

import functools

import attrs

from recipekit.model_card import Architecture

ATTENTION, MAMBA, MOE, MLP = "*", "M", "E", "-"


@attrs.frozen
class Count:
    dense: int = 0
    expert: int = 0

    def __add__(self, other: Count) -> Count:
        return Count(self.dense + other.dense, self.expert + other.expert)

    @property
    def total(self) -> int:
        return self.dense + self.expert


@functools.lru_cache(maxsize=256)
def layer(arch: Architecture, kind: str) -> Count:
    """One layer of the pattern, with its pre-norm."""
    h = arch.hidden
    norm = h
    if kind == ATTENTION:
        q, kv = arch.attention_heads * arch.head_dim, arch.kv_heads * arch.head_dim
        return Count(dense=norm + h * (q + 2 * kv) + q * h)
    if kind == MAMBA:
        m = arch.mamba
        if m is None:
            raise ValueError(f"{arch.name}: the pattern has Mamba layers but the card none")
        inner, bc = m.inner, 2 * m.groups * m.state_size
        # Mamba-2 (Dao & Gu 2024, "Transformers are SSMs", section 7.1): one input projection
        # to z, x, B, C and dt; a depthwise conv over x, B, C; A, D and dt bias per head; a
        # gated RMSNorm over the inner width; the output projection.
        in_proj = h * (2 * inner + bc + m.num_heads)
        conv = (inner + bc) * (m.conv_kernel + 1)  # kernel weights and a bias per channel
        return Count(dense=norm + in_proj + conv + 3 * m.num_heads + inner + inner * h)
    if kind == MOE:
        e = arch.moe
        if e is None:
            raise ValueError(f"{arch.name}: the pattern has MoE layers but the card none")
        width = e.latent or h
        up = 2 if e.gated else 1
        # Each expert: up (gated: gate and up) to expert_ffn, then down, in the latent width.
        routed = e.num_experts * (up + 1) * width * e.expert_ffn
        router = h * e.num_experts + e.num_experts  # the weights and the expert-bias vector
        shared = (up + 1) * h * e.shared_ffn
        # LatentMoE (Nemotron 3 Super report): project down to the latent width before the
        # routed experts and back up after them.
        latent = 2 * h * e.latent if e.latent else 0
        return Count(dense=norm + router + shared + latent, expert=routed)
    if kind == MLP:
        up = 2 if arch.gated_mlp else 1
        return Count(dense=norm + (up + 1) * h * arch.ffn)
    raise ValueError(f"{arch.name}: unknown layer kind {kind!r} in the pattern")


def embedding(arch: Architecture) -> int:
    return arch.vocab * arch.hidden


def output_layer(arch: Architecture) -> int:
    """The final norm and the output projection (none of its own when tied)."""
    return arch.hidden + (0 if arch.tied_embeddings else arch.vocab * arch.hidden)


def mtp(arch: Architecture) -> Count:
    """The multi-token-prediction block: its layers once (shared across depths), the projection
    that joins the hidden state and the next token's embedding, and three norms."""
    if not arch.mtp_pattern:
        return Count()
    joined = 2 * arch.hidden * arch.hidden + 3 * arch.hidden
    block = Count(dense=joined)
    for kind in arch.mtp_pattern:
        block = block + layer(arch, kind)
    return block


@functools.lru_cache(maxsize=1024)
def stack(arch: Architecture, pattern: str | None = None) -> Count:
    """Every layer of ``pattern`` (default: the whole model's)."""
    count = Count()
    for kind in arch.pattern if pattern is None else pattern:
        count = count + layer(arch, kind)
    return count


def language_model(arch: Architecture, *, with_mtp: bool = True) -> Count:
    body = stack(arch) + Count(dense=embedding(arch) + output_layer(arch))
    return body + mtp(arch) if with_mtp else body


def active(arch: Architecture) -> int:
    """Parameters one token passes through: the routed experts' share is top-k of them."""
    body = language_model(arch, with_mtp=False)
    if arch.moe is None:
        return body.total
    per_layer = body.expert // max(arch.pattern.count(MOE), 1)
    routed_active = per_layer * arch.moe.top_k // arch.moe.num_experts
    return body.dense + routed_active * arch.pattern.count(MOE)
