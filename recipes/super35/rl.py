"""Nemotron 3.5 Super VL, RL stage 1: RLVR with NeMo-RL GRPO and NeMo Gym (seed 004, Stage 2.1).

RLVR runs joint RLVR and RLHF over a broad environment mix, from the SFT model; its step 120
is the MOPD phase-1 student and the start of every teacher but RLHF teacher 1. The teachers
(``teachers.py``) and MOPD (``mopd.py``) are variants of this stage.

The Super 3.5 RL configs are not public. This is a port of the closest public config (the issue
names it; "SO" in the comments): NeMo-RL main's Super Omni VL GRPO recipe,
``examples/configs/recipes/vlm/vlm_grpo-nemotron-super-omni-120ba12b-16n8g-megatron-tp8ep16cp2-
async-gym.v1.yaml`` on ``examples/nemo_gym/grpo_nanov3.yaml`` (``recipekit import-yaml`` wrote
the first draft). Values are SO's unless a comment says otherwise. Where the port differs:

| what             | SO                           | here (GB200, seed: "4 GPUs each")          |
|------------------|------------------------------|--------------------------------------------|
| nodes x GPUs     | 16 x 8 = 128 GPUs            | 32 x 4 = 128 GPUs (NOT IN THE SEED)        |
| RLHF (GenRM)     | none                         | Ultra's GenRM judge on 4 more nodes        |
| generation       | 8 nodes, vLLM TP 4           | 16 nodes, vLLM TP 4 -> 16 instances        |
| training         | 8 nodes: TP 8 x CP 2, EP 16  | 16 nodes, the same (TP 8 = 2 NVL72 trays)  |
| checkpoint, data | /path/to/...                 | the lineage's run.model / run.data         |
| W&B              | project grpo-superv3omni     | project "nemotron" (the seed's env.toml)   |

The seed gives RL node counts only as "16 to 144 nodes depending on the stage"; its per-stage
table (rl/index.md) is not available. 32 nodes keep SO's GPU count.
"""

from recipekit.hardware import GB200_NODE, Hardware
from recipekit.lineage.store import output_dir
from recipekit.markers import DERIVED, RunInput
from recipekit.model_card import NEMOTRON_35_SUPER_VL_120B
from recipekit.nemo_rl.framework import NEMO_RL_SUPER35
from recipekit.nemo_rl.schema_main import (
    AsyncGRPOMain,
    CheckpointingMain,
    ClippedPGLossMain,
    ClusterMain,
    DataMain,
    DatasetMain,
    Draft,
    Environments,
    GenerationMain,
    GRPOConfigMain,
    GRPOMasterConfigMain,
    LoggerMain,
    McoreGenerationMain,
    MegatronCheckpoint,
    MegatronDDPMain,
    MegatronMain,
    MegatronOptimizerMain,
    NemoGym,
    PolicyMain,
    RewardShapingMain,
    SequencePackingMain,
    TokenizerMain,
    VllmConfigMain,
    WandbMain,
)
from recipekit.nemo_rl.schema_super_v3 import (
    Colocation,
    DTensor,
    DynamicBatching,
    GenerationResources,
    GPUMonitoring,
    MegatronScheduler,
    MLflow,
    RewardScaling,
    Tensorboard,
)
from recipekit.stage import Stage
from recipes.super35.genrm import GENRM_NODES, RLVR_JUDGE, genrm
from recipes.super35.lineage import SUPER35

# SO: ${policy.model_name}/chat_template.jinja; the HF checkpoint ships its chat template.
CHAT_TEMPLATE = RunInput("model", "chat_template.jinja")


def run_names(stage: str) -> dict[str, str]:
    """Where a stage writes checkpoints and logs, and its W&B run name. Checkpoints go to the
    artifact store, under the stage's output artifact and run (``lineage.store``): the container
    is gone when the job ends. Logs and the W&B name are named for the stage (NOT IN THE SEED;
    SO writes results/ and logs/nemotron-super-omni-async-gym)."""
    output = SUPER35.stage(stage).output
    assert output is not None, f"{stage} publishes no artifact"
    return {
        "checkpointing.checkpoint_dir": output_dir(output),
        "logger.log_dir": f"logs/super35-{stage}",
        "logger.wandb.name": f"super35-{stage}",
    }


grpo = GRPOConfigMain(
    # Rollout shape: 256 prompts x 16 generations = 4096 samples a step.
    num_prompts_per_step=256,
    num_generations_per_prompt=16,
    val_num_generations_per_prompt=4,
    max_rollout_turns=1,
    max_num_epochs=1,
    max_num_steps=1000,
    normalize_rewards=True,
    use_leave_one_out_baseline=True,
    val_period=0,
    val_start_at=-1,
    val_at_start=False,
    val_at_end=False,
    overlong_filtering=True,
    advantage_clip_low=-50,
    advantage_clip_high=50,
    max_val_samples=None,
    stop_at_validation_metric=None,
    stop_at_validation_threshold=None,
    val_batch_size=256,
    seed=42,
    async_grpo=AsyncGRPOMain(
        enabled=True,
        max_trajectory_age_steps=1,
        in_flight_weight_updates=True,
        recompute_kv_cache_after_weight_updates=False,
        max_generation_failures=0,
    ),
    batch_multiplier=1,
    use_dynamic_sampling=False,
    reward_shaping=RewardShapingMain(
        enabled=False,
    ),
    reward_scaling=RewardScaling(
        enabled=False,
    ),
    seq_logprob_error_threshold=2,
    invalid_tool_call_advantage=None,
    malformed_thinking_advantage=None,
    zero_variance_prompt_filtering=False,
)

loss_fn = ClippedPGLossMain(
    reference_policy_kl_penalty=0,
    reference_policy_kl_type="k3",
    kl_input_clamp_value=None,
    kl_output_clamp_value=None,
    ratio_clip_min=0.2,
    ratio_clip_max=0.28,
    ratio_clip_c=None,
    use_on_policy_kl_approximation=True,
    use_importance_sampling_correction=True,
    truncated_importance_sampling_ratio=2.0,
    truncated_importance_sampling_ratio_min=0.5,
    truncated_importance_sampling_type="tis",
    sequence_level_importance_ratios=False,
    token_level_loss=False,
)

checkpointing = CheckpointingMain(
    enabled=True,
    checkpoint_dir=run_names("rlvr")["checkpointing.checkpoint_dir"],
    metric_name=None,
    higher_is_better=True,
    keep_top_k=5,
    save_period=10,
    checkpoint_must_save_by="00:03:45:00",
    save_optimizer=True,
)

policy = PolicyMain(
    model_name=RunInput("model"),
    tokenizer=TokenizerMain(
        name=DERIVED,
        chat_template=CHAT_TEMPLATE,
    ),
    train_global_batch_size=DERIVED,
    train_micro_batch_size=1,
    generation_batch_size=64,
    logprob_batch_size=1,
    max_total_sequence_length=16384,
    precision="bfloat16",
    logprob_chunk_size=2048,
    offload_optimizer_for_logprob=False,
    dtensor_cfg=DTensor(
        v2=True,
        enabled=False,
        cpu_offload=False,
        sequence_parallel=False,
        activation_checkpointing=False,
        tensor_parallel_size=1,
        context_parallel_size=1,
        custom_parallel_plan=None,
    ),
    megatron_cfg=MegatronMain(
        enabled=True,
        empty_unused_memory_level=2,
        activation_checkpointing=True,
        # TP 8 spans two GB200 trays of one NVL72 NVLink domain.
        tensor_model_parallel_size=8,
        expert_tensor_parallel_size=1,
        expert_model_parallel_size=16,
        pipeline_model_parallel_size=1,
        num_layers_in_first_pipeline_stage=None,
        num_layers_in_last_pipeline_stage=None,
        context_parallel_size=2,
        pipeline_dtype=DERIVED,
        sequence_parallel=True,
        freeze_moe_router=True,
        moe_router_dtype="fp32",
        moe_router_load_balancing_type="none",
        moe_router_bias_update_rate=0.001,
        moe_permute_fusion=True,
        apply_rope_fusion=True,
        bias_activation_fusion=False,
        defer_fp32_logits=True,
        moe_per_layer_logging=False,
        moe_enable_deepep=False,
        moe_token_dispatcher_type="alltoall",
        moe_shared_expert_overlap=False,
        mtp_num_layers=0,
        scheduler=MegatronScheduler(
            start_weight_decay=DERIVED,
            end_weight_decay=DERIVED,
            weight_decay_incr_style="constant",
            lr_decay_style="constant",
            lr_decay_iters=None,
            lr_warmup_iters=10,
            lr_warmup_init=3e-08,
        ),
        env_vars={
            "NCCL_ALGO": "Ring",
            "NCCL_PROTO": "Simple",
            "NRL_REFIT_BUFFER_MEMORY_RATIO": "0.006",
            "NRL_REFIT_NUM_BUFFERS": "1",
        },
        moe_router_enable_expert_bias=True,
        moe_aux_loss_coeff=0.0,
        track_moe_metrics=True,
        optimizer=MegatronOptimizerMain(
            optimizer="adam",
            lr=3e-06,
            min_lr=2e-09,
            weight_decay=0.0,
            bf16=True,
            fp16=False,
            params_dtype="float32",
            adam_beta1=0.9,
            adam_beta2=0.99,
            adam_eps=1e-08,
            sgd_momentum=0.9,
            use_distributed_optimizer=True,
            use_precision_aware_optimizer=True,
            clip_grad=DERIVED,
            optimizer_cpu_offload=False,
            optimizer_offload_fraction=0,
            overlap_cpu_optimizer_d2h_h2d=False,
        ),
        distributed_data_parallel_config=MegatronDDPMain(
            grad_reduce_in_fp32=False,
            overlap_grad_reduce=False,
            overlap_param_gather=False,
            use_custom_fsdp=False,
            data_parallel_sharding_strategy="optim_grads_params",
            average_in_collective=False,
        ),
        checkpoint=MegatronCheckpoint(
            async_save=True,
        ),
        radio_force_cpe_eval_mode=True,
        freeze_vision_model=False,
        freeze_vision_projection=False,
        freeze_sound_encoder=True,
        freeze_sound_projection=True,
        gradient_accumulation_fusion=False,
        use_fused_weighted_squared_relu=False,
    ),
    draft=Draft(
        enabled=False,
        model_name=None,
        loss_weight=0.1,
        num_layers=None,
        aux_layer_indices=None,
    ),
    dynamic_batching=DynamicBatching(
        enabled=False,
        train_mb_tokens=DERIVED,
        logprob_mb_tokens=DERIVED,
        sequence_length_round=64,
    ),
    sequence_packing=SequencePackingMain(
        enabled=True,
        train_mb_tokens=DERIVED,
        logprob_mb_tokens=DERIVED,
        algorithm="modified_first_fit_decreasing",
        sequence_length_round=64,
        microbatch_order="largest_first",
    ),
    make_sequence_length_divisible_by=DERIVED,
    max_grad_norm=1.0,
    optimizer=None,
    scheduler=None,
    generation=GenerationMain(
        backend="vllm",
        max_new_tokens=DERIVED,
        temperature=1.0,
        top_p=1.0,
        top_k=None,
        val_temperature=DERIVED,
        val_top_p=DERIVED,
        val_top_k=DERIVED,
        stop_token_ids=None,
        stop_strings=None,
        bad_words=("<image>", "<img>", "</img>", "<so_embedding>", "<so_start>", "<so_end>"),
        mcore_generation_config=McoreGenerationMain(
            expose_http_server=True,
            parsers=("deepseek-r1-reasoning", "qwen3-coder-tool"),
            buffer_size_gb=20,
            block_size_tokens=256,
            max_tokens=DERIVED,
            max_model_len=DERIVED,
            num_cuda_graphs=-1,
            use_cuda_graphs_for_non_decode_steps=True,
            cuda_graph_impl="local",
            inference_cuda_graph_scope="block",
            materialize_only_last_token_logits=True,
            enable_chunked_prefill=True,
            enable_prefix_caching=True,
            refit_backend="nccl",
            num_speculative_tokens=0,
            mamba_inference_ssm_states_dtype="float32",
            kv_cache_management_mode="persist",
            transformer_impl="inference_optimized",
            activation_checkpointing=False,
            inference_grouped_gemm_backend="vllm",
            moe_router_num_groups=None,
            moe_router_group_topk=None,
            tensor_model_parallel_size=2,
            pipeline_model_parallel_size=1,
            context_parallel_size=1,
            expert_model_parallel_size=8,
            expert_tensor_parallel_size=1,
            sequence_parallel=True,
        ),
        vllm_cfg=VllmConfigMain(
            async_engine=True,
            precision=DERIVED,
            kv_cache_dtype="auto",
            tensor_parallel_size=4,
            pipeline_parallel_size=1,
            expert_parallel_size=1,
            gpu_memory_utilization=0.8,
            max_model_len=DERIVED,
            enforce_eager=False,
            use_deep_gemm=False,
            num_last_layers_in_bf16=0,
            num_first_layers_in_bf16=0,
            load_format="auto",
            expose_http_server=True,
            http_server_serving_chat_kwargs={
                "enable_auto_tools": True,
                "tool_parser": "qwen3_coder",
                "reasoning_parser": "deepseek_r1",
                "chat_template": CHAT_TEMPLATE,
                "chat_template_content_format": "openai",
            },
            skip_tokenizer_init=False,
            logprobs_mode="raw_logprobs",
            reasoning_parser_plugin="nemo_rl/models/generation/vllm/reasoning_parsers/nano_v3_reasoning_parser.py",
            env_vars={
                "NCCL_ALGO": "Ring",
                "NCCL_PROTO": "Simple",
                "NRL_REFIT_BUFFER_MEMORY_RATIO": "0.006",
                "NRL_REFIT_NUM_BUFFERS": "1",
            },
            enable_prefix_caching=False,
        ),
        vllm_kwargs={
            "mamba_ssm_cache_dtype": "float32",
            "compilation_config": {"backend": "eager", "cudagraph_mode": "PIECEWISE"},
            "moe_backend": "flashinfer_cutlass",
            "limit_mm_per_prompt": {"image": 3},
            "mm_processor_cache_gb": 0,
            # SO interpolates ${policy.max_total_sequence_length}.
            "max_num_batched_tokens": 16384,
            "max_num_seqs": 32,
            "skip_mm_profiling": True,
            "disable_custom_all_reduce": True,
            "attention_backend": "FLASH_ATTN",
            "attention_config": {"use_trtllm_attention": False},
        },
        colocated=Colocation(
            enabled=False,
            # SO: 8 nodes x 8 GPUs generate; the same 64 GPUs are 16 GB200 nodes.
            resources=GenerationResources(
                gpus_per_node=DERIVED,
                num_nodes=16,
            ),
        ),
        port_range_low=3000,
        port_range_high=4999,
    ),
    is_vlm=True,
)

data = DataMain(
    max_input_seq_length=DERIVED,
    shuffle=False,
    num_workers=1,
    use_multiple_dataloader=False,
    # Seed: `data import rl /data/rlvr/train.jsonl --val /data/rlvr/val.jsonl`.
    # NOT IN THE SEED: the file names inside the artifact.
    train=DatasetMain(data_path=RunInput("data", "train.jsonl")),
    validation=DatasetMain(data_path=RunInput("data", "val.jsonl")),
    default=DatasetMain(
        dataset_name="NemoGymDataset",
        env_name="nemo_gym",
        processor="nemo_gym_data_processor",
        prompt_file=None,
        system_prompt_file=None,
    ),
)

SO_ENVIRONMENTS = (
    "responses_api_models/vllm_model/configs/vllm_model_for_training.yaml",
    "resources_servers/math_with_judge/configs/math_with_judge.yaml",
    "resources_servers/mcqa/configs/mcqa.yaml",
    "resources_servers/gui_coordinate/configs/gui_coordinate.yaml",
    "resources_servers/string_match/configs/string_match.yaml",
)

env = Environments(
    should_use_nemo_gym=True,
    should_log_nemo_gym_responses=True,
    should_mask_flagged_samples=True,
    nemo_gym=NemoGym(
        port_range_low=5000,
        port_range_high=5999,
        config_paths=SO_ENVIRONMENTS,
        policy_max_input_tokens=DERIVED,
        skip_venv_if_present=True,
        pad_dynamic_image_shapes=True,
        policy_model={
            "responses_api_models": {
                "vllm_model": {
                    "uses_reasoning_parser": True,
                    "extra_body": {
                        "bad_words": [
                            "<image>",
                            "<img>",
                            "</img>",
                            "<so_embedding>",
                            "<so_start>",
                            "<so_end>",
                        ],
                        "chat_template_kwargs": {"enable_thinking": True},
                    },
                },
            },
        },
        math_with_judge={
            "resources_servers": {
                "math_with_judge": {
                    "judge_model_server": {"name": "policy_model"},
                    "should_use_judge": False,
                },
            },
        },
        code_gen={
            "resources_servers": {
                "code_gen": {"num_processes": 1024, "unit_test_timeout_secs": 10, "debug": False},
            },
        },
    ),
)

logger = LoggerMain(
    log_dir=run_names("rlvr")["logger.log_dir"],
    num_val_samples_to_print=0,
    wandb_enabled=True,
    tensorboard_enabled=True,
    mlflow_enabled=False,
    swanlab_enabled=False,
    monitor_gpus=True,
    tensorboard=Tensorboard(),
    mlflow=MLflow(
        experiment_name="grpo-dev",
        run_name="grpo-dev-logger",
    ),
    gpu_monitoring=GPUMonitoring(
        collection_interval=10,
        flush_interval=10,
    ),
    # Seed, Configuration: W&B project "nemotron"; runs named for the stage.
    wandb=WandbMain(
        project="nemotron",
        name=run_names("rlvr")["logger.wandb.name"],
        log_nemo_gym_full_result_tables=False,
    ),
)

cluster = ClusterMain(
    gpus_per_node=DERIVED,
    num_nodes=DERIVED,
    master_port_range_low=1400,
    master_port_range_high=1999,
)

# The port of SO, then (below) the RLHF part the seed's RLVR has and SO lacks.
rlvr = Stage(
    name="rlvr",
    description="RLVR: GRPO with NeMo Gym environments from the SFT model (RL stage 1)",
    hardware=Hardware(GB200_NODE, num_nodes=32),
    model=NEMOTRON_35_SUPER_VL_120B,
    framework=NEMO_RL_SUPER35,
    lineage=SUPER35.stage("rlvr"),
    config=GRPOMasterConfigMain(
        grpo=grpo,
        loss_fn=loss_fn,
        checkpointing=checkpointing,
        policy=policy,
        data=data,
        env=env,
        logger=logger,
        cluster=cluster,
    ),
)

# Seed 004: RLVR is "joint RLVR + RLHF over a broad environment mix". SO's mix has verifiable
# rewards only; Nemotron 3 Ultra's student RLVR (NeMo-RL main examples/nemo_gym/nemotron-3-ultra/
# student_rlvr1.yaml) adds the GenRM's pairwise comparisons to them, and so does this: the
# judge, its settings and its 4 nodes are genrm.py's.
rlvr = rlvr.with_values(
    {
        **genrm(RLVR_JUDGE),
        "env.nemo_gym.config_paths": (
            *SO_ENVIRONMENTS,
            "resources_servers/genrm_compare/configs/genrm_compare.yaml",
        ),
    },
    hardware=Hardware(GB200_NODE, num_nodes=32 + GENRM_NODES),
)
