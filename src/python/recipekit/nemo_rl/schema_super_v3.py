"""The GRPO master config of NeMo-RL ``super-v3`` as frozen, validated sections.

Field names are NeMo-RL's own, so its docs apply. The required/NotRequired split follows the
TypedDicts of ``super-v3`` (NVIDIA-NeMo/RL@8af543ad, ``nemo_rl/**``, pinned in
3rdparty/reference); keys that the TypedDicts omit but NeMo-RL reads with ``.get()``
(``converter_type``, ``mtp_*``, ``fp8_cfg``, ...) are here too, as optional keys, because the
reference configs set them. Every other key the pinned class declares comes from it, typed and
required as it declares it, in the order it declares it (``sections._completed``), and typed
for mypy by the section's generated base (``keys.<Name>Keys``, ``generated/section_keys.py``). A
key stated here adds a range, an allowed set, a derivation, required-ness or a comment to
upstream's; one that adds nothing is refused (``sections_test``).
"""

from typing import Any, ClassVar

from recipekit.markers import Derived, Unset
from recipekit.nemo_rl import NEMO_RL_VERSION, upstream_v3, upstream_v35
from recipekit.nemo_rl.generated import section_keys as keys
from recipekit.sections import derived, fixed, frozen_section, optional, required, section
from recipekit.upstream.declared import undeclared
from recipekit.validators import at_least, between, matching, one_of, upstream_values

SAVE_FORMATS = ("safetensors", "torch_save")


# --- grpo ---------------------------------------------------------------------------------


@section("grpo.reward_shaping")
@frozen_section(kw_only=True, repr=False, eq=False)
class RewardShaping(keys.RewardShapingKeys):
    """DAPO's overlong penalty: the last ``overlong_buffer_length`` tokens of the response budget
    cost up to ``overlong_buffer_penalty`` reward."""

    upstream = upstream_v3("nemo_rl.algorithms.reward_functions:RewardShapingConfig")

    overlong_buffer_length: int | Unset = optional(at_least(0))
    overlong_buffer_penalty: float | Unset = optional(at_least(0))
    max_response_length: int | Derived | Unset = derived(at_least(1))
    stop_properly_penalty_coef: float | None | Unset = optional(between(0, 1))


@section("grpo.adv_estimator")
@frozen_section(kw_only=True, repr=False, eq=False)
class AdvantageEstimator(keys.AdvantageEstimatorKeys):
    upstream = upstream_v3("nemo_rl.algorithms.grpo:AdvEstimatorConfig")

    name: str = required(upstream_values("nemo_rl.adv_estimator"))


@section("grpo.reward_scaling")
@frozen_section(kw_only=True, repr=False, eq=False)
class RewardScaling(keys.RewardScalingKeys):
    upstream = (
        upstream_v3("nemo_rl.algorithms.grpo:RewardScalingConfig"),
        upstream_v35("nemo_rl.algorithms.grpo:RewardScalingConfig"),
    )


@section("grpo.async_grpo")
@frozen_section(kw_only=True, repr=False, eq=False)
class AsyncGRPO(keys.AsyncGRPOKeys):
    upstream = upstream_v3("nemo_rl.algorithms.grpo:AsyncGRPOConfig")

    max_trajectory_age_steps: int = required(at_least(1))


@section("grpo")
@frozen_section(kw_only=True, repr=False, eq=False)
class GRPOConfig(keys.GRPOConfigKeys):
    upstream = upstream_v3("nemo_rl.algorithms.grpo:GRPOConfig")

    num_prompts_per_step: int = required(at_least(1))
    num_generations_per_prompt: int = required(at_least(1))
    max_rollout_turns: int = required(at_least(1))
    max_num_epochs: int = required(at_least(1))
    max_num_steps: int = required(at_least(1))
    val_period: int = required(at_least(0))
    max_val_samples: int | None = required(at_least(1))
    val_batch_size: int = required(at_least(1))
    dynamic_sampling_max_gen_batches: int | Unset = optional(at_least(1))
    batch_multiplier: float | Unset = optional(at_least(1))
    reward_shaping: RewardShaping = required()
    adv_estimator: AdvantageEstimator | Unset = optional()
    reward_scaling: RewardScaling = required()
    async_grpo: AsyncGRPO | Unset = optional()
    # super-v3 declares these two required and no upstream config sets them; false is the
    # behaviour NeMo-RL has when they are absent.
    penalize_invalid_tool_call: bool = fixed(False)
    penalize_malformed_thinking: bool = fixed(False)


# --- loss_fn ------------------------------------------------------------------------------


@section("loss_fn")
@frozen_section(kw_only=True, repr=False, eq=False)
class ClippedPGLoss(keys.ClippedPGLossKeys):
    upstream = upstream_v3("nemo_rl.algorithms.loss_functions:ClippedPGLossConfig")

    reference_policy_kl_penalty: float = required(at_least(0))
    reference_policy_kl_type: str = required(upstream_values("nemo_rl.reference_policy_kl_type"))
    ratio_clip_min: float = required(at_least(0))
    ratio_clip_max: float = required(at_least(0))
    truncated_importance_sampling_type: str | None | Unset = optional(
        upstream_values("nemo_rl.truncated_importance_sampling_type")
    )


# --- checkpointing ------------------------------------------------------------------------


@section("checkpointing")
@frozen_section(kw_only=True, repr=False, eq=False)
class Checkpointing(keys.CheckpointingKeys):
    upstream = upstream_v3("nemo_rl.utils.checkpoint:CheckpointingConfig")

    checkpoint_dir: str = required()
    keep_top_k: int | None | Unset = optional(at_least(1))
    save_period: int = required(at_least(1))
    # NeMo-RL's wall-clock deadline "DD:HH:MM:SS" after which it saves and exits.
    # NeMo-RL's convert_to_seconds (utils/timer.py) splits it into four integers.
    checkpoint_must_save_by: str | None | Unset = optional(
        matching(r"\d+:\d+:\d+:\d+", "expected DD:HH:MM:SS, e.g. 00:03:45:00", optional=True)
    )
    model_save_format: str | None | Unset = optional(one_of(SAVE_FORMATS))


# --- policy: tokenizer, parallel back-ends ------------------------------------------------


@section("policy.tokenizer")
@frozen_section(kw_only=True, repr=False, eq=False)
class Tokenizer(keys.TokenizerKeys):
    upstream = upstream_v3("nemo_rl.models.policy:TokenizerConfig")

    name: str | Derived = derived()
    chat_template: str | None | Unset = optional()


@section("policy.dtensor_cfg.lora_cfg")
@frozen_section(kw_only=True, repr=False, eq=False)
class LoRA(keys.LoRAKeys):
    upstream = (
        upstream_v3("nemo_rl.models.policy:LoRAConfig", "nemo_rl.models.policy:LoRAConfigDisabled"),
        upstream_v35(
            "nemo_rl.models.policy:LoRAConfig", "nemo_rl.models.policy:LoRAConfigDisabled"
        ),
    )

    enabled: bool = required()
    dim: int | Unset = optional(at_least(1))
    alpha: int | Unset = optional(at_least(1))
    dropout: float | Unset = optional(between(0, 1))
    lora_A_init: str | Unset = optional(one_of(("xavier", "uniform")))


@section("policy.dtensor_cfg", aliases={"v2": "_v2"})
@frozen_section(kw_only=True, repr=False, eq=False)
class DTensor(keys.DTensorKeys):
    """The PyTorch-native (FSDP2 + DTensor) training back-end."""

    upstream = upstream_v3(
        "nemo_rl.models.policy:DTensorConfig", "nemo_rl.models.policy:DTensorConfigDisabled"
    )

    enabled: bool = required()
    tensor_parallel_size: int | Unset = optional(at_least(1))
    context_parallel_size: int | Unset = optional(at_least(1))
    lora_cfg: LoRA | Unset = optional()
    automodel_kwargs: dict[str, Any] | Unset = optional()


@section("policy.megatron_cfg.optimizer")
@frozen_section(kw_only=True, repr=False, eq=False)
class MegatronOptimizer(keys.MegatronOptimizerKeys):
    upstream = upstream_v3("nemo_rl.models.policy:MegatronOptimizerConfig")

    optimizer: str = required(upstream_values("megatron_core.optimizer"))
    lr: float = required(at_least(0))
    min_lr: float = required(at_least(0))
    weight_decay: float = required(at_least(0))
    params_dtype: str = required(upstream_values("nemo_rl.torch_dtype"))
    adam_beta1: float = required(between(0, 1))
    adam_beta2: float = required(between(0, 1))
    adam_eps: float = required(at_least(0))
    sgd_momentum: float = required(between(0, 1))
    clip_grad: float | Derived = derived(at_least(0))
    optimizer_offload_fraction: float = required(between(0, 1))


@section("policy.megatron_cfg.scheduler")
@frozen_section(kw_only=True, repr=False, eq=False)
class MegatronScheduler:
    upstream = (
        upstream_v3("nemo_rl.models.policy:MegatronSchedulerConfig"),
        upstream_v35("nemo_rl.models.policy:MegatronSchedulerConfig"),
    )

    start_weight_decay: float | Derived = derived(at_least(0))
    end_weight_decay: float | Derived = derived(at_least(0))
    weight_decay_incr_style: str = required(
        upstream_values("megatron_core.weight_decay_incr_style")
    )
    lr_decay_style: str = required(upstream_values("megatron_core.lr_decay_style"))
    lr_decay_iters: int | None | Unset = optional(at_least(1))
    lr_warmup_iters: int = required(at_least(0))
    lr_warmup_init: float = required(at_least(0))


@section("policy.megatron_cfg.distributed_data_parallel_config")
@frozen_section(kw_only=True, repr=False, eq=False)
class MegatronDDP(keys.MegatronDDPKeys):
    upstream = upstream_v3("nemo_rl.models.policy:MegatronDDPConfig")

    data_parallel_sharding_strategy: str = required(
        upstream_values("megatron_core.data_parallel_sharding_strategy")
    )


@section("policy.megatron_cfg.fp8_cfg")
@frozen_section(kw_only=True, repr=False, eq=False)
class FP8(keys.FP8Keys):
    upstream = upstream_v35("nemo_rl.models.policy:Fp8Config")

    fp8: str | Unset = optional(upstream_values("megatron_core.fp8"))
    fp8_recipe: str | Unset = optional(upstream_values("megatron_core.fp8_recipe"))


@section("policy.megatron_cfg")
@frozen_section(kw_only=True, repr=False, eq=False)
class Megatron(keys.MegatronKeys):
    """The Megatron-Core training back-end: the parallel layout lives here."""

    upstream = upstream_v3(
        "nemo_rl.models.policy:MegatronConfig", "nemo_rl.models.policy:MegatronConfigDisabled"
    )
    undeclared_keys = undeclared(
        read=(
            "fp8_cfg",
            "moe_aux_loss_coeff",
            "moe_permute_fusion",
            "moe_router_bias_update_rate",
            "moe_router_dtype",
            "moe_router_load_balancing_type",
            "mtp_detach_heads",
            "mtp_loss_scaling_factor",
            "mtp_num_layers",
            "mtp_use_repeated_layer",
        ),
        configs=(
            "converter_type",
            "error_path",
            "moe_router_enable_expert_bias",
            "track_moe_metrics",
        ),
    )

    enabled: bool = required()
    empty_unused_memory_level: int = required(between(0, 2))
    activation_checkpointing: bool = required()
    # Not read by super-v3 (Megatron-Bridge picks the model from the HF config); kept for
    # fidelity with upstream configs.
    converter_type: str | Unset = optional()
    tensor_model_parallel_size: int = required(at_least(1))
    expert_tensor_parallel_size: int = required(at_least(1))
    expert_model_parallel_size: int = required(at_least(1))
    pipeline_model_parallel_size: int = required(at_least(1))
    num_layers_in_first_pipeline_stage: int | None = required(at_least(1))
    num_layers_in_last_pipeline_stage: int | None = required(at_least(1))
    context_parallel_size: int = required(at_least(1))
    pipeline_dtype: str | Derived = derived(upstream_values("nemo_rl.torch_dtype"))
    sequence_parallel: bool = required()
    freeze_moe_router: bool = required()
    moe_router_dtype: str | None | Unset = optional(
        upstream_values("megatron_core.moe_router_dtype")
    )
    moe_router_load_balancing_type: str | Unset = optional(
        upstream_values("megatron_core.moe_router_load_balancing_type")
    )
    moe_router_bias_update_rate: float | Unset = optional(at_least(0))
    moe_permute_fusion: bool | Unset = optional()
    apply_rope_fusion: bool = required()
    bias_activation_fusion: bool = required()
    moe_per_layer_logging: bool = required()
    moe_enable_deepep: bool = required()
    moe_token_dispatcher_type: str = required(
        upstream_values("megatron_core.moe_token_dispatcher_type")
    )
    moe_shared_expert_overlap: bool = required()
    mtp_loss_scaling_factor: float | Unset = optional(at_least(0))
    mtp_use_repeated_layer: bool | Unset = optional()
    mtp_num_layers: int | Unset = optional(at_least(0))
    mtp_detach_heads: bool | Unset = optional()
    optimizer: MegatronOptimizer = required()
    scheduler: MegatronScheduler = required()
    distributed_data_parallel_config: MegatronDDP = required()
    fp8_cfg: FP8 | Unset = optional()
    error_path: str | Unset = optional()
    moe_router_enable_expert_bias: bool | Unset = optional()
    moe_aux_loss_coeff: float | Unset = optional(at_least(0))
    track_moe_metrics: bool | Unset = optional()


# --- policy: batching ---------------------------------------------------------------------


@section("policy.dynamic_batching")
@frozen_section(kw_only=True, repr=False, eq=False)
class DynamicBatching:
    upstream = (
        upstream_v3(
            "nemo_rl.models.policy:DynamicBatchingConfig",
            "nemo_rl.models.policy:DynamicBatchingConfigDisabled",
        ),
        upstream_v35(
            "nemo_rl.models.policy:DynamicBatchingConfig",
            "nemo_rl.models.policy:DynamicBatchingConfigDisabled",
        ),
    )

    enabled: bool = required()
    train_mb_tokens: int | Derived | Unset = derived(at_least(1))
    logprob_mb_tokens: int | Derived | Unset = derived(at_least(1))
    sequence_length_round: int | Unset = optional(at_least(1))


@section("policy.sequence_packing")
@frozen_section(kw_only=True, repr=False, eq=False)
class SequencePacking:
    upstream = upstream_v3(
        "nemo_rl.models.policy:SequencePackingConfig",
        "nemo_rl.models.policy:SequencePackingConfigDisabled",
    )
    undeclared_keys = undeclared(read=("sequence_length_round",))

    enabled: bool = required()
    train_mb_tokens: int | Derived | Unset = derived(at_least(1))
    logprob_mb_tokens: int | Derived | Unset = derived(at_least(1))
    algorithm: str | Unset = optional(upstream_values("nemo_rl.packing_algorithm"))
    sequence_length_round: int | Unset = optional(at_least(1))


# --- policy: the PyTorch optimizer of the DTensor path ------------------------------------


@section("policy.optimizer")
@frozen_section(kw_only=True, repr=False, eq=False)
class TorchOptimizer(keys.TorchOptimizerKeys):
    upstream = (
        upstream_v3("nemo_rl.models.policy:PytorchOptimizerConfig"),
        upstream_v35("nemo_rl.models.policy:PytorchOptimizerConfig"),
    )


@section("policy.scheduler[]")
@frozen_section(kw_only=True, repr=False, eq=False)
class TorchScheduler(keys.TorchSchedulerKeys):
    upstream = (
        upstream_v3("nemo_rl.models.policy:SinglePytorchSchedulerConfig"),
        upstream_v35("nemo_rl.models.policy:SinglePytorchSchedulerConfig"),
    )


@section("policy.scheduler[]")
@frozen_section(kw_only=True, repr=False, eq=False)
class SchedulerMilestones(keys.SchedulerMilestonesKeys):
    upstream = (
        upstream_v3("nemo_rl.models.policy:SinglePytorchMilestonesConfig"),
        upstream_v35("nemo_rl.models.policy:SinglePytorchMilestonesConfig"),
    )


# --- policy: generation -------------------------------------------------------------------


@section("policy.generation.vllm_cfg")
@frozen_section(kw_only=True, repr=False, eq=False)
class VllmConfig(keys.VllmConfigKeys):
    upstream = upstream_v3("nemo_rl.models.generation.vllm.config:VllmSpecificArgs")
    undeclared_keys = undeclared(
        read=(
            "enable_vllm_metrics_logger",
            "num_first_layers_in_bf16",
            "num_last_layers_in_bf16",
            "use_deep_gemm",
            "vllm_metrics_logger_interval",
        )
    )

    precision: str | Derived | Unset = derived(upstream_values("nemo_rl.vllm_precision"))
    tensor_parallel_size: int = required(at_least(1))
    pipeline_parallel_size: int = required(at_least(1))
    expert_parallel_size: int = required(at_least(1))
    gpu_memory_utilization: float = required(between(0.01, 1))
    max_model_len: int | Derived = derived(at_least(1))
    use_deep_gemm: bool | Unset = optional()
    num_last_layers_in_bf16: int | Unset = optional(at_least(0))
    num_first_layers_in_bf16: int | Unset = optional(at_least(0))
    enable_vllm_metrics_logger: bool | Unset = optional()
    vllm_metrics_logger_interval: float | Unset = optional(at_least(0))
    skip_tokenizer_init: bool | Unset = optional()
    expose_http_server: bool | Unset = optional()


@section("policy.generation.mcore_generation_config")
@frozen_section(kw_only=True, repr=False, eq=False)
class McoreGeneration:
    buffer_size_gb: int = required(at_least(1))
    buffer_guaranteed_fraction: float | Unset = optional(between(0, 1))
    num_cuda_graphs: int = required(at_least(0))
    block_size_tokens: int = required(at_least(1))
    use_cuda_graphs_for_non_decode_steps: bool = required()
    enable_chunked_prefill: bool = required()
    unified_memory_level: int = required(at_least(0))
    max_tokens: int = required(at_least(1))


@section("policy.generation.colocated.resources")
@frozen_section(kw_only=True, repr=False, eq=False)
class GenerationResources:
    """Where generation runs when it is not colocated with training."""

    upstream = (
        upstream_v3("nemo_rl.models.generation.interfaces:OptionalResourcesConfig"),
        upstream_v35("nemo_rl.models.generation.interfaces:OptionalResourcesConfig"),
    )

    gpus_per_node: int | None | Derived = derived(at_least(1))
    num_nodes: int | None = required(at_least(1))


@section("policy.generation.colocated")
@frozen_section(kw_only=True, repr=False, eq=False)
class Colocation(keys.ColocationKeys):
    upstream = (
        upstream_v3("nemo_rl.models.generation.interfaces:ColocationConfig"),
        upstream_v35("nemo_rl.models.generation.interfaces:ColocationConfig"),
    )

    resources: GenerationResources = required()


@section("policy.generation", aliases={"pad_token_id": "_pad_token_id"})
@frozen_section(kw_only=True, repr=False, eq=False)
class Generation(keys.GenerationKeys):
    upstream = upstream_v3(
        "nemo_rl.models.generation.vllm.config:VllmConfig",
        "nemo_rl.models.generation.sglang.config:SGLangConfig",
        "nemo_rl.models.generation.interfaces:GenerationConfig",
    )
    undeclared_keys = undeclared(read=("mcore_generation_config",))

    backend: str = required(upstream_values("nemo_rl.generation_backend"))
    max_new_tokens: int | Derived = derived(at_least(1))
    temperature: float = required(at_least(0))
    top_p: float = required(between(0, 1))
    mcore_generation_config: McoreGeneration | Unset = optional()
    vllm_cfg: VllmConfig | Unset = optional()
    colocated: Colocation | Unset = optional()
    port_range_low: int | Unset = optional(at_least(1))
    port_range_high: int | Unset = optional(at_least(1))


# --- policy -------------------------------------------------------------------------------


@section("policy")
@frozen_section(kw_only=True, repr=False, eq=False)
class Policy(keys.PolicyKeys):
    upstream = upstream_v3("nemo_rl.models.policy:PolicyConfig")
    undeclared_keys = undeclared(
        read=("offload_optimizer_for_logprob",), configs=("load_optimizer_from_checkpoint",)
    )

    tokenizer: Tokenizer = required()
    train_global_batch_size: int | Derived = derived(at_least(1))
    train_micro_batch_size: int = required(at_least(1))
    generation_batch_size: int | Unset = optional(at_least(1))
    logprob_batch_size: int | Derived | Unset = derived(at_least(1))
    max_total_sequence_length: int = required(at_least(1))
    precision: str = required(upstream_values("nemo_rl.torch_dtype"))
    logprob_chunk_size: int | None | Unset = optional(at_least(1))
    offload_optimizer_for_logprob: bool | Unset = optional()
    dtensor_cfg: DTensor = required()
    megatron_cfg: Megatron | Unset = optional()
    dynamic_batching: DynamicBatching = required()
    sequence_packing: SequencePacking | Unset = optional()
    make_sequence_length_divisible_by: int | Derived = derived(at_least(1))
    max_grad_norm: float | None | Unset = optional(at_least(0))
    refit_buffer_size_gb: float | Unset = optional(at_least(0))
    optimizer: TorchOptimizer | None | Unset = optional()
    scheduler: tuple[TorchScheduler | SchedulerMilestones, ...] | None | Unset = optional()
    generation: Generation | Unset = optional()
    load_optimizer_from_checkpoint: bool | Unset = optional()


# --- data and environments ----------------------------------------------------------------


@section()
@frozen_section(kw_only=True, repr=False, eq=False)
class Dataset(keys.DatasetKeys):
    """One dataset entry of ``data`` (``train``, ``validation`` or ``default``)."""

    upstream = upstream_v3(
        "nemo_rl.data:ResponseDatasetConfig", "nemo_rl.data:PreferenceDatasetConfig"
    )

    split_validation_size: float | Unset = optional(between(0, 1))
    seed: int | Derived | Unset = optional()
    env_name: str | Unset = optional(upstream_values("nemo_rl.env_name"))
    processor: str | Unset = optional(upstream_values("nemo_rl.data_processor"))


@section("data")
@frozen_section(kw_only=True, repr=False, eq=False)
class Data(keys.DataKeys):
    upstream = upstream_v3("nemo_rl.data:DataConfig")

    max_input_seq_length: int | None | Derived = derived(at_least(1))
    num_workers: int | Unset = optional(at_least(0))
    train: Dataset = required()
    validation: Dataset | None | Unset = optional()
    default: Dataset | None | Unset = optional()


@section("env.<name>")
@frozen_section(kw_only=True, repr=False, eq=False)
class MathEnvironment(keys.MathEnvironmentKeys):
    upstream = upstream_v35("nemo_rl.environments.math_environment:MathEnvConfig")

    num_workers: int = required(at_least(1))
    math_verify_impl: str | None | Unset = optional(upstream_values("nemo_rl.math_verify_impl"))


# --- logger, cluster ----------------------------------------------------------------------


@section("logger.wandb")
@frozen_section(kw_only=True, repr=False, eq=False)
class Wandb(keys.WandbKeys):
    upstream = upstream_v3("nemo_rl.utils.logger:WandbConfig")
    undeclared_keys = undeclared(configs=("entity",))

    project: str | Unset = optional()
    entity: str | Unset = optional()


@section("logger.swanlab")
@frozen_section(kw_only=True, repr=False, eq=False)
class Swanlab(keys.SwanlabKeys):
    upstream = (
        upstream_v3("nemo_rl.utils.logger:SwanlabConfig"),
        upstream_v35("nemo_rl.utils.logger:SwanlabConfig"),
    )

    project: str | Unset = optional()


@section("logger.tensorboard")
@frozen_section(kw_only=True, repr=False, eq=False)
class Tensorboard(keys.TensorboardKeys):
    upstream = (
        upstream_v3("nemo_rl.utils.logger:TensorboardConfig"),
        upstream_v35("nemo_rl.utils.logger:TensorboardConfig"),
    )


@section("logger.mlflow")
@frozen_section(kw_only=True, repr=False, eq=False)
class MLflow(keys.MLflowKeys):
    upstream = (
        upstream_v3("nemo_rl.utils.logger:MLflowConfig"),
        upstream_v35("nemo_rl.utils.logger:MLflowConfig"),
    )


@section("logger.gpu_monitoring")
@frozen_section(kw_only=True, repr=False, eq=False)
class GPUMonitoring:
    upstream = (
        upstream_v3("nemo_rl.utils.logger:GPUMonitoringConfig"),
        upstream_v35("nemo_rl.utils.logger:GPUMonitoringConfig"),
    )

    collection_interval: float = required(at_least(0))
    flush_interval: float = required(at_least(0))


@section("logger")
@frozen_section(kw_only=True, repr=False, eq=False)
class Logger(keys.LoggerKeys):
    upstream = upstream_v3("nemo_rl.algorithms.grpo:GRPOLoggerConfig")

    num_val_samples_to_print: int = required(at_least(0))
    wandb: Wandb = required()
    swanlab: Swanlab | Unset = optional()
    tensorboard: Tensorboard | Unset = optional()
    mlflow: MLflow | Unset = optional()
    gpu_monitoring: GPUMonitoring = required()


@section("cluster")
@frozen_section(kw_only=True, repr=False, eq=False)
class Cluster:
    """What NeMo-RL's virtual cluster is told; derived from the stage's hardware."""

    upstream = upstream_v3("nemo_rl.distributed.virtual_cluster:ClusterConfig")

    gpus_per_node: int | Derived = derived(at_least(1))
    num_nodes: int | Derived = derived(at_least(1))


@section()
@frozen_section(kw_only=True, repr=False, eq=False)
class GRPOMasterConfig:
    """``examples/run_grpo.py --config``: the complete GRPO config, top-level sections."""

    upstream = upstream_v3("nemo_rl.algorithms.grpo:MasterConfig")

    nemo_rl_branch: ClassVar[str] = NEMO_RL_VERSION

    grpo: GRPOConfig = required()
    loss_fn: ClippedPGLoss = required()
    checkpointing: Checkpointing = required()
    policy: Policy = required()
    data: Data = required()
    env: dict[str, MathEnvironment] = required()
    logger: Logger = required()
    cluster: Cluster = fixed(Cluster())
