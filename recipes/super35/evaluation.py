"""Nemotron 3.5 Super VL, stage 3: NeMo Evaluator on five benchmarks against a vLLM endpoint.

The recipe, "Stage 3: Evaluation": the report scores every post-trained result with NeMo Gym;
``super35 eval`` "runs the five Table 10 benchmarks that NeMo Evaluator supports out of the box:
enough to check training runs, not to reproduce Table 10". It reads ``run.model``, an HF export
of the RL output (``super35-rl-mopd-phase2-hf-model:latest``), serves it with vLLM
(``vllm/vllm-openai:v0.30.0``) and publishes evaluation results, not a model.

| serving              | nodes x GPUs | tasks (nemo_skills harness)                     |
|----------------------|--------------|-------------------------------------------------|
| vLLM TP 4, 1 replica | 1 x 4 GB200  | MMLU-Pro, GPQA, AIME25, LiveCodeBench, IFBench |
"""

from typing import Any

from recipekit.hardware import GB200_NODE, Hardware
from recipekit.markers import DERIVED, RunInput
from recipekit.model_card import NEMOTRON_35_SUPER_VL_120B
from recipekit.nemo_evaluator.framework import NEMO_EVALUATOR
from recipekit.nemo_evaluator.schema import (
    AdapterConfig,
    ApiEndpoint,
    AutoExport,
    Evaluation,
    EvaluatorConfig,
    Export,
    Extra,
    LauncherConfig,
    NemoEvaluatorConfig,
    Params,
    SlurmExecution,
    Target,
    Task,
    VllmDeployment,
    WandbExport,
)
from recipekit.stage import Stage
from recipes.super35.lineage import SUPER35

LINEAGE = SUPER35.stage("eval")


def _task(name: str, **extra: Any) -> Task:
    """A task with its own ``params.extra`` (repeats, prompt config, split)."""
    params = Params(extra=Extra(**extra))
    return Task(
        name=name, nemo_evaluator_config=NemoEvaluatorConfig(config=EvaluatorConfig(params=params))
    )


# NOT IN THE RECIPE: which five benchmarks (the recipe's evaluate.md is not available).
# Table-10-style chat benchmarks that run without a judge model, extra assets or API keys: the
# four tasks of the launcher's own chat-model template (nemo-evaluator-launcher 0.2.6,
# resources/config_templates/evaluation/chat_reasoning/core_reasoning.yaml) plus AIME 2025, all
# five in the Nemotron 3 Super reproducibility config
# (examples/nemotron/nemotron-3-super/local_nemotron-3-super-120b-a12b.yaml) and in Nemotron 3
# Super's results table (nemotron docs/nemotron/super3/evaluate.md). Repeats, prompt configs and
# splits are that Super 3 config's.
TASKS = (
    _task("ns_mmlu_pro", num_repeats=1, args="++prompt_config=eval/aai/mcq-10choices-boxed"),
    _task("ns_gpqa", num_repeats=8, args="++prompt_config=eval/aai/mcq-4choices"),
    _task(
        "ns_aime2025",
        num_repeats=64,
        args='++prompt_config="/nemo_run/code/eval_factory_prompts/math-oai.yaml"',
    ),
    # The split of the launcher's template and of the Super 3 config's ns_livecodebench entry
    # (2024-08 to 2025-05); Super 3's table reports v5 (ns_livecodebench_v5, 2024-07 to 12).
    _task("ns_livecodebench", num_repeats=8, dataset_split="test_v6_2408_2505"),
    _task("ns_ifbench", num_repeats=8),
)

evaluation = Stage(
    name="eval",
    description=__doc__.strip().splitlines()[0],
    model=NEMOTRON_35_SUPER_VL_120B,
    # The recipe gives the RL stages GB200 nodes with 4 GPUs each and no hardware for eval. One
    # node, as the nemotron CLI's Super 3 eval config (stage3_eval/config/default.yaml,
    # execution.num_nodes: 1): 120B BF16 weights are ~224 GiB, ~56 GiB a GPU at TP 4 of 186 GiB.
    hardware=Hardware(node=GB200_NODE, num_nodes=1),
    framework=NEMO_EVALUATOR,
    lineage=LINEAGE,
    config=LauncherConfig(
        execution=SlurmExecution(
            # NOT IN THE RECIPE: the nemotron CLI's eval configs run with run.env.time "04:00:00";
            # a longer run is resumed by the launcher (max_walltime) after each time-out.
            walltime="04:00:00",
            # NOT IN THE RECIPE: beside the /shared/checkpoints of recipes/super3/dapo.py.
            output_dir="/shared/evaluations/super35-eval",
            # Results reach W&B when the tasks finish, as in the nemotron CLI's Super 3 config.
            auto_export=AutoExport(destinations=("wandb",)),
        ),
        deployment=VllmDeployment(
            # The recipe, Quick Start: "Eval: vllm/vllm-openai:v0.30.0".
            image="vllm/vllm-openai:v0.30.0",
            # run.model, resolved by the plan to /artifacts/<name>/<version> (recipekit's
            # convention, lineage/refs.py; NOT IN THE RECIPE, where the nemotron CLI resolves
            # ${art:model,path} through W&B), so a pin (--set run.model=NAME:v3) moves it.
            checkpoint_path=RunInput("model"),
            # The model in four ways on a 4-GPU node, one replica (vLLM's TP 4 + expert
            # parallelism, as the nemotron CLI's Lightning 3.5 eval serves its MoE).
            tensor_parallel_size=4,
            # NOT IN THE RECIPE: Lightning 3.5's eval serving (nemotron lightning35/stage3_eval/
            # config/default.yaml: gpu_memory_utilization 0.9).
            gpu_memory_utilization=0.9,
            # NOT IN THE RECIPE, from the same Lightning 3.5 config (the 3.5 family's vLLM flags):
            # experts split over the TP ranks, the Mamba state cache in float32, reasoning
            # returned apart from the answer. No tool parser: none of the five tasks calls tools.
            extra_args=(
                "--enable-expert-parallel --mamba-ssm-cache-dtype float32 "
                "--reasoning-parser nemotron_v3"
            ),
        ),
        evaluation=Evaluation(
            tasks=TASKS,
            # GPQA's dataset is gated on Hugging Face (launcher chat_reasoning/default.yaml).
            env_vars={"HF_TOKEN": "host:HF_TOKEN"},
            nemo_evaluator_config=NemoEvaluatorConfig(
                config=EvaluatorConfig(
                    # NOT IN THE RECIPE: the launcher's chat-reasoning defaults (config_templates/
                    # evaluation/chat_reasoning/default.yaml), whose sampling is the Super 3
                    # reproducibility config's (temperature 1.0, top_p 0.95, 131072 new tokens).
                    params=Params(
                        request_timeout=3600,
                        max_retries=10,
                        parallelism=16,
                        temperature=1.0,
                        top_p=0.95,
                        max_new_tokens=131072,
                        extra=Extra(tokenizer=DERIVED, tokenizer_backend="huggingface"),
                    )
                ),
                target=Target(
                    api_endpoint=ApiEndpoint(
                        # The Super 3 reproducibility config's adapters: reasoning on, special
                        # tokens kept for the reasoning parser, responses cached and sampled.
                        adapter_config=AdapterConfig(
                            params_to_add={
                                "chat_template_kwargs": {"enable_thinking": True},
                                "skip_special_tokens": False,
                            },
                            use_caching=True,
                            tracking_requests_stats=True,
                            log_failed_requests=True,
                            use_request_logging=True,
                            max_logged_requests=10,
                            use_response_logging=True,
                            max_logged_responses=10,
                        )
                    )
                ),
            ),
        ),
        # The recipe, Configuration: the env.toml [wandb] project; the entity is the user's team.
        export=Export(wandb=WandbExport(project="nemotron")),
    ),
)
