"""What the plan must know about the model being trained: its size for the layout checks, and
its architecture for the memory estimate (``recipekit.memory``).

Every architecture value is the published model config's; ``sources`` names where each group
was read (repository, commit and path, or the model's own config).
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from recipekit.validators import at_least

LAYER_KINDS = "M*E-"


def _pattern(_: object, attribute: attrs.Attribute[str], value: str) -> None:
    unknown = sorted(set(value) - set(LAYER_KINDS))
    if unknown:
        raise ValueError(
            f"{attribute.name}: {''.join(unknown)!r} is not a layer kind "
            "(M Mamba, * attention, E MoE, - MLP)"
        )


@attrs.frozen(kw_only=True)
class Mamba2:
    num_heads: int = attrs.field(validator=at_least(1))
    head_dim: int = attrs.field(validator=at_least(1))
    state_size: int = attrs.field(validator=at_least(1))
    groups: int = attrs.field(validator=at_least(1))
    conv_kernel: int = 4
    # The SSD kernel's chunk length (mamba_ssm's default): its saved states are per chunk.
    chunk_size: int = 128

    @property
    def inner(self) -> int:
        return self.num_heads * self.head_dim


@attrs.frozen(kw_only=True)
class MoE:
    num_experts: int = attrs.field(validator=at_least(1))
    top_k: int = attrs.field(validator=at_least(1))
    expert_ffn: int = attrs.field(validator=at_least(1))
    shared_ffn: int = 0
    # LatentMoE: routed experts work in this width instead of the hidden size (0: none).
    latent: int = 0
    # Gated (SwiGLU) experts have a gate beside the up projection; squared ReLU ones do not.
    gated: bool = False


@attrs.frozen(kw_only=True)
class VisionEncoder:
    name: str
    # Encoder and projector together; they sit on the first pipeline stage.
    params: int = attrs.field(validator=at_least(0))
    hidden: int = 0
    layers: int = 0
    patch_size: int = 0
    image_size: int = 0


# Its hash is kept (cache_hash): every cached estimate keys on it, thousands of times in a
# layout search.
@attrs.frozen(kw_only=True, cache_hash=True)
class Architecture:
    name: str
    # One character per layer: M Mamba-2, * attention, E MoE, - MLP (Megatron-Core's
    # hybrid_override_pattern).
    pattern: str = attrs.field(validator=_pattern)
    hidden: int = attrs.field(validator=at_least(1))
    vocab: int = attrs.field(validator=at_least(1))
    attention_heads: int = 0
    kv_heads: int = 0
    head_dim: int = 0
    ffn: int = 0
    gated_mlp: bool = False
    mamba: Mamba2 | None = None
    moe: MoE | None = None
    # Multi-token prediction: its layers (once: the depths share weights) and its depth.
    mtp_pattern: str = attrs.field(default="", validator=_pattern)
    mtp_depth: int = 0
    tied_embeddings: bool = False
    # The longest sequence the model is configured for (vLLM's default max_model_len); 0: unknown.
    max_positions: int = 0
    vision: VisionEncoder | None = None
    sources: Mapping[str, str] = attrs.field(factory=dict, eq=False)

    @property
    def num_layers(self) -> int:
        return len(self.pattern)

    def count(self, kind: str) -> int:
        return self.pattern.count(kind)


@attrs.frozen(kw_only=True)
class ModelCard:
    name: str
    total_params_b: float
    active_params_b: float
    num_layers: int
    # Routed experts per MoE layer; 0 for a dense model.
    num_experts: int = 0
    # None: the plan checks the layout but does not estimate memory.
    architecture: Architecture | None = attrs.field(default=None, eq=False)

    @property
    def is_moe(self) -> bool:
        return self.num_experts > 0

    @property
    def is_placeholder(self) -> bool:
        """A card that records nothing of the model (no layer count): what ``import-yaml`` writes
        for the user to fill in. Its zeros are unknowns, so no check may read them as facts
        (a dense model, a layer count to split)."""
        return self.num_layers == 0

    @property
    def is_dense(self) -> bool:
        """Known to have no experts: a filled-in card without them."""
        return not self.is_placeholder and not self.is_moe


# Sources of the architecture values (read through this team's mirrors at these commits).
_MEGATRON_LM_SUPER = (
    "NVIDIA/Megatron-LM@83e7466c examples/post_training/modelopt/conf/nvidia/"
    "NVIDIA-Nemotron-3-Super-120B-A12B-BF16.sh"
)
_MEGATRON_LM_SUPER_RELEASE = (
    "NVIDIA/Megatron-LM@21197199 tests/functional_tests/test_cases/nemotron/"
    "nemotron3_super_release_gb200/model_config.yaml"
)
_BRIDGE_SUPER_TEST = (
    "NVIDIA-NeMo/Megatron-Bridge@0bc1089f tests/unit_tests/recipes/nemotronh/"
    "test_nemotron_3_super.py"
)
_BRIDGE_SUPER_CARD = (
    "NVIDIA-NeMo/Megatron-Bridge@74749b4f examples/model_verification_cards/"
    "nemotron-3-super-120b-a12b/card.yaml (123,611,033,088 parameters in the HF checkpoint)"
)
_BRIDGE_OMNI = (
    "NVIDIA-NeMo/Megatron-Bridge@6b8f9f8d src/megatron/bridge/models/nemotron_omni/"
    "nemotron_omni_provider.py and modeling_nemotron_omni.py"
)

NEMOTRON_3_SUPER_ARCHITECTURE = Architecture(
    name="Nemotron 3 Super 120B-A12B",
    pattern="MEMEMEM*EMEMEMEM*EMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEM*EMEMEMEME",
    hidden=4096,
    vocab=131072,
    attention_heads=32,
    kv_heads=2,
    head_dim=128,
    mamba=Mamba2(num_heads=128, head_dim=64, state_size=128, groups=8, conv_kernel=4),
    moe=MoE(
        num_experts=512, top_k=22, expert_ffn=2688, shared_ffn=5376, latent=1024, gated=False
    ),
    mtp_pattern="*E",
    mtp_depth=2,
    tied_embeddings=False,
    max_positions=262144,
    sources={
        "pattern, hidden, heads, Mamba heads, experts, top-k, latent, shared": _MEGATRON_LM_SUPER,
        "layers, MTP depth 2": _MEGATRON_LM_SUPER_RELEASE,
        "experts, top-k, expert and latent sizes, MTP pattern *E": _BRIDGE_SUPER_TEST,
        "vocab 131072, conv kernel 4, 8 Mamba groups, untied head: the parameter count of":
        _BRIDGE_SUPER_CARD,
        "max_positions 262144": (
            "the HF config.json of nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-BF16"
            " (max_position_embeddings), as quoted by public vLLM and SGLang recipes"
        ),
    },
)

# The recipe, "Model Specifications": the Super 3 backbone with the Omni vision stack (RADIO
# ViT-H/16 encoder, 32 layers of width 1280; pixel shuffle 0.5; a squared-ReLU projector
# 5120 -> 20480 -> 4096; a two-frame video embedder). Encoder 653.6M and projector 188.8M make
# the recipe's 124.453B with the backbone and MTP.
NEMOTRON_35_SUPER_VL_ARCHITECTURE = attrs.evolve(
    NEMOTRON_3_SUPER_ARCHITECTURE,
    name="Nemotron 3.5 Super VL 120B-A12B",
    vision=VisionEncoder(
        name="RADIO ViT-H/16 and projector",
        params=653_600_000 + 188_750_000,
        hidden=1280,
        layers=32,
        patch_size=16,
        image_size=512,
    ),
    sources={**NEMOTRON_3_SUPER_ARCHITECTURE.sources, "vision encoder, projector": _BRIDGE_OMNI},
)

NEMOTRON_3_SUPER_120B = ModelCard(
    name="NVIDIA-Nemotron-3-Super-120B-A12B",
    total_params_b=120,
    active_params_b=12,
    num_layers=88,
    num_experts=512,
    architecture=NEMOTRON_3_SUPER_ARCHITECTURE,
)

NEMOTRON_35_SUPER_VL_120B = ModelCard(
    name="NVIDIA-Nemotron-3.5-Super-VL-120B-A12B",
    total_params_b=120,
    active_params_b=12,
    num_layers=88,
    num_experts=512,
    architecture=NEMOTRON_35_SUPER_VL_ARCHITECTURE,
)

# Qwen3-1.7B, the model of NeMo-RL's small GRPO, MOPD and distillation recipes (NVIDIA-NeMo/
# Megatron-Bridge@8c6c6534 src/megatron/bridge/models/qwen/qwen_provider.py, Qwen3 1.7B).
QWEN3_1_7B = ModelCard(
    name="Qwen3-1.7B",
    total_params_b=1.72,
    active_params_b=1.72,
    num_layers=28,
    architecture=Architecture(
        name="Qwen3-1.7B",
        pattern="*-" * 28,
        hidden=2048,
        vocab=151936,
        attention_heads=16,
        kv_heads=8,
        head_dim=128,
        ffn=6144,
        gated_mlp=True,
        tied_embeddings=True,
        sources={
            "all": "NVIDIA-NeMo/Megatron-Bridge@8c6c6534 src/megatron/bridge/models/qwen/"
            "qwen_provider.py (Qwen3ModelProvider1P7B)"
        },
    ),
)

# Nemotron 3 Nano 30B-A3B (NVIDIA-NeMo/Megatron-Bridge@bcd2d134
# src/megatron/bridge/recipes/nemotronh/h100/nemotron_3_nano.py; NVIDIA/Megatron-LM@83e7466c
# examples/post_training/modelopt/conf/nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.sh).
NEMOTRON_3_NANO_30B = ModelCard(
    name="NVIDIA-Nemotron-3-Nano-30B-A3B",
    total_params_b=31.6,
    active_params_b=3.2,
    num_layers=52,
    num_experts=128,
    architecture=Architecture(
        name="Nemotron 3 Nano 30B-A3B",
        pattern="MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME",
        hidden=2688,
        vocab=131072,
        attention_heads=32,
        kv_heads=2,
        head_dim=128,
        mamba=Mamba2(num_heads=64, head_dim=64, state_size=128, groups=8, conv_kernel=4),
        moe=MoE(num_experts=128, top_k=6, expert_ffn=1856, shared_ffn=3712),
        sources={"all": "Megatron-Bridge nemotron_3_nano.py and Megatron-LM's modelopt config"},
    ),
)

# Nemotron 3.5 Lightning 30B-A3B: Nemotron 3 Nano's architecture, trained natively with two MTP
# depths of one shared attention + MoE block. Every value is read from Megatron-Bridge at
# 067f987df (pinned in 3rdparty/reference/manifest.toml, checked by memory/published_test.py).
_BRIDGE_LIGHTNING = "NVIDIA-NeMo/Megatron-Bridge@067f987df "
_NANO = NEMOTRON_3_NANO_30B.architecture
assert _NANO is not None
NEMOTRON_35_LIGHTNING_30B = ModelCard(
    name="NVIDIA-Nemotron-3.5-Lightning-30B-A3B",
    total_params_b=32.9,
    active_params_b=3.6,
    num_layers=52,
    num_experts=128,
    architecture=attrs.evolve(
        _NANO,
        name="Nemotron 3.5 Lightning 30B-A3B",
        mtp_pattern="*E",
        mtp_depth=2,
        sources={
            "pattern, hidden, heads, Mamba, experts, top-k, expert and shared sizes": (
                _BRIDGE_LIGHTNING + "src/megatron/bridge/recipes/nemotronh/h100/nemotron_3_nano.py"
                " (HybridModelProvider of nemotron_3_nano_pretrain_8gpu_h100_bf16_config)"
            ),
            "MTP: 2 depths of one *E block (mtp_use_repeated_layer)": (
                _BRIDGE_LIGHTNING + "src/megatron/bridge/recipes/nemotronh/h100/nemotron_3_nano.py"
                " (nemotron_3_5_lightning_pretrain_config)"
            ),
            "vocab 131072, untied head: the parameter count of": (
                _BRIDGE_LIGHTNING + "examples/model_verification_cards/nemotron-3.5-lightning/"
                "card.yaml (32,913,266,240 parameters with the MTP layers)"
            ),
        },
    ),
)
