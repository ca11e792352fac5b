"""The GRPO master config of NeMo-RL ``main`` (and ``super-v3.5-posttraining``) as typed sections.

Super 3.5 RL runs on NeMo-RL's ``super-v3.5-posttraining`` branch, whose config schema matches
``main`` (NVIDIA-NeMo/RL@7ea279ab, ``nemo_rl/**``, pinned in 3rdparty/reference). Sections that
did not change since ``super-v3`` are the ``schema_super_v3`` classes themselves; a section that
gained or re-typed keys is a subclass naming main's class, which gives it the keys main added; it
states only the keys it re-types or checks (a re-typed key keeps its place, an added one goes
after the key its ``after=`` names: ``sections._in_base_order``); a section that
lost keys is declared again here. Nothing in ``schema_super_v3`` changes, so the Super V3
recipes compile exactly as before.

Keys that ``main``'s TypedDicts and pydantic models do not declare, but that the public Super Omni
VL configs set and the branch passes through (pydantic ``extra='allow'`` models, Megatron
overrides), are declared as optional keys with a comment saying so.
"""

from typing import Any, ClassVar

import attrs

from recipekit.markers import Derived, Unset
from recipekit.nemo_rl import SUPER35_BRANCH, upstream_v35
from recipekit.nemo_rl.generated import section_keys as keys
from recipekit.nemo_rl.schema_super_v3 import (
    FP8,
    AdvantageEstimator,
    AsyncGRPO,
    Checkpointing,
    ClippedPGLoss,
    Cluster,
    Colocation,
    Data,
    Dataset,
    DTensor,
    DynamicBatching,
    Generation,
    GRPOConfig,
    Logger,
    MathEnvironment,
    Megatron,
    MegatronDDP,
    MegatronOptimizer,
    MegatronScheduler,
    Policy,
    RewardScaling,
    RewardShaping,
    SchedulerMilestones,
    SequencePacking,
    Tokenizer,
    TorchOptimizer,
    TorchScheduler,
    VllmConfig,
    Wandb,
)
from recipekit.sections import derived, frozen_section, optional, required, section
from recipekit.upstream.declared import undeclared
from recipekit.validators import at_least, between, upstream_values

# --- grpo ---------------------------------------------------------------------------------


@section("grpo.reward_shaping")
@frozen_section(kw_only=True, repr=False, eq=False)
class RewardShapingMain(RewardShaping):
    """DAPO's overlong penalty on main: the buffer's length and penalty may be null, and
    ``max_response_length`` is absent unless set (DERIVED follows
    policy.max_total_sequence_length on super-v3)."""

    upstream = upstream_v35("nemo_rl.algorithms.reward_functions:RewardShapingConfig")

    overlong_buffer_length: int | None | Unset = optional(at_least(0))  # type: ignore[assignment]
    overlong_buffer_penalty: float | None | Unset = optional(at_least(0))  # type: ignore[assignment]
    max_response_length: int | None | Derived | Unset = optional(at_least(1))  # type: ignore[assignment]


@section("grpo.adv_estimator")
@frozen_section(kw_only=True, repr=False, eq=False)
class AdvantageEstimatorMain(keys.AdvantageEstimatorMainKeys, AdvantageEstimator):
    # name: the estimators main's GRPO builds (the inherited field takes this pin's set).
    upstream = upstream_v35("nemo_rl.algorithms.advantage_estimator:AdvEstimatorConfig")


@section("grpo.async_grpo")
@frozen_section(kw_only=True, repr=False, eq=False)
class AsyncGRPOMain(AsyncGRPO):
    upstream = upstream_v35("nemo_rl.algorithms.grpo:AsyncGRPOConfig")

    # Generation failures tolerated before the run stops (0: none).
    max_generation_failures: int | Unset = optional(at_least(0))


@section("grpo")
@frozen_section(kw_only=True, repr=False, eq=False)
class GRPOConfigMain(keys.GRPOConfigMainKeys, GRPOConfig):
    """main's GRPOConfig: super-v3's without ``penalize_*`` (gone on main), with its
    validation-sampling, early-stop and filtering keys, looser types where main's are, and
    main's sub-sections."""

    upstream = upstream_v35("nemo_rl.algorithms.grpo:GRPOConfig")
    undeclared_keys = undeclared(configs=("zero_variance_prompt_filtering",))

    removed_keys: ClassVar[tuple[str, ...]] = (
        "penalize_invalid_tool_call",
        "penalize_malformed_thinking",
    )

    # -1: validate from the first val_period on.
    val_start_at: int | Unset = optional(at_least(-1), after="val_period")
    advantage_clip_low: float | None | Unset = optional(after="overlong_filtering")
    advantage_clip_high: float | None | Unset = optional(after="advantage_clip_low")
    val_num_generations_per_prompt: int | Unset = optional(at_least(1), after="max_val_samples")
    val_batch_size: int | None = required(at_least(1))  # type: ignore[assignment]
    reward_shaping: RewardShapingMain | Unset = optional()  # type: ignore[assignment]
    adv_estimator: AdvantageEstimatorMain | Unset = optional()
    reward_scaling: RewardScaling | Unset = optional()  # type: ignore[assignment]
    seq_logprob_error_threshold: float | None | Unset = optional()  # type: ignore[assignment]
    # super-v3 types these two float; main lets them be null.
    invalid_tool_call_advantage: float | None | Unset = optional()  # type: ignore[assignment]
    malformed_thinking_advantage: float | None | Unset = optional()  # type: ignore[assignment]
    async_grpo: AsyncGRPOMain | None | Unset = optional(  # type: ignore[assignment]
        after="malformed_thinking_advantage"
    )
    # Not a GRPOConfig field on main (extra='allow'); the branch's async GRPO reads it to drop
    # prompts whose generations all score the same. The Super Omni configs set it.
    zero_variance_prompt_filtering: bool | Unset = optional()


# --- loss_fn, checkpointing ---------------------------------------------------------------


@section("loss_fn")
@frozen_section(kw_only=True, repr=False, eq=False)
class ClippedPGLossMain(keys.ClippedPGLossMainKeys, ClippedPGLoss):
    upstream = upstream_v35("nemo_rl.algorithms.loss.loss_functions:ClippedPGLossConfig")

    positive_example_nll_weight: float | Unset = optional(at_least(0))


@section("checkpointing")
@frozen_section(kw_only=True, repr=False, eq=False)
class CheckpointingMain(keys.CheckpointingMainKeys, Checkpointing):
    upstream = upstream_v35("nemo_rl.utils.checkpoint:CheckpointingConfig")

    # A Super Omni checkpoint with optimizer state is ~1.4 TB; false saves weights only.
    ft_keep_latest_k: int | None | Unset = optional(at_least(1))
    ft_save_period: int | Unset = optional(at_least(1))


# --- policy: Megatron ---------------------------------------------------------------------


@section("policy.megatron_cfg.optimizer")
@frozen_section(kw_only=True, repr=False, eq=False)
class MegatronOptimizerMain(MegatronOptimizer):
    upstream = upstream_v35("nemo_rl.models.policy:MegatronOptimizerConfig")

    overlap_cpu_optimizer_d2h_h2d: bool | Unset = optional()


@section("policy.megatron_cfg.distributed_data_parallel_config")
@frozen_section(kw_only=True, repr=False, eq=False)
class MegatronDDPMain(MegatronDDP):
    upstream = upstream_v35("nemo_rl.models.policy:MegatronDDPConfig")
    undeclared_keys = undeclared(configs=("average_in_collective",))

    # Not in main's MegatronDDPConfig; passed on to Megatron-Core's DistributedDataParallelConfig.
    average_in_collective: bool | Unset = optional()


@section("policy.megatron_cfg.checkpoint")
@frozen_section(kw_only=True, repr=False, eq=False)
class MegatronCheckpoint(keys.MegatronCheckpointKeys):
    upstream = upstream_v35("nemo_rl.models.policy:MegatronCheckpointConfig")


@section("policy.megatron_cfg")
@frozen_section(kw_only=True, repr=False, eq=False)
class MegatronMain(keys.MegatronMainKeys, Megatron):
    """main's MegatronConfig: super-v3's keys plus the vision-language freeze controls,
    recomputation, and Megatron checkpointing."""

    upstream = upstream_v35(
        "nemo_rl.models.policy:MegatronConfig", "nemo_rl.models.policy:MegatronConfigDisabled"
    )
    undeclared_keys = undeclared(
        read=("force_overwrite_initial_ckpt",), configs=("moe_aux_loss_coeff",)
    )

    force_overwrite_initial_ckpt: bool | Unset = optional()

    optimizer: MegatronOptimizerMain = required()
    distributed_data_parallel_config: MegatronDDPMain = required()
    checkpoint: MegatronCheckpoint | Unset = optional()
    recompute_granularity: str | Unset = optional(
        upstream_values("megatron_core.recompute_granularity")
    )
    # The vision encoder (C-RADIO) and projector are trained unless frozen; Super 3.5 has no
    # audio, so the Omni sound encoder and projection stay frozen.


# --- policy: batching, draft --------------------------------------------------------------


@section("policy.sequence_packing")
@frozen_section(kw_only=True, repr=False, eq=False)
class SequencePackingMain(SequencePacking):
    upstream = upstream_v35(
        "nemo_rl.models.policy:SequencePackingConfig",
        "nemo_rl.models.policy:SequencePackingConfigDisabled",
    )

    # The order packed micro-batches train in; largest_first surfaces out-of-memory at once.
    microbatch_order: str | Unset = optional(upstream_values("nemo_rl.microbatch_order"))


@section("policy.draft")
@frozen_section(kw_only=True, repr=False, eq=False)
class Draft(keys.DraftKeys):
    """An Eagle-style draft model trained beside the policy (off in the Super Omni configs)."""

    upstream = upstream_v35(
        "nemo_rl.models.policy:DraftConfig", "nemo_rl.models.policy:DraftConfigDisabled"
    )

    enabled: bool = required()
    loss_weight: float | Unset = optional(at_least(0))
    num_layers: int | None | Unset = optional(at_least(1))


@section("policy.tokenizer")
@frozen_section(kw_only=True, repr=False, eq=False)
class TokenizerMain(keys.TokenizerMainKeys, Tokenizer):
    upstream = upstream_v35("nemo_rl.models.policy:TokenizerConfig")


# --- policy: generation -------------------------------------------------------------------


@section("policy.generation.mcore_generation_config")
@frozen_section(kw_only=True, repr=False, eq=False)
class McoreGenerationMain(keys.McoreGenerationMainKeys):
    """main's MCoreGenerationSpecificArgs (Megatron-Core dynamic inference), declared again:
    ``unified_memory_level`` and ``buffer_guaranteed_fraction`` are gone and most keys are now
    required."""

    upstream = upstream_v35("nemo_rl.models.generation.megatron.config:MCoreGenerationSpecificArgs")
    undeclared_keys = undeclared(
        read=(
            "activation_checkpointing",
            "context_parallel_size",
            "expert_model_parallel_size",
            "expert_tensor_parallel_size",
            "inference_grouped_gemm_backend",
            "moe_router_group_topk",
            "moe_router_num_groups",
            "pipeline_model_parallel_size",
            "sequence_parallel",
            "tensor_model_parallel_size",
            "transformer_impl",
        )
    )

    buffer_size_gb: int = required(at_least(1))
    block_size_tokens: int = required(at_least(1))
    max_tokens: int | Derived = derived(at_least(1))
    max_model_len: int | Derived = derived(at_least(1))
    # -1: one CUDA graph per batch size the engine picks.
    num_cuda_graphs: int = required(at_least(-1))
    refit_backend: str = required(upstream_values("nemo_rl.refit_backend"))
    num_speculative_tokens: int = required(at_least(0))
    mamba_inference_ssm_states_dtype: str | Unset = optional(upstream_values("nemo_rl.torch_dtype"))
    mamba_inference_conv_states_dtype: str | Unset = optional(
        upstream_values("nemo_rl.torch_dtype")
    )
    kv_cache_management_mode: str = required(upstream_values("nemo_rl.kv_cache_management_mode"))
    logging_step_interval: int | Unset = optional(at_least(1))
    # Not in MCoreGenerationSpecificArgs: the inference model's own layout and kernels, which
    # the Super Omni configs give Megatron generation (it reads them as model overrides).
    transformer_impl: str | Unset = optional()
    activation_checkpointing: bool | Unset = optional()
    inference_grouped_gemm_backend: str | Unset = optional()
    moe_router_num_groups: int | None | Unset = optional(at_least(1))
    moe_router_group_topk: int | None | Unset = optional(at_least(1))
    tensor_model_parallel_size: int | Unset = optional(at_least(1))
    pipeline_model_parallel_size: int | Unset = optional(at_least(1))
    context_parallel_size: int | Unset = optional(at_least(1))
    expert_model_parallel_size: int | Unset = optional(at_least(1))
    expert_tensor_parallel_size: int | Unset = optional(at_least(1))
    sequence_parallel: bool | Unset = optional()


@section("policy.generation.vllm_cfg")
@frozen_section(kw_only=True, repr=False, eq=False)
class VllmConfigMain(keys.VllmConfigMainKeys, VllmConfig):
    upstream = upstream_v35("nemo_rl.models.generation.vllm.config:VllmSpecificArgs")
    undeclared_keys = undeclared(read=("enable_prefix_caching",))

    skip_tokenizer_init: bool = required()
    # raw_logprobs: the sampler's log-probabilities before temperature/top-p, which the
    # importance-sampling correction compares with the trainer's.
    logprobs_mode: str | Unset = optional(upstream_values("nemo_rl.logprobs_mode"))
    # Not in main's VllmSpecificArgs; passed on to vLLM's engine arguments.
    enable_prefix_caching: bool | Unset = optional()


@section("policy.generation", aliases={"pad_token_id": "_pad_token_id"})
@frozen_section(kw_only=True, repr=False, eq=False)
class GenerationMain(keys.GenerationMainKeys, Generation):
    """main's GenerationConfig: super-v3's keys with main's vLLM and Megatron sections, plus
    validation sampling, bad words and asynchronous rollouts."""

    upstream = upstream_v35(
        "nemo_rl.models.generation.vllm.config:VllmConfig",
        "nemo_rl.models.generation.sglang.config:SGLangConfig",
        "nemo_rl.models.generation.trtllm.config:TrtllmConfig",
        "nemo_rl.models.generation.interfaces:GenerationConfig",
        "nemo_rl.models.generation.megatron.config:MCoreGenerationConfig",
        # backend: dynamo, which GRPO's setup validates as this model
        "nemo_rl.models.generation.dynamo.config:DynamoConfig",
    )

    # Sampling for validation rollouts; the upstream YAML interpolates the training values.
    val_temperature: float | Derived = derived(at_least(0), after="top_k")
    val_top_p: float | Derived = derived(between(0, 1))
    val_top_k: int | None | Derived = derived()
    bad_words: tuple[str, ...] | None | Unset = optional(after="stop_strings")
    # Another section than super-v3's (keys gone, keys now required), not a widening of it.
    mcore_generation_config: McoreGenerationMain | Unset = optional()  # type: ignore[assignment]
    vllm_cfg: VllmConfigMain | Unset = optional()
    use_async_rollouts: bool | Unset = optional(after="port_range_high")


# --- policy -------------------------------------------------------------------------------


@section("policy.dtensor_cfg", aliases={"v2": "_v2"})
@frozen_section(kw_only=True, repr=False, eq=False)
class DTensorMain(keys.DTensorMainKeys, DTensor):
    """super-v3.5's DTensor back-end: super-v3's keys and those its DTensorConfig adds (expert
    parallelism, HSDP replication, deferred gradient sync), which upstream declares."""

    upstream = upstream_v35(
        "nemo_rl.models.policy:DTensorConfig", "nemo_rl.models.policy:DTensorConfigDisabled"
    )


@section("policy")
@frozen_section(kw_only=True, repr=False, eq=False)
class PolicyMain(keys.PolicyMainKeys, Policy):
    """main's PolicyConfig: super-v3's keys with main's sections, plus the draft model and
    the vision-language switches."""

    upstream = upstream_v35("nemo_rl.models.policy:PolicyConfig")

    tokenizer: TokenizerMain = required()
    dtensor_cfg: DTensorMain = required()
    megatron_cfg: MegatronMain | Unset = optional()
    draft: Draft | Unset = optional(after="megatron_cfg")
    sequence_packing: SequencePackingMain | Unset = optional()
    generation: GenerationMain | Unset = optional()
    # The model takes images (and video): NeMo-RL loads the HF processor, not only the
    # tokenizer.
    is_vlm: bool | Unset = optional()


# --- data and environments ----------------------------------------------------------------


@section()
@frozen_section(kw_only=True, repr=False, eq=False)
class DatasetMain(keys.DatasetMainKeys, Dataset):
    upstream = upstream_v35(
        "nemo_rl.data:ResponseDatasetConfig", "nemo_rl.data:PreferenceDatasetConfig"
    )

    num_frames: int | Unset = optional(at_least(1))
    video_target_num_patches: int | None | Unset = optional(at_least(1))
    video_temporal_patch_size: int | Unset = optional(at_least(1))
    min_generation_tokens: int | Unset = optional(at_least(0))


@section("data")
@frozen_section(kw_only=True, repr=False, eq=False)
class DataMain(keys.DataMainKeys, Data):
    upstream = upstream_v35("nemo_rl.data:DataConfig")

    use_multiple_dataloader: bool | Unset = optional(after="num_workers")
    num_prompts_per_dataloader: int | Unset = optional(at_least(1))
    train: DatasetMain = required()
    validation: DatasetMain | None | Unset = optional()
    default: DatasetMain | None | Unset = optional()


@section("env.nemo_gym")
@frozen_section(kw_only=True, repr=False, eq=False)
class NemoGym:
    """NeMo Gym's global config as the GRPO + Gym runner starts it.

    The runner fills ``model_name``, ``base_urls`` and ``initial_global_config_dict`` (main's
    NemoGymConfig) from these keys; the rest is Gym's own config: which server configs to load
    and per-server overrides, keyed by the server's name.
    """

    port_range_low: int | Unset = optional(at_least(1))
    port_range_high: int | Unset = optional(at_least(1))
    config_paths: tuple[str, ...] = required()
    policy_max_input_tokens: int | Derived | Unset = derived(at_least(1))
    skip_venv_if_present: bool | Unset = optional()
    # Nodes of GPUs for Gym's own model servers (judges such as the GenRM); 0: none. The job
    # allocates them beside NeMo-RL's cluster.num_nodes (derivations_main).
    num_gpu_nodes: int | Unset = optional(at_least(0))
    uv_pip_set_python: bool | Unset = optional()
    pad_dynamic_image_shapes: bool | Unset = optional()
    invalid_tool_call_patterns: tuple[str, ...] | None | Unset = optional()
    thinking_tags: tuple[str, ...] | None | Unset = optional()
    require_routed_experts: bool | Unset = optional()
    use_fastokens: bool | Unset = optional()
    # Per-server overrides of Gym's config (server name -> its config), as Gym spells them.
    policy_model: dict[str, Any] | Unset = optional()
    math_with_judge: dict[str, Any] | Unset = optional()
    code_gen: dict[str, Any] | Unset = optional()
    # RLHF: the pairwise GenRM judge and the model server it asks (nemotron-3-ultra's
    # rlhf_teacher.yaml names them so).
    genrm_compare_resources_server: dict[str, Any] | Unset = optional()
    genrm_model: dict[str, Any] | Unset = optional()


@section("env")
@frozen_section(kw_only=True, repr=False, eq=False)
class Environments(keys.EnvironmentsKeys):
    """``env``: the environments by name, and the GRPO + Gym runner's switches."""

    upstream = upstream_v35("nemo_rl.evals.eval:_PassThroughEnvConfig")
    undeclared_keys = undeclared(
        read=(
            "nemo_gym",
            "should_log_nemo_gym_responses",
            "should_mask_flagged_samples",
            "should_use_nemo_gym",
        )
    )

    should_use_nemo_gym: bool | Unset = optional()
    should_log_nemo_gym_responses: bool | Unset = optional()
    # Drop samples the environment flagged (a failed tool server, a malformed trajectory).
    should_mask_flagged_samples: bool | Unset = optional()
    nemo_gym: NemoGym | Unset = optional()
    math: MathEnvironment | Unset = optional()


# --- on-policy distillation (MOPD) ----------------------------------------------------------


@section("on_policy_distillation.non_colocated_teachers.<teacher>")
@frozen_section(kw_only=True, repr=False, eq=False)
class TeacherResources(keys.TeacherResourcesKeys):
    """Where one teacher's log-probability workers run and how they are laid out.

    TeacherResourceConfig takes keys it does not declare (pydantic extra="allow") and folds them
    into the teacher's megatron_cfg (opd.py, create_teacher_configs_from_opd_config), so a
    teacher takes every key of NeMo-RL's MegatronConfig too, typed as that declares it."""

    upstream = upstream_v35("nemo_rl.algorithms.opd:TeacherResourceConfig")
    extra_keys = upstream_v35("nemo_rl.models.policy:MegatronConfig")

    tensor_model_parallel_size: int | Unset = optional(at_least(1))
    pipeline_model_parallel_size: int | Unset = optional(at_least(1))
    context_parallel_size: int | Unset = optional(at_least(1))
    expert_model_parallel_size: int | Unset = optional(at_least(1))
    num_nodes: int | Unset = optional(at_least(1))
    gpus_per_node: int | Unset = optional(at_least(1))
    # Stored, never read: the teacher runs at policy.precision (rules.distillation warns).
    micro_batch_size: int | Unset = optional(at_least(1))
    moe_shared_expert_overlap: bool | Unset = optional()


@section("on_policy_distillation.non_colocated_teachers")
@frozen_section(kw_only=True, repr=False, eq=False)
class NonColocatedTeachers(keys.NonColocatedTeachersKeys):
    upstream = upstream_v35("nemo_rl.algorithms.opd:NonColocatedTeachersConfig")

    default_teacher_cfg: TeacherResources | Unset = optional()
    teacher_overrides: dict[str, TeacherResources] | Unset = optional()


@section("on_policy_distillation")
@frozen_section(kw_only=True, repr=False, eq=False)
class OnPolicyDistillation(keys.OnPolicyDistillationKeys):
    """MOPD: each prompt's Gym agent name picks the teacher that scores the student's tokens."""

    upstream = upstream_v35("nemo_rl.algorithms.opd:OnPolicyDistillationConfig")

    # true: a prompt whose agent has no teacher is an error, not the default teacher.
    non_colocated_teachers: NonColocatedTeachers | None | Unset = optional()


# --- logger, cluster ----------------------------------------------------------------------


@section("logger.wandb")
@frozen_section(kw_only=True, repr=False, eq=False)
class WandbMain(keys.WandbMainKeys, Wandb):
    upstream = upstream_v35("nemo_rl.utils.logger:WandbConfig")


@section("logger")
@frozen_section(kw_only=True, repr=False, eq=False)
class LoggerMain(Logger):
    upstream = upstream_v35("nemo_rl.algorithms.grpo:GRPOLoggerConfig")

    wandb: WandbMain = required()


@section("cluster")
@frozen_section(kw_only=True, repr=False, eq=False)
class ClusterMain(Cluster):
    upstream = upstream_v35("nemo_rl.distributed.virtual_cluster:ClusterConfig")

    # Ports torch.distributed rendezvous may use; kept clear of Ray's and Gym's.
    master_port_range_low: int | Unset = optional(at_least(1))
    master_port_range_high: int | Unset = optional(at_least(1))
    # Nodes per NVLink-domain segment NeMo-RL places its training groups in (GB200: the nodes
    # the largest TP/CP/EP group spans; null elsewhere): derivations_main, launch.placement.
    segment_size: int | None | Unset | Derived = derived(at_least(1))


@section()
@frozen_section(kw_only=True, repr=False, eq=False)
class GRPOMasterConfigMain(keys.GRPOMasterConfigMainKeys):
    """The GRPO (+ NeMo Gym, + MOPD) config of NeMo-RL main / super-v3.5-posttraining."""

    upstream = upstream_v35("nemo_rl.algorithms.grpo:MasterConfig")

    nemo_rl_branch: ClassVar[str] = SUPER35_BRANCH

    grpo: GRPOConfigMain = required()
    loss_fn: ClippedPGLossMain = required()
    checkpointing: CheckpointingMain = required()
    policy: PolicyMain = required()
    data: DataMain = required()
    env: Environments = required()
    logger: LoggerMain = required()
    cluster: ClusterMain = attrs.field(factory=ClusterMain)
    on_policy_distillation: OnPolicyDistillation | None | Unset = optional()


# Sections main shares with super-v3 unchanged, re-exported so a Super 3.5 recipe imports every
# section from this module.
__all__ = [
    "FP8",
    "AdvantageEstimatorMain",
    "AsyncGRPOMain",
    "CheckpointingMain",
    "ClippedPGLossMain",
    "ClusterMain",
    "Colocation",
    "DTensor",
    "DTensorMain",
    "DataMain",
    "DatasetMain",
    "Draft",
    "DynamicBatching",
    "Environments",
    "GRPOConfigMain",
    "GRPOMasterConfigMain",
    "GenerationMain",
    "LoggerMain",
    "MathEnvironment",
    "McoreGenerationMain",
    "MegatronCheckpoint",
    "MegatronDDPMain",
    "MegatronMain",
    "MegatronOptimizerMain",
    "MegatronScheduler",
    "NemoGym",
    "NonColocatedTeachers",
    "OnPolicyDistillation",
    "PolicyMain",
    "RewardScaling",
    "RewardShapingMain",
    "SchedulerMilestones",
    "SequencePackingMain",
    "TeacherResources",
    "TokenizerMain",
    "TorchOptimizer",
    "TorchScheduler",
    "VllmConfigMain",
    "WandbMain",
]
