"""Nemotron 3 Super GRPO/DAPO on DAPO-Math-17k (the guide: the NeMo-RL super-v3 guide).

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
    Colocation,
    Dataset,
    GenerationResources,
    MathEnvironment,
)
from recipekit.stage import Stage
from recipes.upstream.nemo_rl_super_v3 import grpo_math_1b

MODEL_PATH = "/shared/models/NVIDIA-Nemotron-3-Super-120B-A12B-Base-BF16"
CHECKPOINTS = "/shared/checkpoints/nemotron-superv3-dapo_math17k"

# What the guide's GB200 config (examples/configs/recipes/llm/
# dapo17k_nemotron_super_120b_gb200_5x4_noncolocated.yaml) changes in grpo_math_1B.yaml, the
# file its `defaults:` names; every other value is grpo_math_1B's (recipes/upstream/).
DAPO_GB200 = {
    # Layout on 16 training GPUs: TP 4 x CP 4 (DP 1); experts EP 4 x ETP 4. Megatron, not DTensor.
    "policy.dtensor_cfg.enabled": False,
    "policy.megatron_cfg.enabled": True,
    "policy.megatron_cfg.tensor_model_parallel_size": 4,
    "policy.megatron_cfg.context_parallel_size": 4,
    "policy.megatron_cfg.expert_model_parallel_size": 4,
    "policy.megatron_cfg.expert_tensor_parallel_size": 4,
    "policy.megatron_cfg.sequence_parallel": True,
    # Generation: one vLLM instance over its own node (B200/GB200 HBM cannot hold training
    # and rollout together), so vLLM may take more of each GPU.
    "policy.generation.colocated.enabled": False,
    "policy.generation.colocated.resources.num_nodes": 1,
    "policy.generation.colocated.resources.gpus_per_node": DERIVED,
    "policy.generation.vllm_cfg.tensor_parallel_size": 4,
    "policy.generation.vllm_cfg.gpu_memory_utilization": 0.75,
    "policy.generation.vllm_cfg.async_engine": True,
    "cluster.gpus_per_node": DERIVED,
    "cluster.num_nodes": DERIVED,
    # Batch shape: grpo_math_1B's 32 prompts x 16 generations = 512 samples a step, trained in
    # one global batch (derived), one sequence a micro-batch. Start short; longer contexts cost
    # memory and latency (the guide's tuning notes).
    "policy.train_global_batch_size": DERIVED,
    "policy.train_micro_batch_size": 1,
    "policy.logprob_batch_size": 1,
    "policy.logprob_chunk_size": 512,
    "policy.max_total_sequence_length": 1024,
    "policy.dynamic_batching.logprob_mb_tokens": DERIVED,
    "policy.sequence_packing.logprob_mb_tokens": DERIVED,
    # The guide's 1024 is vLLM's whole context: super-v3's data processors keep a prompt of
    # exactly 1024 tokens (they cut only longer ones), which then gets an empty response
    # (NVIDIA-NeMo/RL#796): plan warns, as the guide's config is the contract.
    "data.max_input_seq_length": 1024,
    "grpo.max_num_steps": 2000,
    "grpo.val_period": 5,
    "grpo.val_at_start": True,
    "grpo.val_batch_size": 32,
    # Data: DAPO-Math-17k for training, AIME 2024 for validation, both built into NeMo-RL;
    # dapo_math_verify matches the ground-truth formatting of the DAPO dataset.
    "data.num_workers": 0,
    "data.train.dataset_name": "DAPOMath17K",
    "data.train.env_name": "math",
    "data.train.processor": "math_hf_data_processor",
    "data.train.prompt_file": None,
    "data.train.system_prompt_file": None,
    "data.validation": Dataset(
        dataset_name="DAPOMathAIME2024",
        env_name="math",
        processor="math_hf_data_processor",
        prompt_file=None,
        system_prompt_file=None,
    ),
    "env.math.num_workers": 16,
    "env.math.math_verify_impl": "dapo_math_verify",
    # Unused by run_grpo.py; kept because the guide's config carries it.
    "env.dapo": MathEnvironment(num_workers=16, math_verify_impl="dapo_math_verify"),
    # DAPO: dynamic sampling drops prompts whose generations all score the same; overlong
    # reward shaping; clip-higher (the upper clip wider than the lower one); no KL penalty.
    "grpo.use_dynamic_sampling": True,
    "grpo.batch_multiplier": 2,
    "grpo.reward_shaping.enabled": True,
    "grpo.reward_shaping.overlong_buffer_length": 512,
    "grpo.reward_shaping.overlong_buffer_penalty": 1.0,
    "grpo.reward_scaling.enabled": True,
    "grpo.reward_scaling.target_min": -1.0,
    "grpo.seq_logprob_error_threshold": 2,
    "loss_fn.reference_policy_kl_penalty": 0.0,
    "loss_fn.ratio_clip_max": 0.28,
    # Megatron: training owns its GPUs (non-colocated), so memory can be emptied less
    # aggressively. The router settings stay grpo_math_1B's (a 1B dense model): the plan flags
    # them as a trap for this MoE model, as it does the Qwen2 converter.
    "policy.megatron_cfg.empty_unused_memory_level": 2,
    "policy.megatron_cfg.activation_checkpointing": True,
    "policy.megatron_cfg.bias_activation_fusion": False,
    "policy.megatron_cfg.defer_fp32_logits": True,
    "policy.megatron_cfg.optimizer.lr": 1.0e-6,
    "policy.megatron_cfg.optimizer.min_lr": 1.0e-6,
    "policy.megatron_cfg.optimizer.weight_decay": 0.0,
    "policy.megatron_cfg.optimizer.params_dtype": "bfloat16",
    "policy.megatron_cfg.scheduler.lr_warmup_iters": 20,
    "policy.megatron_cfg.scheduler.lr_warmup_init": 1.0e-7,
    # Overlap off: Megatron's distributed optimizer asserts during logprob forward
    # (param_and_grad_buffer.py: param_gather_handle is None) when a gather is in flight.
    "policy.megatron_cfg.distributed_data_parallel_config.overlap_grad_reduce": False,
    "policy.megatron_cfg.distributed_data_parallel_config.overlap_param_gather": False,
    # Where it writes.
    "policy.model_name": MODEL_PATH,
    "checkpointing.checkpoint_dir": CHECKPOINTS,
    "checkpointing.save_period": 5,
    "policy.megatron_cfg.error_path": f"{CHECKPOINTS}/logs/megatron_error.log",
    "logger.num_val_samples_to_print": 10,
    "logger.monitor_gpus": False,
    "logger.wandb.project": "superv3-gb200-5x4-noncolocated",
    "logger.wandb.name": "dapo17k-nemotron-super-120b-gb200-5x4-noncolocated",
    "logger.wandb.entity": "nv-default-onboard",
}

dapo_gb200 = Stage(
    name="dapo-gb200",
    description=(
        "Nemotron 3 Super GRPO/DAPO on DAPO-Math-17k, GB200 5 x 4: "
        "1 node of vLLM rollout, 4 nodes of Megatron training."
    ),
    hardware=Hardware(GB200_NODE, num_nodes=5),
    model=NEMOTRON_3_SUPER_120B,
    framework=NEMO_RL_GRPO,
    config=grpo_math_1b.config,
    # The guide exports both before `uv run examples/run_grpo.py`, in its batch job and in its
    # interactive session alike (grpo_training_cookbook.ipynb, Nemotron r0.1.0).
    environment={"NRL_VLLM_ASYNC_TIMEOUT_SECONDS": "2400", "NCCL_DEBUG": "INFO"},
).with_values(DAPO_GB200)

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
