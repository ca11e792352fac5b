"""Which NeMo Gym environments each Super 3.5 specialist owns (the recipe, Stage 2.2 and 2.3).

A teacher trains on its domain's environments; MOPD routes every prompt to the teacher that owns
its Gym agent, and prompts no specialist owns to the self-anchor (``general``: a frozen copy of
the MOPD student's starting checkpoint). One table serves both, so a domain moved here moves the
teacher's environments and MOPD's routing together.

NOT IN THE RECIPE: the recipe names the teachers (agentic, reasoning, vision tool use, video
reasoning and tracking, vision reasoning, alignment) but its environment lists (rl/teachers.md)
are not available. Agents and servers come from the closest public configs, each cited below:
NeMo-RL main ``examples/nemo_gym/nemotron-3-ultra/`` ("Ultra": teachers and ``mopd.yaml``'s
routing) and the Super Omni VL GRPO/MOPD recipes ("SO").
"""

from __future__ import annotations

import attrs

# Every Gym run loads the policy's own model server first.
POLICY_MODEL_SERVER = "responses_api_models/vllm_model/configs/vllm_model_for_training.yaml"
SELF_ANCHOR = "general"


@attrs.frozen(kw_only=True)
class Domain:
    """Prompts whose Gym agent is one of ``agents``, verified by the ``servers`` configs."""

    teacher: str  # the teacher's name in lineage.py, or SELF_ANCHOR
    agents: tuple[str, ...] = attrs.field(validator=attrs.validators.min_len(1))
    servers: tuple[str, ...] = attrs.field(validator=attrs.validators.min_len(1))


def _server(name: str, config: str | None = None) -> str:
    return f"resources_servers/{name}/configs/{config or name}.yaml"


REASONING = Domain(
    teacher="reasoning",
    # Ultra mopd.yaml: the reasoning teacher's agent slots.
    agents=(
        "math_with_judge_simple_agent",
        "equivalence_llm_judge_simple_agent",
        "mcqa_simple_agent",
        "ns_tools_simple_agent",
        "code_gen_simple_agent",
    ),
    servers=(
        _server("math_with_judge"),
        _server("equivalence_llm_judge"),
        _server("mcqa"),
        _server("ns_tools"),
        _server("code_gen"),
    ),
)
VISION = Domain(
    teacher="vision",
    # SO's GUI grounding environment: the public vision tool-use task.
    agents=("gui_coordinate_simple_agent",),
    servers=(_server("gui_coordinate"),),
)
VIDEO = Domain(
    teacher="video",
    # No public Gym environment is video-specific; SO's exact-answer matcher verifies the
    # video reasoning and tracking answers.
    agents=("string_match_simple_agent",),
    servers=(_server("string_match"),),
)
VISION_REASONING = Domain(
    teacher="vision-reasoning",
    # SO's MOPD recipe: the public visual counting environment.
    agents=("circle_count_simple_agent",),
    servers=(_server("circle_count"),),
)
AGENTIC = Domain(
    teacher="agentic",
    # Ultra swe_teacher.yaml's coding agent. The Super 3.5 agentic environment is not public
    # (recipe: Open-Source Status), so this stage is blocked.
    agents=("swe_agents_train",),
    servers=("responses_api_agents/swe_agents/configs/swebench_openhands_training.yaml",),
)
# Ultra mopd.yaml routes both GenRM agents to its one RLHF teacher; Super 3.5 has two RLHF
# teachers, so each takes one (reasoning on / off).
RLHF_TEACHER1 = Domain(
    teacher="rlhf-teacher1",
    agents=("genrm_simple_agent",),
    servers=(_server("genrm_compare"),),
)
RLHF_TEACHER2 = Domain(
    teacher="rlhf-teacher2",
    agents=("genrm_simple_agent_reasoning_off",),
    servers=(_server("genrm_compare"),),
)
GENERAL = Domain(
    teacher=SELF_ANCHOR,
    # Ultra mopd.yaml: default_teacher_alias lc_judge_simple_agent, routed to `general`.
    agents=("lc_judge_simple_agent",),
    servers=(_server("equivalence_llm_judge", "lc_judge"),),
)

DOMAINS = (
    REASONING,
    VISION,
    VIDEO,
    VISION_REASONING,
    AGENTIC,
    RLHF_TEACHER1,
    RLHF_TEACHER2,
    GENERAL,
)


def config_paths(*domains: Domain) -> tuple[str, ...]:
    """NeMo Gym's ``config_paths`` for prompts of ``domains``: the policy's server first."""
    servers: list[str] = [POLICY_MODEL_SERVER]
    for domain in domains:
        servers += [s for s in domain.servers if s not in servers]
    return tuple(servers)
