"""Nemotron 3.5 Super VL, RL stage 3: multi-teacher on-policy distillation (the recipe, Stage 2.3).

MOPD distills the teachers into one student: every prompt goes to the teacher that owns its
NeMo Gym agent (``domains.py``), which scores each student token; prompts no specialist owns go
to the self-anchor, a frozen copy of the student's starting checkpoint. Vision tool use is
distilled in both phases, every other teacher in one. Phase 2's step 30 is the release.

| config       | student             | specialists                                   | nodes |
|--------------|---------------------|-----------------------------------------------|-------|
| phase1       | RLVR step 120       | reasoning, vision, agentic, RLHF 1, RLHF 2    | 30    |
| phase2       | phase 1             | vision, video, vision-reasoning               | 26    |
| single_stage | RLVR step 120       | phase 1's without agentic                     | 28    |

Nodes: 2 generate, 16 train (RLVR's training layout), 2 per distinct teacher, the self-anchor
included. Phases 1 and 2 are blocked (the agentic teacher and vision-reasoning stage 2 are);
``single_stage`` can run.

Ported from NeMo-RL main's Super Omni MOPD recipe ("SO MOPD": ``examples/configs/recipes/vlm/
mopd-nemotron-super-omni-120ba12b-10n8g-megatron-tp8ep16cp2-async-gym.v1.yaml``) on ``rlvr``;
the batch shape and the self-anchor's routing follow Nemotron 3 Ultra's ``mopd.yaml``
("Ultra MOPD"). NOT IN THE RECIPE: the node counts, and which teacher each phase distills beyond
what the recipe says (see ``lineage.py``).
"""

from __future__ import annotations

from recipekit.hardware import GB200_NODE, Hardware
from recipekit.markers import RunInput
from recipekit.nemo_rl.schema_main import (
    AdvantageEstimatorMain,
    NonColocatedTeachers,
    OnPolicyDistillation,
    TeacherResources,
)
from recipekit.stage import Stage
from recipes.super35.domains import (
    AGENTIC,
    GENERAL,
    REASONING,
    RLHF_TEACHER1,
    RLHF_TEACHER2,
    SELF_ANCHOR,
    VIDEO,
    VISION,
    VISION_REASONING,
    Domain,
    config_paths,
)
from recipes.super35.genrm import GENRM_NODES, NO_GENRM, RLVR_JUDGE, genrm
from recipes.super35.lineage import SUPER35, teacher_role
from recipes.super35.rl import rlvr, run_names

GENERATION_NODES = 2  # SO MOPD: one 8-GPU vLLM node
TRAINING_NODES = 16  # RLVR's: TP 8 x CP 2, EP 16 on 64 GPUs
NODES_PER_TEACHER = 2  # SO MOPD: TP 8 x EP 8 on one 8-GPU node


def routing(*specialists: Domain) -> dict[str, str]:
    """``teacher_model_by_agent_name``: each specialist's agents to its teacher's checkpoint,
    the self-anchor's to the student's start. An agent owned twice is an error."""
    routes: dict[str, str] = {}
    for domain in (*specialists, GENERAL):
        teacher = (
            RunInput("model")
            if domain.teacher == SELF_ANCHOR
            else RunInput(teacher_role(domain.teacher))
        )
        for agent in domain.agents:
            if agent in routes:
                raise ValueError(f"Gym agent {agent} is owned by two teachers")
            routes[agent] = teacher
    return routes


def _distillation(*specialists: Domain) -> OnPolicyDistillation:
    return OnPolicyDistillation(
        enabled=True,
        teacher_model_by_agent_name=routing(*specialists),
        default_teacher_alias=GENERAL.agents[0],  # Ultra MOPD: lc_judge_simple_agent
        strict_agent_name_match=True,
        deduplicate_shared_teacher_checkpoints=True,
        non_colocated_teachers=NonColocatedTeachers(
            enabled=True,
            default_teacher_cfg=TeacherResources(
                tensor_model_parallel_size=8,
                pipeline_model_parallel_size=1,
                expert_model_parallel_size=8,
                context_parallel_size=1,
                num_nodes=NODES_PER_TEACHER,
                gpus_per_node=GB200_NODE.gpus_per_node,
                precision="bf16",
                micro_batch_size=1,
                moe_shared_expert_overlap=False,
            ),
        ),
    )


def _mopd(stage: str, description: str, *specialists: Domain) -> Stage:
    teachers = len(specialists) + 1  # the self-anchor has its own
    # The RLHF teachers' agents run their episodes against the GenRM judge, so a phase that
    # distills them serves it (Ultra mopd.yaml keeps genrm_compare and its model, on Gym's own
    # nodes). NOT IN THE RECIPE: its settings, RLVR's (Ultra's MOPD judge is a close variant).
    judged = any(d in (RLHF_TEACHER1, RLHF_TEACHER2) for d in specialists)
    nodes = GENERATION_NODES + TRAINING_NODES + NODES_PER_TEACHER * teachers
    return rlvr.with_values(
        {
            **run_names(stage),
            **(genrm(RLVR_JUDGE) if judged else NO_GENRM),
            "env.nemo_gym.config_paths": config_paths(*specialists, GENERAL),
            "on_policy_distillation": _distillation(*specialists),
            "policy.generation.colocated.resources.num_nodes": GENERATION_NODES,
            # Ultra MOPD: 1024 prompts, one generation each (the teacher scores every token).
            "grpo.num_prompts_per_step": 1024,
            "grpo.num_generations_per_prompt": 1,
            # SO MOPD: the teacher's log-probabilities are the advantage.
            "grpo.adv_estimator": AdvantageEstimatorMain(name="opd"),
            # SO MOPD: refit between rollouts, and drop vLLM's encoder cache after each, since
            # the vision tower trains.
            "grpo.async_grpo.in_flight_weight_updates": False,
            "policy.generation.vllm_cfg.reset_encoder_cache_after_weight_update": True,
            "policy.generation.max_new_tokens": 4096,
            "policy.tokenizer.chat_template_kwargs": {
                "enable_thinking": True,
                "truncate_history_thinking": False,
            },
            "loss_fn.disable_ppo_ratio": True,
            "loss_fn.truncated_importance_sampling_type": "icepop",
            "loss_fn.truncated_importance_sampling_ratio": 5.0,
            "loss_fn.truncated_importance_sampling_ratio_min": 0.2,
            "loss_fn.force_on_policy_ratio": False,
            "loss_fn.use_kl_in_reward": False,
        },
        name=stage,
        description=description,
        helper_depth=1,  # `explain` points at the stage's line below
        hardware=Hardware(GB200_NODE, num_nodes=nodes + (GENRM_NODES if judged else 0)),
        lineage=SUPER35.stage(stage),
    )


PHASE1 = (REASONING, VISION, AGENTIC, RLHF_TEACHER1, RLHF_TEACHER2)
PHASE2 = (VISION, VIDEO, VISION_REASONING)
SINGLE_STAGE = tuple(d for d in PHASE1 if d is not AGENTIC)

mopd_phase1 = _mopd(
    "mopd-phase1",
    "MOPD phase 1 (blocked: distills the agentic teacher)",
    *PHASE1,
)
mopd_phase2 = _mopd(
    "mopd-phase2",
    "MOPD phase 2, whose step 30 is the release (blocked: needs phase 1)",
    *PHASE2,
)
mopd_single_stage = _mopd(
    "mopd-single-stage",
    "MOPD in one stage: phase 1 without the agentic teacher (runs on public components)",
    *SINGLE_STAGE,
)
