"""A Super 3.5 chain at test scale, for ``recipekit pipeline submit`` on the local Slurm.

pretrain-tiny -> sft-tiny -> rlvr -> teacher-reasoning -> mopd-single-stage -> hf-export ->
eval, made from the repository's own recipes (their frameworks, configs and artifact names; the
recipes keep their real sizes): the nodes are the test cluster's (2 x 4 fake GPUs), the RL
layouts shrink to them, and RL trains for ``RL_STEPS`` steps, saving every ``SAVE_PERIOD`` and
keeping only the newest checkpoint, so that the step the teacher and MOPD select
(``SELECTED_STEP``) survives only because the pipeline pins it. The lineage is the recipe's for
these stages, except that RLVR starts from the tiny SFT model, MOPD's teachers other than the
reasoning one are imported (their stages are not in this chain) and share the training GPUs
(two nodes hold no teacher of their own), and the export reads single-stage MOPD's output (the
seed's reads phase 2's, which cannot run). ``recipekit pipeline`` loads this file by path.
"""

from __future__ import annotations

import sys
from pathlib import Path


sys.path.insert(0, str(Path(__file__).resolve().parent))

from fake_stages import FAKE_NODE, stand_in  # noqa: E402

from recipekit.hardware import Hardware  # noqa: E402
from recipekit.lineage import ArtifactRef, Import, Pipeline, StageLineage  # noqa: E402
from recipekit.lineage.store import output_dir  # noqa: E402
from recipes.super35 import lineage as seed  # noqa: E402
from recipes.super35.evaluation import evaluation  # noqa: E402
from recipes.super35.genrm import NO_GENRM  # noqa: E402
from recipes.super35.hf_export import hf_export  # noqa: E402
from recipes.super35.mopd import mopd_single_stage  # noqa: E402
from recipes.super35.pretrain import pretrain_tiny  # noqa: E402
from recipes.super35.rl import rlvr  # noqa: E402
from recipes.super35.sft import sft_tiny  # noqa: E402
from recipes.super35.teachers import teacher_reasoning  # noqa: E402

RL_STEPS, SAVE_PERIOD, SELECTED_STEP = 6, 2, 4
SFT_TINY_MODEL = f"{seed.SFT_MODEL}-tiny"
TWO_NODES = Hardware(FAKE_NODE, num_nodes=2)
ONE_NODE = Hardware(FAKE_NODE, num_nodes=1)
MOPD_MODEL = "super35-rl-mopd-single-stage-model"
HF_MODEL = "super35-rl-mopd-single-stage-hf-model"
IMPORTED_TEACHERS = tuple(t for t in seed.MOPD_SINGLE_STAGE_TEACHERS if t != "reasoning")

RLVR = StageLineage(
    stage="rlvr",
    command="super35 rl rlvr",
    inputs={"model": ArtifactRef(SFT_TINY_MODEL), "data": ArtifactRef("super35-rl-rlvr-data")},
    output=seed.RLVR_MODEL,
)
TEACHER = StageLineage(
    stage="teacher-reasoning",
    command="super35 rl teacher reasoning",
    inputs={
        "model": ArtifactRef.at_step(seed.RLVR_MODEL, SELECTED_STEP),
        "data": ArtifactRef(seed.teacher_data("reasoning")),
    },
    output=seed.teacher_model("reasoning"),
)
MOPD = StageLineage(
    stage="mopd-single-stage",
    command="super35 rl mopd -c single_stage",
    inputs={
        "model": ArtifactRef.at_step(seed.RLVR_MODEL, SELECTED_STEP),
        "data": ArtifactRef("super35-rl-mopd-phase1-data"),
        **{
            seed.teacher_role(name): ArtifactRef(seed.teacher_model(name))
            for name in seed.MOPD_SINGLE_STAGE_TEACHERS
        },
    },
    output=MOPD_MODEL,
)
EXPORT = StageLineage(
    stage="hf-export", command="HF export", inputs={"model": ArtifactRef(MOPD_MODEL)}, output=HF_MODEL
)
EVAL = StageLineage(
    stage="eval",
    command="super35 eval",
    inputs={"model": ArtifactRef(HF_MODEL)},
    output=None,
    output_note="Evaluation results",
)
PIPELINE = Pipeline(
    name="super35-test-chain",
    stages=(seed.PRETRAIN[1], seed.SFT[4], RLVR, TEACHER, MOPD, EVAL),
    conversions=(EXPORT,),
    imports=(
        Import("super35-sft-data", "recipekit store import"),
        Import("super35-rl-rlvr-data", "recipekit store import"),
        Import(seed.teacher_data("reasoning"), "recipekit store import"),
        Import("super35-rl-mopd-phase1-data", "recipekit store import"),
        *(Import(seed.teacher_model(t), "recipekit store import") for t in IMPORTED_TEACHERS),
    ),
)

# Megatron-Bridge, one process per GPU: 8 ranks over the two nodes (as fake_stages.per_gpu).
# The stand-in for run_recipe.py needs no Megatron-Bridge checkout (code=()).
pretrain = stand_in(
    pretrain_tiny, hardware=TWO_NODES, lineage=PIPELINE.stage("pretrain-tiny"), code=()
)
sft = stand_in(sft_tiny, hardware=TWO_NODES, lineage=PIPELINE.stage("sft-tiny"), code=())

# NeMo-RL under Ray: one generation node, one training node of 4 GPUs.
SMALL_RL = {
    "policy.generation.colocated.resources.num_nodes": 1,
    "policy.megatron_cfg.tensor_model_parallel_size": 4,
    "policy.megatron_cfg.context_parallel_size": 1,
    "policy.megatron_cfg.expert_model_parallel_size": 4,
    "grpo.max_num_steps": RL_STEPS,
    "checkpointing.save_period": SAVE_PERIOD,
    "checkpointing.keep_top_k": 1,
    # No GenRM: the stand-in judges nothing, and the test cluster has no nodes to spare for it.
    **NO_GENRM,
}
rl = stand_in(rlvr.with_values(SMALL_RL, hardware=TWO_NODES), lineage=PIPELINE.stage("rlvr"))
teacher = stand_in(
    teacher_reasoning.with_values(SMALL_RL, hardware=TWO_NODES),
    lineage=PIPELINE.stage("teacher-reasoning"),
)
# MOPD at the same scale, its teachers sharing the training GPUs.
mopd = stand_in(
    mopd_single_stage.with_values(
        {**SMALL_RL, "on_policy_distillation.non_colocated_teachers.enabled": False},
        hardware=TWO_NODES,
    ),
    lineage=PIPELINE.stage("mopd-single-stage"),
)
# The export on one node of four GPUs (EP 4, as the recipe on a GB200 node), without the
# Megatron-Bridge checkout its stand-in does not need.
export = stand_in(
    hf_export.with_values({"export.hf_path": output_dir(HF_MODEL)}, hardware=ONE_NODE),
    lineage=PIPELINE.stage("hf-export"),
    code=(),
)
evaluation_stage = stand_in(evaluation, hardware=ONE_NODE, lineage=PIPELINE.stage("eval"))
