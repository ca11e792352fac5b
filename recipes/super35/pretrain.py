"""Nemotron 3.5 Super VL vision-language pretraining on Megatron-Bridge (the recipe, "Stage 0").

The report's text-only pretraining is not reproducible (teacher logits and data are not
public); ``super35 pretrain`` runs Megatron-Bridge's image-caption pretraining recipe instead,
warm-started from converted released weights (``SUPER35_INIT_CHECKPOINT``) on Energon
image-caption data (``SUPER35_PRETRAIN_DATA``). Every part of the model trains.

| stage         | nodes x GPUs | layout (TP x PP x CP, EP x ETP) | batch (GBS / MBS) | iterations |
|---------------|--------------|---------------------------------|-------------------|------------|
| pretrain      | 8 x 8 H100   | 1 x 2 x 1, 32 x 1 (DP 32)       | 1280 / 1          | 200        |
| pretrain-tiny | 1 x 8 H100   | 1 x 1 x 1, 8 x 1 (DP 8)         | 8 / 1             | 20         |

Defaults are the recipe's Megatron-Bridge verified configuration (64 x H100, 200 steps, sequence
length 4096); what the recipe does not give comes from github:NVIDIA-NeMo/Megatron-Bridge's recipe
(``src/megatron/bridge/recipes/nemotronh_multimodal/h100/nemotron_35_super_vl.py``, read at
7eafb558) and the Super-VL verification card
(``examples/model_verification_cards/nemotron-3.5-super-vl-120b-a12b/card.yaml``, at 0e7a2ca3),
whose language layout is Nemotron 3 Super's (NVIDIA-NeMo/Megatron-Bridge@067f987d
``examples/model_verification_cards/nemotron-3-super-120b-a12b/card.yaml``, ``pretrain.H100``).
The model, layout and batch are SFT's (``sft.py``): this stage is a variant of it.
"""

from recipekit.hardware import H100_NODE, Hardware
from recipekit.markers import UNSET
from recipekit.megatron_bridge.paths import checkpoint_dir, input_path
from recipekit.megatron_bridge.schema import Optimizer
from recipes.super35.lineage import SUPER35
from recipes.super35.sft import ONE_NODE_SMOKE_TEST, sft

# The hardware-agnostic alias of nemotron_35_super_vl_pretrain_64gpu_h100_bf16_config.
PRETRAIN_RECIPE = (
    "megatron.bridge.recipes.nemotronh_multimodal.nemotron_35_super_vl."
    "nemotron_35_super_vl_pretrain_config"
)

PRETRAIN = SUPER35.stage("pretrain")
PRETRAIN_TINY = SUPER35.stage("pretrain-tiny")

# Megatron-Bridge builds its pretraining recipe from the SFT one (same model, layout and batch,
# nemotron_35_super_vl_pretrain_64gpu_h100_bf16_config), and so does this stage.
pretrain = sft.with_values(
    {
        "recipe._target_": PRETRAIN_RECIPE,
        # The recipe: "all present model stacks remain trainable".
        "model.freeze_vision_model": False,
        # The recipe's measured pipeline balance for a trainable vision stack: 38 of the 88
        # layers on the first stage, which also holds the vision encoder.
        "model.num_layers_in_first_pipeline_stage": 38,
        # Verification card, pretrain.H100 command: with every stack trainable, 80 GiB needs
        # full recompute of the language model and a quarter of Adam's state on the host.
        "model.recompute_granularity": "full",
        "model.recompute_method": "uniform",
        "model.recompute_num_layers": 1,
        "model.recompute_modules": None,
        "optimizer": Optimizer(
            optimizer_cpu_offload=True,
            optimizer_offload_fraction=0.25,
            overlap_cpu_optimizer_d2h_h2d=False,
        ),
        # A warm start from converted released weights (the recipe, "Stage 0"), as the card's
        # `--mode pretrain --pretrained_checkpoint` run; the optimizer starts fresh anyway.
        "checkpoint.pretrained_checkpoint": input_path(PRETRAIN, "model"),
        "checkpoint.finetune": UNSET,
        "dataset.path": input_path(PRETRAIN, "data"),
        "checkpoint.save": checkpoint_dir(PRETRAIN),
        "checkpoint.save_interval": 100,  # the recipe's
    },
    name="pretrain",
    description=(
        "Nemotron 3.5 Super VL image-caption pretraining (Megatron-Bridge), 8 x 8 H100: "
        "TP 1 x PP 2, experts EP 32, every part of the model trains."
    ),
    lineage=PRETRAIN,
)

pretrain_tiny = pretrain.with_values(
    {**ONE_NODE_SMOKE_TEST, "checkpoint.save": checkpoint_dir(PRETRAIN_TINY)},
    name="pretrain-tiny",
    description=(
        "Smoke test of Super 3.5 VL pretraining on 1 x 8 H100: 20 iterations, EP 8, only the "
        "vision projector trains."
    ),
    hardware=Hardware(node=H100_NODE, num_nodes=1),
    lineage=PRETRAIN_TINY,
)
