"""Nemotron 3.5 Super VL supervised fine-tuning on Megatron-Bridge (the recipe, "Stage 1").

The base model is text-only, so SFT is where Super 3.5 becomes a vision-language model: the
vision encoder stays frozen while the projector and the language model train. The report's two
SFT stages map to ``sft`` and ``sft-stage2``: the same recipe on different inputs (stage 2
starts from stage 1's checkpoint and reads the re-weighted blend). LoRA and long-context SFT
are variants of the same base.

| stage            | nodes x GPUs | layout (TP x PP x CP, EP x ETP) | GBS / MBS | seq     | iters |
|------------------|--------------|---------------------------------|-----------|---------|-------|
| sft, sft-stage2  | 8 x 8 H100   | 1 x 2 x 1, 32 x 1 (DP 32)       | 1280 / 1  | 4096    | 200   |
| sft-peft (LoRA)  | 2 x 8 H100   | 4 x 2 x 1, 8 x 1 (DP 2)         | 16 / 1    | 4096    | 500   |
| sft-long-context | 32 x 4 GB200 | 1 x 2 x 32, 64 x 1 (DP 2)       | 8 / 1     | 131072  | 100   |
| sft-tiny         | 1 x 8 H100   | 1 x 1 x 1, 8 x 1 (DP 8)         | 8 / 1     | 4096    | 20    |

Defaults are the recipe's Megatron-Bridge verified configuration (sequence length 4096, not the
report's 524,288-token packed sequences). What the recipe does not give comes from
github:NVIDIA-NeMo/Megatron-Bridge: the recipes
``src/megatron/bridge/recipes/nemotronh_multimodal/{h100,gb200}/nemotron_35_super_vl.py`` (read
at 7eafb558 and 0f6afa6c) and the Super-VL verification card
``examples/model_verification_cards/nemotron-3.5-super-vl-120b-a12b/card.yaml`` (at 0e7a2ca3).
``pretrain.py`` builds pretraining from ``sft``, as Megatron-Bridge builds its pretraining recipe
from the SFT one.
"""

import attrs

from recipekit.checkouts import CodeCheckout
from recipekit.hardware import GB200_NODE, H100_NODE, Hardware
from recipekit.markers import UNSET
from recipekit.megatron_bridge.framework import MEGATRON_BRIDGE
from recipekit.megatron_bridge.paths import checkpoint_dir, input_path
from recipekit.megatron_bridge.schema import (
    Checkpoint,
    Dataset,
    LoRA,
    MegatronBridgeConfig,
    Model,
    Recipe,
    Scheduler,
    Train,
)
from recipekit.model_card import NEMOTRON_35_SUPER_VL_120B
from recipekit.stage import Stage
from recipes.super35.lineage import SUPER35

_MODULE = "megatron.bridge.recipes.nemotronh_multimodal"
# Hardware-agnostic aliases of the 64-GPU H100 SFT and 16-GPU H100 PEFT recipes.
SFT_RECIPE = f"{_MODULE}.nemotron_35_super_vl.nemotron_35_super_vl_sft_config"
PEFT_RECIPE = f"{_MODULE}.nemotron_35_super_vl.nemotron_35_super_vl_peft_config"
# Long-context SFT has only a GB200 recipe (128 GPUs: the recipe's 32 x 4 GB200).
LONG_CONTEXT_RECIPE = (
    f"{_MODULE}.gb200.nemotron_35_super_vl."
    "nemotron_35_super_vl_sft_long_context_128gpu_gb200_bf16_config"
)

SFT = SUPER35.stage("sft")
SFT_STAGE2 = SUPER35.stage("sft-stage2")
SFT_PEFT = SUPER35.stage("sft-peft")
SFT_LONG_CONTEXT = SUPER35.stage("sft-long-context")
SFT_TINY = SUPER35.stage("sft-tiny")

# The recipe: no public image ships the Super-VL recipes yet, so the stages mount "a pinned
# Megatron-Bridge commit" into nemo:26.08. NOT IN THE RECIPE: which commit; these are the commits
# the recipe modules were read at (above), H100 and GB200.
MEGATRON_BRIDGE_H100 = CodeCheckout(
    name="megatron-bridge",
    repository="NVIDIA-NeMo/Megatron-Bridge",
    commit="7eafb558",
    mount="/opt/Megatron-Bridge",
)
MEGATRON_BRIDGE_GB200 = attrs.evolve(MEGATRON_BRIDGE_H100, commit="0f6afa6c")

sft = Stage(
    name="sft",
    description=(
        "Nemotron 3.5 Super VL SFT stage 1 (Megatron-Bridge), 8 x 8 H100: TP 1 x PP 2, experts "
        "EP 32; the vision encoder is frozen, the projector and language model train."
    ),
    hardware=Hardware(node=H100_NODE, num_nodes=8),
    model=NEMOTRON_35_SUPER_VL_120B,
    framework=MEGATRON_BRIDGE,
    code=(MEGATRON_BRIDGE_H100,),
    lineage=SFT,
    config=MegatronBridgeConfig(
        recipe=Recipe(target=SFT_RECIPE),
        train=Train(
            train_iters=200,  # recipe: the verification ran 200 steps
            # Verification card, sft.H100: GBS/MBS 1280/1 (Nemotron 3 Super's 64-GPU stack).
            global_batch_size=1280,
            micro_batch_size=1,
        ),
        # The recipe's layout (verification card, sft.H100: TP1/PP2/CP1/EP32/ETP1).
        model=Model(
            tensor_model_parallel_size=1,
            pipeline_model_parallel_size=2,
            context_parallel_size=1,
            expert_model_parallel_size=32,
            expert_tensor_parallel_size=1,
            sequence_parallel=False,  # nothing to split with TP 1
            seq_length=4096,  # recipe: the verified configuration's sequence length
            # The recipe's: C-RADIO keeps its pretrained weights; SFT teaches the projector
            # and the (text-only) language model to use them.
            freeze_language_model=False,
            freeze_vision_model=True,
            freeze_vision_projection=False,
        ),
        dataset=Dataset(
            path=input_path(SFT, "data"),
            # Verification card, sft commands: imported SFT data need not carry a validation
            # split, and the recipe evaluates nothing (eval_iters 0).
            do_validation=False,
        ),
        scheduler=Scheduler(),
        checkpoint=Checkpoint(
            save=checkpoint_dir(SFT),
            save_interval=200,  # the recipe's
            pretrained_checkpoint=input_path(SFT, "model"),
            # Weights only, iteration 0 (super3 stage1_sft/config/default.yaml: finetune: true).
            finetune=True,
        ),
    ),
)

# Seed: "Same Megatron-Bridge recipe as default, different input artifacts". The inputs are
# RunInputs, so the stage 2 lineage moves them; only the output changes here.
sft_stage2 = sft.with_values(
    {"checkpoint.save": checkpoint_dir(SFT_STAGE2)},
    name="sft-stage2",
    description=(
        "Nemotron 3.5 Super VL SFT stage 2: the stage 1 recipe from stage 1's checkpoint, on "
        "the re-weighted blend."
    ),
    lineage=SFT_STAGE2,
)

# Seed: LoRA on 2 nodes x 8 H100, verified for 500 steps. Everything else is the PEFT recipe's
# (verification card, peft.H100: TP4/PP2/CP1/EP8/ETP1, GBS/MBS 16/1, rank 32, alpha 32): the
# frozen base fits 16 GPUs without recompute when PP 2 splits it 38/50.
sft_peft = sft.with_values(
    {
        "recipe._target_": PEFT_RECIPE,
        "train.train_iters": 500,
        "train.global_batch_size": 16,
        "model.tensor_model_parallel_size": 4,
        "model.expert_model_parallel_size": 8,
        "model.sequence_parallel": True,
        "model.num_layers_in_first_pipeline_stage": 38,
        # Adapters go on the language model only; the projector stays as pretraining left it.
        "model.freeze_vision_projection": True,
        "peft": LoRA(
            dim=32,
            alpha=32,
            dropout=0.0,
            # Language-qualified, so no adapter lands in the vision tower or projector.
            target_modules=tuple(
                f"*language_model.*.{name}"
                for name in (
                    "linear_qkv",
                    "linear_proj",
                    "in_proj",
                    "out_proj",
                    "linear_fc1",
                    "linear_fc2",
                )
            ),
        ),
        "checkpoint.save": checkpoint_dir(SFT_PEFT),
        "checkpoint.save_interval": 100,  # the PEFT recipe's
    },
    name="sft-peft",
    description=(
        "Nemotron 3.5 Super VL LoRA SFT (rank 32) on 2 x 8 H100: TP 4 x PP 2, experts EP 8; "
        "the base stays frozen."
    ),
    hardware=Hardware(node=H100_NODE, num_nodes=2),
    lineage=SFT_PEFT,
)

# Seed: 32 x 4 GB200, on the recipe's built-in dataset; Megatron-Bridge has not verified it.
# The recipe's values: 128K-token CoderForge sequences, CP 32 leaving 4K tokens a rank, PP 2 at
# the verified 38/50 balance and EP 64 filling one NVLink domain per pipeline stage.
sft_long_context = sft.with_values(
    {
        "recipe._target_": LONG_CONTEXT_RECIPE,
        "train.train_iters": 100,
        "train.global_batch_size": 8,
        "model.context_parallel_size": 32,
        "model.expert_model_parallel_size": 64,
        "model.seq_length": 131072,
        "model.num_layers_in_first_pipeline_stage": 38,
        # The built-in dataset: no path, and a fine-tuning dataset batches through the train
        # section, not its own micro_batch_size.
        "dataset.path": input_path(SFT_LONG_CONTEXT, "data"),
        "dataset.micro_batch_size": UNSET,
        "checkpoint.save": checkpoint_dir(SFT_LONG_CONTEXT),
        "checkpoint.save_interval": 100,  # the recipe's
    },
    name="sft-long-context",
    description=(
        "Nemotron 3.5 Super VL long-context SFT (128K tokens) on 32 x 4 GB200: TP 1 x PP 2 x "
        "CP 32, experts EP 64."
    ),
    hardware=Hardware(node=GB200_NODE, num_nodes=32),
    code=(MEGATRON_BRIDGE_GB200,),
    lineage=SFT_LONG_CONTEXT,
)

# NOT IN THE RECIPE (its CLI table lists `-c tiny`, not its values): a one-node smoke test of a
# stage's recipe. EP 8 over the node is the verification card's 8-GPU conversion layout
# (TP1/PP1/EP8/ETP1); with the language model and vision encoder frozen only the projector
# keeps optimizer state, so the 120B weights fit 8 x 80 GiB.
ONE_NODE_SMOKE_TEST = {
    "model.pipeline_model_parallel_size": 1,
    "model.num_layers_in_first_pipeline_stage": None,
    "model.expert_model_parallel_size": 8,
    "model.freeze_language_model": True,
    "model.freeze_vision_model": True,
    "train.train_iters": 20,
    "train.global_batch_size": 8,  # one sample per DP rank
    "checkpoint.save_interval": 20,
}

sft_tiny = sft.with_values(
    {**ONE_NODE_SMOKE_TEST, "checkpoint.save": checkpoint_dir(SFT_TINY)},
    name="sft-tiny",
    description=(
        "Smoke test of Super 3.5 VL SFT on 1 x 8 H100: 20 iterations from the tiny pretraining "
        "checkpoint, EP 8, only the vision projector trains."
    ),
    hardware=Hardware(node=H100_NODE, num_nodes=1),
    lineage=SFT_TINY,
)
