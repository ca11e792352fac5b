"""Nemotron 3 Super GRPO/DAPO on DAPO-Math-17k (seed 000: the NeMo-RL super-v3 guide).

Single-domain RL with verifiable math rewards: DAPO is GRPO plus dynamic sampling, overlong
reward shaping and clip-higher. Generation (vLLM) gets its own node on B200/GB200, whose HBM
cannot hold training and rollout together; on H100 the guide's current revision colocates them.

| variant | nodes x GPUs | generation | training layout (TP x CP, EP x ETP) |
|---------|--------------|------------|-------------------------------------|
| gb200   | 5 x 4        | 1 node     | 4 x 4, 4 x 4 on 16 GPUs             |
| b200    | 3 x 8        | 1 node     | 4 x 4, 4 x 4 on 16 GPUs             |
| h100    | 4 x 8        | colocated  | 8 x 4, 32 x 1 on 32 GPUs            |
"""

from recipekit.hardware import B200_NODE, GB200_NODE, H100_NODE, Hardware
from recipekit.markers import DERIVED
from recipekit.model_card import NEMOTRON_3_SUPER_120B
from recipekit.nemo_rl.framework import NEMO_RL_GRPO
from recipekit.nemo_rl.schema_super_v3 import (
    FP8,
    AdvantageEstimator,
    AsyncGRPO,
    Checkpointing,
    ClippedPGLoss,
    Colocation,
    Data,
    Dataset,
    DTensor,
    DynamicBatching,
    Generation,
    GenerationResources,
    GPUMonitoring,
    GRPOConfig,
    GRPOMasterConfig,
    Logger,
    LoRA,
    MathEnvironment,
    McoreGeneration,
    Megatron,
    MegatronDDP,
    MegatronOptimizer,
    MegatronScheduler,
    MLflow,
    Policy,
    RewardScaling,
    RewardShaping,
    SchedulerMilestones,
    SequencePacking,
    Swanlab,
    Tensorboard,
    Tokenizer,
    TorchOptimizer,
    TorchScheduler,
    VllmConfig,
    Wandb,
)
from recipekit.stage import Stage

MODEL_PATH = "/shared/models/NVIDIA-Nemotron-3-Super-120B-A12B-Base-BF16"
CHECKPOINTS = "/shared/checkpoints/nemotron-superv3-dapo_math17k"

grpo = GRPOConfig(
    # Rollout shape: 32 prompts x 16 generations = 512 samples a step.
    num_prompts_per_step=32,
    num_generations_per_prompt=16,
    max_rollout_turns=1,
    max_num_epochs=1,
    max_num_steps=2000,
    normalize_rewards=True,
    # The guide sets this, but on super-v3 adv_estimator below decides (a plan warning says so).
    use_leave_one_out_baseline=True,
    val_period=5,
    val_at_start=True,
    val_at_end=False,
    overlong_filtering=False,
    max_val_samples=256,
    val_batch_size=32,
    seed=42,
    # DAPO: dynamic sampling drops prompts whose generations all score the same.
    use_dynamic_sampling=True,
    dynamic_sampling_max_gen_batches=10,
    batch_multiplier=2,
    reward_shaping=RewardShaping(
        enabled=True,
        overlong_buffer_length=512,
        overlong_buffer_penalty=1.0,
        stop_properly_penalty_coef=None,
    ),
    # Inherited from grpo_math_1B.yaml, where it overrides the two flags above.
    adv_estimator=AdvantageEstimator(
        name="grpo", normalize_rewards=True, use_leave_one_out_baseline=False, minus_baseline=True
    ),
    reward_scaling=RewardScaling(
        enabled=True, source_min=0.0, source_max=1.0, target_min=-1.0, target_max=1.0
    ),
    seq_logprob_error_threshold=2,
    async_grpo=AsyncGRPO(
        enabled=False,
        max_trajectory_age_steps=1,
        in_flight_weight_updates=False,
        recompute_kv_cache_after_weight_updates=False,
    ),
)

loss_fn = ClippedPGLoss(
    reference_policy_kl_penalty=0.0,
    reference_policy_kl_type="k3",
    kl_input_clamp_value=20.0,
    kl_output_clamp_value=10.0,
    # DAPO clip-higher: the upper clip is wider than the lower one.
    ratio_clip_min=0.2,
    ratio_clip_max=0.28,
    ratio_clip_c=None,
    use_on_policy_kl_approximation=False,
    use_importance_sampling_correction=False,
    truncated_importance_sampling_ratio=None,
    truncated_importance_sampling_ratio_min=None,
    truncated_importance_sampling_type="tis",
    sequence_level_importance_ratios=False,
    token_level_loss=True,
    force_on_policy_ratio=False,
    use_kl_in_reward=False,
)

checkpointing = Checkpointing(
    enabled=True,
    checkpoint_dir=CHECKPOINTS,
    metric_name="val:accuracy",
    higher_is_better=True,
    keep_top_k=3,
    save_period=5,
    checkpoint_must_save_by=None,
    model_save_format="safetensors",
    save_consolidated=False,
)

megatron = Megatron(
    enabled=True,
    # Non-colocated: training owns its GPUs, so memory can be emptied less aggressively.
    empty_unused_memory_level=2,
    activation_checkpointing=True,
    # The next five come from grpo_math_1B.yaml (a 1B dense model); kept to match the guide's
    # run, and flagged by the plan as a trap for this MoE model.
    converter_type="Qwen2ForCausalLM",
    freeze_moe_router=True,
    moe_router_dtype="fp64",
    moe_router_load_balancing_type="none",
    moe_router_bias_update_rate=0.0,
    # Layout on 16 training GPUs: TP 4 x CP 4 (DP 1); experts EP 4 x ETP 4.
    tensor_model_parallel_size=4,
    expert_tensor_parallel_size=4,
    expert_model_parallel_size=4,
    pipeline_model_parallel_size=1,
    num_layers_in_first_pipeline_stage=None,
    num_layers_in_last_pipeline_stage=None,
    context_parallel_size=4,
    sequence_parallel=True,
    moe_permute_fusion=False,
    apply_rope_fusion=True,
    bias_activation_fusion=False,
    defer_fp32_logits=True,
    moe_per_layer_logging=False,
    moe_enable_deepep=False,
    moe_token_dispatcher_type="allgather",
    moe_shared_expert_overlap=False,
    mtp_loss_scaling_factor=0.0,
    mtp_use_repeated_layer=False,
    mtp_num_layers=0,
    mtp_detach_heads=False,
    optimizer=MegatronOptimizer(
        optimizer="adam",
        lr=1.0e-6,
        min_lr=1.0e-6,
        weight_decay=0.0,
        bf16=True,
        fp16=False,
        params_dtype="bfloat16",
        adam_beta1=0.9,
        adam_beta2=0.999,
        adam_eps=1.0e-8,
        sgd_momentum=0.9,
        use_distributed_optimizer=True,
        use_precision_aware_optimizer=True,
        optimizer_cpu_offload=False,
        optimizer_offload_fraction=0.0,
    ),
    scheduler=MegatronScheduler(
        weight_decay_incr_style="constant",
        lr_decay_style="constant",
        lr_decay_iters=1000,
        lr_warmup_iters=20,
        lr_warmup_init=1.0e-7,
    ),
    distributed_data_parallel_config=MegatronDDP(
        grad_reduce_in_fp32=False,
        # Overlap off: Megatron's distributed optimizer asserts during logprob forward
        # (param_and_grad_buffer.py: param_gather_handle is None) when a gather is in flight.
        overlap_grad_reduce=False,
        overlap_param_gather=False,
        use_custom_fsdp=False,
        data_parallel_sharding_strategy="optim_grads_params",
    ),
    fp8_cfg=FP8(enabled=False, fp8="e4m3", fp8_recipe="blockwise", fp8_param=False),
    env_vars=None,
    error_path=f"{CHECKPOINTS}/logs/megatron_error.log",
)

# The DTensor back-end is off; its section is still in the config NeMo-RL reads.
dtensor = DTensor(
    v2=True,
    enabled=False,
    cpu_offload=False,
    sequence_parallel=False,
    activation_checkpointing=False,
    tensor_parallel_size=1,
    context_parallel_size=1,
    custom_parallel_plan=None,
    lora_cfg=LoRA(
        enabled=False,
        target_modules=(),
        exclude_modules=(),
        match_all_linear=True,
        dim=8,
        alpha=32,
        dropout=0.0,
        dropout_position="post",
        lora_A_init="xavier",
        use_triton=True,
    ),
)

generation = Generation(
    backend="vllm",
    temperature=1.0,
    top_p=1.0,
    top_k=None,
    stop_token_ids=None,
    stop_strings=None,
    mcore_generation_config=McoreGeneration(
        buffer_size_gb=20,
        buffer_guaranteed_fraction=0.1,
        num_cuda_graphs=16,
        block_size_tokens=256,
        use_cuda_graphs_for_non_decode_steps=True,
        enable_chunked_prefill=True,
        unified_memory_level=0,
        max_tokens=16384,
    ),
    vllm_cfg=VllmConfig(
        async_engine=True,
        kv_cache_dtype="auto",
        # One instance over the whole generation node.
        tensor_parallel_size=4,
        pipeline_parallel_size=1,
        expert_parallel_size=1,
        # Non-colocated: vLLM does not share the GPUs with training.
        gpu_memory_utilization=0.75,
        enforce_eager=False,
        use_deep_gemm=False,
        num_last_layers_in_bf16=0,
        num_first_layers_in_bf16=0,
        enable_vllm_metrics_logger=True,
        vllm_metrics_logger_interval=0.5,
    ),
    # compilation_config.use_inductor is not supported by the container's vLLM.
    vllm_kwargs={},
    colocated=Colocation(enabled=False, resources=GenerationResources(num_nodes=1)),
)

policy = Policy(
    model_name=MODEL_PATH,
    tokenizer=Tokenizer(chat_template_kwargs=None),
    hf_config_overrides={},
    train_micro_batch_size=1,
    generation_batch_size=32,
    logprob_batch_size=1,
    # Start short; longer contexts cost memory and latency (see the guide's tuning notes).
    max_total_sequence_length=1024,
    precision="bfloat16",
    logprob_chunk_size=512,
    offload_optimizer_for_logprob=False,
    dtensor_cfg=dtensor,
    megatron_cfg=megatron,
    dynamic_batching=DynamicBatching(enabled=False, sequence_length_round=64),
    sequence_packing=SequencePacking(
        enabled=True, algorithm="modified_first_fit_decreasing", sequence_length_round=64
    ),
    max_grad_norm=1.0,
    # The DTensor path's optimizer and schedule, inherited from grpo_math_1B.yaml and unused
    # with Megatron.
    optimizer=TorchOptimizer(
        name="torch.optim.AdamW",
        kwargs={
            "lr": 5.0e-6,
            "weight_decay": 0.01,
            "betas": [0.9, 0.999],
            "eps": 1.0e-8,
            "foreach": False,
            "fused": False,
        },
    ),
    scheduler=(
        TorchScheduler(
            name="torch.optim.lr_scheduler.LinearLR",
            kwargs={"start_factor": 0.1, "end_factor": 1.0, "total_iters": 50},
        ),
        TorchScheduler(
            name="torch.optim.lr_scheduler.ConstantLR",
            kwargs={"factor": 1.0, "total_iters": 10000000000},
        ),
        SchedulerMilestones(milestones=(50,)),
    ),
    generation=generation,
)

data = Data(
    max_input_seq_length=1024,
    shuffle=True,
    num_workers=0,
    # DAPO-Math-17k for training, AIME 2024 for validation, both built into NeMo-RL.
    train=Dataset(
        dataset_name="DAPOMath17K",
        split_validation_size=0.05,
        seed=DERIVED,
        env_name="math",
        processor="math_hf_data_processor",
        prompt_file=None,
        system_prompt_file=None,
    ),
    validation=Dataset(
        dataset_name="DAPOMathAIME2024",
        env_name="math",
        processor="math_hf_data_processor",
        prompt_file=None,
        system_prompt_file=None,
    ),
    default=Dataset(
        prompt_file="examples/prompts/cot.txt",
        system_prompt_file=None,
        processor="math_hf_data_processor",
        env_name="math",
    ),
)

# dapo_math_verify matches the ground-truth formatting of the DAPO dataset.
env = {
    "math": MathEnvironment(num_workers=16, math_verify_impl="dapo_math_verify"),
    # Unused by run_grpo.py; kept because the guide's config carries it.
    "dapo": MathEnvironment(num_workers=16, math_verify_impl="dapo_math_verify"),
}

logger = Logger(
    log_dir="logs",
    num_val_samples_to_print=10,
    wandb_enabled=False,
    tensorboard_enabled=False,
    mlflow_enabled=False,
    swanlab_enabled=False,
    monitor_gpus=False,
    wandb=Wandb(
        project="superv3-gb200-5x4-noncolocated",
        name="dapo17k-nemotron-super-120b-gb200-5x4-noncolocated",
        entity="nv-default-onboard",
    ),
    swanlab=Swanlab(project="grpo-dev", name="grpo-dev-logger"),
    tensorboard=Tensorboard(),
    mlflow=MLflow(experiment_name="grpo-dev", run_name="grpo-dev-logger"),
    gpu_monitoring=GPUMonitoring(collection_interval=10, flush_interval=10),
)

dapo_gb200 = Stage(
    name="dapo-gb200",
    description=(
        "Nemotron 3 Super GRPO/DAPO on DAPO-Math-17k, GB200 5 x 4: "
        "1 node of vLLM rollout, 4 nodes of Megatron training."
    ),
    hardware=Hardware(GB200_NODE, num_nodes=5),
    model=NEMOTRON_3_SUPER_120B,
    framework=NEMO_RL_GRPO,
    config=GRPOMasterConfig(
        grpo=grpo,
        loss_fn=loss_fn,
        checkpointing=checkpointing,
        policy=policy,
        data=data,
        env=env,
        logger=logger,
    ),
    # The guide exports both before `uv run examples/run_grpo.py`, in its batch job and in its
    # interactive session alike (grpo_training_cookbook.ipynb, Nemotron r0.1.0).
    environment={"NRL_VLLM_ASYNC_TIMEOUT_SECONDS": "2400", "NCCL_DEBUG": "INFO"},
)

# B200: 8 GPUs a node, so 1 generation node + 2 training nodes give the same 16 training GPUs
# and the same training layout. The guide's B200 config keeps the GB200 W&B names (the plan
# warns); they are kept so the compiled config is the guide's.
dapo_b200 = dapo_gb200.with_values(
    {"policy.generation.vllm_cfg.tensor_parallel_size": 8},
    name="dapo-b200",
    description=(
        "Nemotron 3 Super GRPO/DAPO on DAPO-Math-17k, B200 3 x 8: "
        "1 node of vLLM rollout, 2 nodes of Megatron training."
    ),
    hardware=Hardware(B200_NODE, num_nodes=3),
)

# H100 (the guide's current revision): 80 GB per GPU, so generation and training share all 32
# GPUs, and the MoE settings are the model's own instead of grpo_math_1B's dense ones.
dapo_h100 = dapo_gb200.with_values(
    {
        "grpo.val_at_end": True,
        "grpo.val_batch_size": 256,
        "checkpointing.checkpoint_dir": (
            "/shared/checkpoints/dapo17k_nemotron_super_120b_h100_4x8_colocated-v2"
        ),
        # Save and exit before a 2-hour Slurm limit.
        "checkpointing.checkpoint_must_save_by": "00:01:55:00",
        "policy.tokenizer.chat_template": (
            "{% for message in messages %}{%- if message['role'] == 'system' %}"
            "{{ 'Context: ' + message['content'].strip() + '\n\n' }}"
            "{%- elif message['role'] == 'user' %}{{ 'Question: ' + message['content'].strip() }}"
            "{%- elif message['role'] == 'assistant' %}{{ ' ' + message['content'].strip() }}"
            "{%- endif %}{% endfor %}{% if add_generation_prompt %}{{ ' Answer:' }}{% endif %}"
        ),
        "policy.generation_batch_size": 64,
        # 32 GPUs: TP 8 x CP 4 (DP 1); all 512 experts spread over EP 32.
        "policy.megatron_cfg.tensor_model_parallel_size": 8,
        "policy.megatron_cfg.expert_tensor_parallel_size": 1,
        "policy.megatron_cfg.expert_model_parallel_size": 32,
        "policy.megatron_cfg.freeze_moe_router": False,
        "policy.megatron_cfg.moe_router_dtype": "fp32",
        "policy.megatron_cfg.moe_router_bias_update_rate": 0.001,
        "policy.megatron_cfg.moe_permute_fusion": True,
        "policy.megatron_cfg.moe_per_layer_logging": True,
        "policy.megatron_cfg.moe_token_dispatcher_type": "alltoall",
        "policy.megatron_cfg.mtp_use_repeated_layer": True,
        "policy.megatron_cfg.mtp_detach_heads": True,
        "policy.megatron_cfg.moe_router_enable_expert_bias": True,
        "policy.megatron_cfg.moe_aux_loss_coeff": 0.0,
        "policy.megatron_cfg.track_moe_metrics": True,
        # Colocated: the optimizer state goes to host memory while vLLM holds the GPUs.
        "policy.megatron_cfg.optimizer.optimizer_cpu_offload": True,
        "policy.megatron_cfg.optimizer.optimizer_offload_fraction": 1.0,
        "policy.megatron_cfg.error_path": "/shared/logs/megatron_error.log",
        "policy.optimizer": None,
        "policy.generation.mcore_generation_config.enable_chunked_prefill": False,
        "policy.generation.vllm_cfg.async_engine": False,
        "policy.generation.vllm_cfg.tensor_parallel_size": 8,
        "policy.generation.vllm_cfg.expert_parallel_size": 8,
        # Colocated: vLLM leaves half of each GPU to training.
        "policy.generation.vllm_cfg.gpu_memory_utilization": 0.5,
        "policy.generation.vllm_cfg.skip_tokenizer_init": False,
        "policy.generation.vllm_kwargs": {"mamba_ssm_cache_dtype": "float32"},
        "policy.generation.colocated": Colocation(
            enabled=True, resources=GenerationResources(num_nodes=4)
        ),
        "policy.load_optimizer_from_checkpoint": False,
        "logger.wandb_enabled": True,
        "logger.wandb.project": "superv3-dapo-h100-colocated",
        "logger.wandb.name": "dapo17k-nemotron-super-120b-h100-4x8-colocated",
        "logger.swanlab.name": "sj_megatron_1B",
        "logger.mlflow.run_name": "sj_megatron_1B",
    },
    name="dapo-h100",
    description=(
        "Nemotron 3 Super GRPO/DAPO on DAPO-Math-17k, H100 4 x 8, generation colocated "
        "with Megatron training."
    ),
    hardware=Hardware(H100_NODE, num_nodes=4),
)
