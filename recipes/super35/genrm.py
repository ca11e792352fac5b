"""The GenRM that scores RLHF rewards in Nemotron 3.5 Super VL's RL: RLVR's RLHF part and the
RLHF teachers (the recipe: "NeMo-RL's public Super 3.5 recipe uses
nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-GenRM"; the report's length-penalized GenRM is not
public).

NeMo Gym serves it on GPU nodes of its own (``env.nemo_gym.num_gpu_nodes``), which the job
allocates beside NeMo-RL's cluster (``recipekit.nemo_rl.derivations_main``). NOT IN THE RECIPE:
how it is served. The Nemotron 3 Ultra configs this repository ports from (NeMo-RL main
``examples/nemo_gym/nemotron-3-ultra/student_rlvr1.yaml``, ``rlhf_teacher.yaml``) serve it with
vLLM at TP 4 x DP 4, 16 GPUs: ``GENRM_NODES`` GB200 nodes of 4. Ultra gives Gym 20 nodes because
it also serves its NL2Bash and safety judges there, which Super 3.5's stages do not use.
"""

from __future__ import annotations

from typing import Any

from recipekit.hardware import GB200_NODE
from recipekit.markers import UNSET

GENRM_MODEL = "nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-GenRM"
# Ultra's vllm_serve_kwargs for the GenRM: 4 replicas of TP 4.
GENRM_TENSOR_PARALLEL, GENRM_REPLICAS = 4, 4
GENRM_NODES = GENRM_TENSOR_PARALLEL * GENRM_REPLICAS // GB200_NODE.gpus_per_node

# The pairwise judge's settings both variants share (Ultra's), and what differs: RLVR's student
# is rewarded for reasoning and answers and penalised for their length (student_rlvr1.yaml);
# the RLHF teachers are trained on the pure pairwise judgment (rlhf_teacher.yaml: every bonus
# and penalty zeroed).
_JUDGE = {
    "genrm_model_server": {"type": "responses_api_models", "name": "genrm_model"},
    "genrm_responses_create_params": {
        "max_output_tokens": 24576,
        "temperature": 1.0,
        "top_p": 0.95,
    },
    "comparison_strategy": "circular",
    "num_judges_per_comparison": 1,
    "use_principle": True,
    "aggregator_method": "simple_tiebreaker",
    "use_golden_anchor": False,
    "top_percentile": 0.2,
    "genrm_parse_retries": 1,
    "group_style_penalty_coeff": 0.0,
    "default_score": 3.0,
    "default_ranking": 3.5,
}
RLVR_JUDGE = {
    "reasoning_bonus": 0.5,
    "answer_bonus": 0.5,
    "group_reasoning_length_penalty_coeff": 0.1,
    "group_answer_length_penalty_coeff": 0.25,
}
RLHF_JUDGE = {
    "reasoning_bonus": 0.0,
    "answer_bonus": 0.0,
    "group_reasoning_length_penalty_coeff": 0.0,
    "group_answer_length_penalty_coeff": 0.0,
}
# The GenRM's vLLM server, as Ultra serves it locally.
_SERVER = {
    "entrypoint": "app.py",
    "model": GENRM_MODEL,
    "vllm_serve_kwargs": {
        "tensor_parallel_size": GENRM_TENSOR_PARALLEL,
        "data_parallel_size": GENRM_REPLICAS,
        "data_parallel_size_local": 1,
        "pipeline_parallel_size": 1,
        "gpu_memory_utilization": 0.85,
        "max_model_len": 131072,
    },
}


def genrm(judge: dict[str, Any]) -> dict[str, Any]:
    """The overrides that serve the GenRM on its own nodes and judge with ``judge``'s terms."""
    return {
        "env.nemo_gym.num_gpu_nodes": GENRM_NODES,
        "env.nemo_gym.genrm_compare_resources_server": {
            "resources_servers": {"genrm_compare": {**_JUDGE, **judge}}
        },
        "env.nemo_gym.genrm_model": {"responses_api_models": {"genrm_model": _SERVER}},
    }


# For the stages built on RLVR that judge nothing with it (the other teachers, MOPD).
NO_GENRM = {key: UNSET for key in genrm(RLVR_JUDGE)}
