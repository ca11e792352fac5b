"""Nemotron 3.5 Super VL: the Hugging Face export that ``eval`` serves (the recipe, "Stage 3").

The recipe's Quick Start: "export the RL checkpoint to HF first", then ``super35 eval`` with
``run.model=super35-rl-mopd-phase2-hf-model:latest``. The export reads the release (MOPD phase 2
at step 30, a NeMo-RL Megatron checkpoint) and writes a Hugging Face model into the store.

| stage     | nodes x GPUs | layout (TP x PP, EP x ETP) | reads (model)  | writes              |
|-----------|--------------|----------------------------|----------------|---------------------|
| hf-export | 1 x 4 GB200  | 1 x 1, 4 x 1               | phase 2 step-30 | phase 2 HF model   |

The recipe, Verification: "HF <-> Megatron conversion | Megatron-Bridge verification: GPU import
and export, 1 node x 4 GPUs | Verified". NOT IN THE RECIPE: that layout's split; EP 4 keeps every
expert on one GPU of the node, as Megatron-Bridge's Nemotron 3 Super card exports with EP over
its node's GPUs (``megatron_to_hf_gpu``: TP 1, PP 1, EP 8, ETP 1 on 8 H100s).
"""

from recipekit.hardware import GB200_NODE, Hardware
from recipekit.markers import RunInput
from recipekit.megatron_bridge.export import (
    MEGATRON_BRIDGE_EXPORT,
    NEMO_RL_WEIGHTS,
    Export,
    ExportParallelism,
    HfExportConfig,
)
from recipekit.megatron_bridge.paths import checkpoint_dir
from recipekit.model_card import NEMOTRON_35_SUPER_VL_120B
from recipekit.stage import Stage
from recipes.super35.lineage import SUPER35
from recipes.super35.sft import MEGATRON_BRIDGE_GB200

LINEAGE = SUPER35.stage("hf-export")
# The recipe: "The recipes use nvidia/NVIDIA-Nemotron-3.5-Super-VL-120B-A12B-BF16 as
# run.hf_architecture and as the source of the Hugging Face processor and tokenizer."
HF_ARCHITECTURE = "nvidia/NVIDIA-Nemotron-3.5-Super-VL-120B-A12B-BF16"

hf_export = Stage(
    name="hf-export",
    description=(
        "Nemotron 3.5 Super VL release to Hugging Face (Megatron-Bridge export), 1 x 4 GB200: "
        "EP 4, each rank writes its shards."
    ),
    hardware=Hardware(node=GB200_NODE, num_nodes=1),
    model=NEMOTRON_35_SUPER_VL_120B,
    framework=MEGATRON_BRIDGE_EXPORT,
    # The Super-VL bridge is in no public image, as for pretraining and SFT (sft.py).
    code=(MEGATRON_BRIDGE_GB200,),
    lineage=LINEAGE,
    config=HfExportConfig(
        export=Export(
            hf_model=HF_ARCHITECTURE,
            megatron_path=RunInput("model", NEMO_RL_WEIGHTS),
            hf_path=checkpoint_dir(LINEAGE),
        ),
        model=ExportParallelism(expert_model_parallel_size=4),
    ),
)
