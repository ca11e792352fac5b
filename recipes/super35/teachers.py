"""Nemotron 3.5 Super VL, RL stage 2: the specialist teachers (the recipe, Stage 2.2).

Each teacher is a short RL run that pushes one capability past the generalist: six teachers,
ten configs. All start from RLVR step 120 except RLHF teacher 1, which starts from SFT (the
reference run, not the report); ``lineage.py`` says which artifacts each reads and publishes.
Two are blocked: the agentic teacher and vision-reasoning stage 2 need NeMo Gym components
that are not public, so they plan and render but ``submit`` refuses them.

Every teacher is ``rlvr`` (``rl.py``) on its domain's environments (``domains.py``) with the
changes below. The Super 3.5 teacher configs are not public; the changes are ported from the
Nemotron 3 Ultra teachers ("Ultra": NeMo-RL main ``examples/nemo_gym/nemotron-3-ultra/``),
whose GB200 layouts they follow:

| teacher                 | nodes | batch (prompts x gens) | sequence | training TP x CP -> DP |
|-------------------------|-------|------------------------|----------|------------------------|
| reasoning               | 32    | 128 x 16               | 65536    | 8 x 8 -> 1             |
| vision                  | 32    | 128 x 16               | 16384    | 8 x 2 -> 4             |
| video                   | 32    | 128 x 16               | 16384    | 8 x 2 -> 4             |
| agentic (blocked)       | 48    | 32 x 16                | 196608   | 8 x 16 -> 1            |
| vision-reasoning 1, 2   | 32    | 128 x 16               | 16384    | 8 x 2 -> 4             |
| rlhf teacher 1, 2 (x2)  | 32 + 4 | 128 x 16              | 49152    | 8 x 8 -> 1             |

NOT IN THE RECIPE: every number in this table (the recipe's per-stage table, rl/index.md, is not
available); generation keeps RLVR's 16 nodes throughout. The RLHF teachers add the GenRM's 4
nodes (``genrm.py``); the others judge nothing with it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from recipekit.hardware import GB200_NODE, Hardware
from recipekit.stage import Stage
from recipes.super35.domains import (
    AGENTIC,
    REASONING,
    RLHF_TEACHER1,
    RLHF_TEACHER2,
    VIDEO,
    VISION,
    VISION_REASONING,
    Domain,
    config_paths,
)
from recipes.super35.genrm import GENRM_NODES, NO_GENRM, RLHF_JUDGE, genrm
from recipes.super35.lineage import SUPER35
from recipes.super35.rl import rlvr, run_names

# Ultra's teachers: 128 prompts x 16 generations, half the student's batch.
TEACHER_BATCH = {"grpo.num_prompts_per_step": 128}

# Ultra reasoning_teacher.yaml and rlhf_teacher.yaml: long sequences split over CP 8.
LONG_CONTEXT_65K = {
    "policy.max_total_sequence_length": 65536,
    "policy.megatron_cfg.context_parallel_size": 8,
    "policy.generation.vllm_kwargs.max_num_batched_tokens": 65536,
}
LONG_CONTEXT_49K = {
    "policy.max_total_sequence_length": 49152,
    "policy.megatron_cfg.context_parallel_size": 8,
    "policy.generation.vllm_kwargs.max_num_batched_tokens": 49152,
}

def _teacher(
    stage: str,
    domain: Domain,
    description: str,
    changes: Mapping[str, Any] = {},
    *,
    nodes: int = 32,
) -> Stage:
    # Only the RLHF teachers judge with the GenRM, and they need its nodes besides their own.
    rlhf = domain in (RLHF_TEACHER1, RLHF_TEACHER2)
    return rlvr.with_values(
        {
            **run_names(stage),
            "env.nemo_gym.config_paths": config_paths(domain),
            **TEACHER_BATCH,
            **(genrm(RLHF_JUDGE) if rlhf else NO_GENRM),
            **changes,
        },
        name=stage,
        description=description,
        helper_depth=1,  # `explain` points at the stage's line below
        hardware=Hardware(GB200_NODE, num_nodes=nodes + (GENRM_NODES if rlhf else 0)),
        lineage=SUPER35.stage(stage),
    )


teacher_reasoning = _teacher(
    "teacher-reasoning",
    REASONING,
    "Reasoning teacher: math, MCQA, judged equivalence, code and tools at 65k context",
    # Ultra reasoning_teacher.yaml: 65k context.
    LONG_CONTEXT_65K,
)
teacher_vision = _teacher(
    "teacher-vision",
    VISION,
    "Vision tool-use teacher (distilled in both MOPD phases)",
)
teacher_video = _teacher(
    "teacher-video",
    VIDEO,
    "Video reasoning and tracking teacher",
)
teacher_agentic = _teacher(
    "teacher-agentic",
    AGENTIC,
    "Agentic teacher (blocked: its NeMo Gym environment is not public)",
    {
        # Ultra swe_teacher.yaml: 32 prompts x 16 at 192k context. Ultra splits it over CP 32;
        # Super's 12B active parameters need less: CP 16 on 32 training nodes.
        "grpo.num_prompts_per_step": 32,
        "policy.max_total_sequence_length": 196608,
        "policy.megatron_cfg.context_parallel_size": 16,
        "policy.generation.vllm_kwargs.max_num_batched_tokens": 196608,
    },
    nodes=48,
)
teacher_vision_reasoning_stage1 = _teacher(
    "teacher-vision-reasoning-stage1",
    VISION_REASONING,
    "Vision-reasoning teacher, stage 1 (from RLVR step 120, as the reference run did)",
)
# Seed: stage 2's verifier is not public. Its config is stage 1's on stage 1's output.
teacher_vision_reasoning_stage2 = _teacher(
    "teacher-vision-reasoning-stage2",
    VISION_REASONING,
    "Vision-reasoning teacher, stage 2 (blocked: its verifier is not public)",
)

# Ultra rlhf_teacher.yaml: 49k context, lr 2.5e-6; the GenRM judge (genrm.py) comes with the
# domain.
RLHF = {**LONG_CONTEXT_49K, "policy.megatron_cfg.optimizer.lr": 2.5e-6}

teacher_rlhf_teacher1_stage1 = _teacher(
    "teacher-rlhf-teacher1-stage1",
    RLHF_TEACHER1,
    "RLHF teacher 1, stage 1 (from SFT, as the reference run did)",
    RLHF,
)
teacher_rlhf_teacher1_stage2 = _teacher(
    "teacher-rlhf-teacher1-stage2",
    RLHF_TEACHER1,
    "RLHF teacher 1, stage 2",
    RLHF,
)
teacher_rlhf_teacher2_stage1 = _teacher(
    "teacher-rlhf-teacher2-stage1",
    RLHF_TEACHER2,
    "RLHF teacher 2, stage 1 (from RLVR step 120)",
    RLHF,
)
teacher_rlhf_teacher2_stage2 = _teacher(
    "teacher-rlhf-teacher2-stage2",
    RLHF_TEACHER2,
    "RLHF teacher 2, stage 2",
    RLHF,
)
