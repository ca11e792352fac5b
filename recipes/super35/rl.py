"""Nemotron 3.5 Super VL, RL stage 1: RLVR with NeMo-RL GRPO and NeMo Gym (the recipe, Stage 2.1).

RLVR runs joint RLVR and RLHF over a broad environment mix, from the SFT model; its step 120
is the MOPD phase-1 student and the start of every teacher but RLHF teacher 1. The teachers
(``teachers.py``) and MOPD (``mopd.py``) are variants of this stage.

The Super 3.5 RL configs are not public. This is a port of the closest public config (the issue
names it; "SO" in the comments): NeMo-RL main's Super Omni VL GRPO recipe,
``examples/configs/recipes/vlm/vlm_grpo-nemotron-super-omni-120ba12b-16n8g-megatron-tp8ep16cp2-
async-gym.v1.yaml`` on ``examples/nemo_gym/grpo_nanov3.yaml`` (``recipekit import-yaml`` wrote
the first draft). Values are SO's unless a comment says otherwise. Where the port differs:

| what             | SO                           | here (GB200, recipe: "4 GPUs each")          |
|------------------|------------------------------|--------------------------------------------|
| nodes x GPUs     | 16 x 8 = 128 GPUs            | 32 x 4 = 128 GPUs (NOT IN THE RECIPE)        |
| RLHF (GenRM)     | none                         | Ultra's GenRM judge on 4 more nodes        |
| generation       | 8 nodes, vLLM TP 4           | 16 nodes, vLLM TP 4 -> 16 instances        |
| training         | 8 nodes: TP 8 x CP 2, EP 16  | 16 nodes, the same (TP 8 = 2 NVL72 trays)  |
| checkpoint, data | /path/to/...                 | the lineage's run.model / run.data         |
| W&B              | project grpo-superv3omni     | project "nemotron" (the recipe's env.toml)   |

The recipe gives RL node counts only as "16 to 144 nodes depending on the stage"; its per-stage
table (rl/index.md) is not available. 32 nodes keep SO's GPU count.

Multimodal, not text-only. NVIDIA's Nemotron 3.5 Super training recipe says "Run text-only RLVR"
in its ``rl --help`` only; its stage summary ("joint RLVR and RLHF across a broad environment
mix from the SFT checkpoint", the SFT checkpoint being where the model becomes vision-language)
and the public config this is a port of (SO, a ``vlm/`` recipe) are multimodal. This follows
them: up to 3 images a prompt (``policy.generation.vllm_kwargs.limit_mm_per_prompt.image``),
the vision encoder and projector trained, not frozen, NeMo Gym's data processor with dynamic
image shapes. The help text is the one that disagrees with everything else the recipe says.

Processor and tokenizer from the SFT checkpoint, not from the Hugging Face repo. The recipe
names ``nvidia/NVIDIA-Nemotron-3.5-Super-VL-120B-A12B-BF16`` as ``run.hf_architecture`` and "the
source of the Hugging Face processor and tokenizer". Here ``policy.model_name`` and
``policy.tokenizer.name`` are both ``run.model`` (SO's ``${policy.model_name}``), and the chat
template is the checkpoint's own file: the nodes read the artifact store, not the Hub (a
cluster's compute nodes usually cannot reach it, and a job that does would read whatever the
repo holds that day), and the released repo is the post-trained model, MOPD's output after MTP
boosting, not the checkpoint this stage trains from. An SFT checkpoint registered with
``model import sft`` must therefore carry the processor and tokenizer files beside its weights.
"""

from recipekit.hardware import GB200_NODE, Hardware
from recipekit.keypaths import get_at
from recipekit.lineage.store import output_dir
from recipekit.markers import DERIVED, RunInput
from recipekit.model_card import NEMOTRON_35_SUPER_VL_120B
from recipekit.nemo_rl.framework_super35 import NEMO_RL_SUPER35
from recipekit.stage import Stage
from recipes.super35.genrm import GENRM_NODES, RLVR_JUDGE, genrm
from recipes.super35.lineage import SUPER35
from recipes.upstream.nemo_rl_main import vlm_grpo_super_omni_16n8g_async_gym as so

# SO: ${policy.model_name}/chat_template.jinja; the HF checkpoint ships its chat template.
CHAT_TEMPLATE = RunInput("model", "chat_template.jinja")


def run_names(stage: str) -> dict[str, str]:
    """Where a stage writes checkpoints and logs, and its W&B run name. Checkpoints go to the
    artifact store, under the stage's output artifact and run (``lineage.store``): the container
    is gone when the job ends. Logs and the W&B name are named for the stage (NOT IN THE RECIPE;
    SO writes results/ and logs/nemotron-super-omni-async-gym)."""
    output = SUPER35.stage(stage).output
    assert output is not None, f"{stage} publishes no artifact"
    return {
        "checkpointing.checkpoint_dir": output_dir(output),
        "logger.log_dir": f"logs/super35-{stage}",
        "logger.wandb.name": f"super35-{stage}",
    }


# The port of SO: SO's values (recipes/upstream/), its layout included: rollout 256 prompts x
# 16 generations = 4096 samples a step, 16K tokens; training TP 8 x CP 2, EP 16, where TP 8
# spans two GB200 trays of one NVL72 NVLink domain; vLLM TP 4. What changes is where it runs and
# what it reads and writes.
rlvr = Stage(
    name="rlvr",
    description=(
        "RLVR: GRPO with NeMo Gym environments from the SFT model (RL stage 1), multimodal as "
        "the recipe's stage summary and NeMo-RL's public config are (its --help says text-only)"
    ),
    hardware=Hardware(GB200_NODE, num_nodes=32),
    model=NEMOTRON_35_SUPER_VL_120B,
    framework=NEMO_RL_SUPER35,
    lineage=SUPER35.stage("rlvr"),
    config=so.config,
).with_values(
    {
        # SO: 8 nodes x 8 GPUs generate; the same 64 GPUs are 16 GB200 nodes. The cluster and
        # the batch size follow from the hardware and the rollout shape.
        "policy.generation.colocated.resources.num_nodes": 16,
        "policy.generation.colocated.resources.gpus_per_node": DERIVED,
        "cluster.gpus_per_node": DERIVED,
        "cluster.num_nodes": DERIVED,
        # NOT IN SO: its training groups kept inside one NVL72 rack (recipekit.launch.placement).
        "cluster.segment_size": DERIVED,
        "policy.train_global_batch_size": DERIVED,
        # Seed: `data import rl /data/rlvr/train.jsonl --val /data/rlvr/val.jsonl`.
        # NOT IN THE RECIPE: the file names inside the artifact.
        "policy.model_name": RunInput("model"),
        "policy.tokenizer.chat_template": CHAT_TEMPLATE,
        "policy.generation.vllm_cfg.http_server_serving_chat_kwargs.chat_template": (
            CHAT_TEMPLATE
        ),
        "data.train.data_path": RunInput("data", "train.jsonl"),
        "data.validation.data_path": RunInput("data", "val.jsonl"),
        **run_names("rlvr"),
        # Seed, Configuration: W&B project "nemotron"; runs named for the stage.
        "logger.wandb.project": "nemotron",
    }
)

# The recipe: RLVR is "joint RLVR + RLHF over a broad environment mix". SO's mix has verifiable
# rewards only; Nemotron 3 Ultra's student RLVR (NeMo-RL main examples/nemo_gym/nemotron-3-ultra/
# student_rlvr1.yaml) adds the GenRM's pairwise comparisons to them, and so does this: the
# judge, its settings and its 4 nodes are genrm.py's.
rlvr = rlvr.with_values(
    {
        **genrm(RLVR_JUDGE),
        "env.nemo_gym.config_paths": (
            *get_at(so.config, "env.nemo_gym.config_paths"),
            "resources_servers/genrm_compare/configs/genrm_compare.yaml",
        ),
    },
    hardware=Hardware(GB200_NODE, num_nodes=32 + GENRM_NODES),
)
