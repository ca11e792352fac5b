"""Sections every NeMo-RL algorithm's master config shares, as NeMo-RL's examples set them.

GRPO's sections of the Super recipes (``schema_super_v3``, ``schema_main``) are the base;
nothing here changes them. What NeMo-RL's own example configs need beyond them is here, as
subclasses that widen a key just so far:

- the logger of the non-GRPO entry points is NeMo-RL's ``LoggerConfig`` (GRPO's adds a required
  ``num_val_samples_to_print``), and their master configs share every section but their
  algorithm's (``RunMasterConfig``), as do the training loops of SFT, DPO and RM
  (``TrainLoop``);
- ``data.train`` may list several datasets, as ``DataConfig.train`` allows
  (``ResponseDatasetConfig | PreferenceDatasetConfig | list[ResponseDatasetConfig]``,
  ``nemo_rl/data/__init__.py`` of NVIDIA-NeMo/RL@7ea279ab);
- on main, ``vllm_cfg.skip_tokenizer_init`` may be left out (NeMo-RL's
  ``configure_generation_config`` sets it then; main's grpo_math_1B.yaml leaves it out), the
  generation back-end may be TensorRT-LLM or Dynamo (grpo_math_1B_trtllm.yaml,
  grpo_math_1B_dynamo.yaml), and the model may be null, to be set on the command line
  (nemotron-3-ultra/*.yaml: "set by the launcher");
- on main, checks on keys of main's ``MegatronConfig``, ``VllmConfig`` and ``VllmSpecificArgs``
  that its examples set (refit ports, CUDA graphs, Megatron LoRA); the keys themselves come
  from upstream, as every key a section does not state;
- on both, what NeMo-RL reads with ``.get()`` beyond its TypedDicts: Megatron LoRA
  (``megatron_cfg.peft``, super-v3 nemo_rl/models/megatron/setup.py), SGLang's own
  arguments (``generation.sglang_cfg``, super-v3 nemo_rl/algorithms/grpo.py), and where Gym
  runs (``env.nemo_gym.num_gpu_nodes``, ``uv_venv_dir``: main nemo_rl/environments/nemo_gym.py).

Names follow one scheme across the schema modules: the algorithm first (``GRPO``, ``SFT``), a
section of main's schema whose super-v3 twin shares its name ends in ``Main``, and a widening
for the examples adds ``Examples`` before that (``PolicyExamples`` widens super-v3's ``Policy``,
``PolicyExamplesMain`` widens main's ``PolicyMain``).

A widened key's type is wider than its base class's, which mypy flags (ignored on those
lines): these sections are compiled as they are and never read through the Super schema's
types.
"""

from typing import Any, ClassVar

import attrs

from recipekit.markers import Derived, Unset
from recipekit.nemo_rl import SUPER35_BRANCH, upstream_v3, upstream_v35
from recipekit.nemo_rl.generated import section_keys as keys
from recipekit.nemo_rl.schema_main import (
    CheckpointingMain,
    ClusterMain,
    DataMain,
    DatasetMain,
    Environments,
    GenerationMain,
    MegatronMain,
    NemoGym,
    PolicyMain,
    TokenizerMain,
    VllmConfigMain,
    WandbMain,
)
from recipekit.nemo_rl.schema_super_v3 import (
    Checkpointing,
    Cluster,
    Data,
    Dataset,
    Generation,
    Logger,
    Megatron,
    Policy,
)
from recipekit.sections import derived, fixed, frozen_section, optional, required, section
from recipekit.upstream.declared import undeclared
from recipekit.validators import at_least

# --- logger ---------------------------------------------------------------------------------


@section("logger")
@frozen_section(kw_only=True, repr=False, eq=False)
class RunLogger(Logger):
    """NeMo-RL's ``LoggerConfig``, which SFT, DPO, RM and distillation read: GRPO's logger
    without its required ``num_val_samples_to_print``."""

    upstream = upstream_v3(
        "nemo_rl.utils.logger:LoggerConfig", "nemo_rl.algorithms.grpo:GRPOLoggerConfig"
    )

    num_val_samples_to_print: int | Unset = optional(at_least(0))  # type: ignore[assignment]


@section("logger")
@frozen_section(kw_only=True, repr=False, eq=False)
class RunLoggerMain(RunLogger):
    upstream = upstream_v35(
        "nemo_rl.utils.logger:LoggerConfig",
        "nemo_rl.algorithms.ppo:PPOLoggerConfig",
        "nemo_rl.algorithms.grpo:GRPOLoggerConfig",
    )

    wandb: WandbMain = required()


# --- data ---------------------------------------------------------------------------------


@section("data")
@frozen_section(kw_only=True, repr=False, eq=False)
class DataList(Data):
    """``data`` whose ``train`` (and ``validation``) may list several datasets."""

    train: Dataset | tuple[Dataset, ...] = required()  # type: ignore[assignment]
    validation: Dataset | tuple[Dataset, ...] | None | Unset = optional()  # type: ignore[assignment]


@section("data")
@frozen_section(kw_only=True, repr=False, eq=False)
class DataListMain(DataMain):
    train: DatasetMain | tuple[DatasetMain, ...] = required()  # type: ignore[assignment]
    validation: DatasetMain | tuple[DatasetMain, ...] | None | Unset = optional()  # type: ignore[assignment]


# --- policy (main) ----------------------------------------------------------------------------


@section("policy.megatron_cfg.peft")
@frozen_section(kw_only=True, repr=False, eq=False)
class MegatronPeft(keys.MegatronPeftKeys):
    """LoRA on the Megatron back-end (main's MegatronPeftConfig)."""

    upstream = upstream_v35(
        "nemo_rl.models.policy:MegatronPeftConfig",
        "nemo_rl.models.policy:MegatronPeftConfigDisabled",
    )

    enabled: bool = required()
    dim: int | Unset = optional(at_least(1))
    alpha: int | Unset = optional(at_least(1))


@section("policy.megatron_cfg")
@frozen_section(kw_only=True, repr=False, eq=False)
class MegatronExamples(Megatron):
    undeclared_keys = undeclared(read=("peft",))

    peft: MegatronPeft | Unset = optional()


@section("policy.generation", aliases={"pad_token_id": "_pad_token_id"})
@frozen_section(kw_only=True, repr=False, eq=False)
class GenerationExamples(Generation):
    sglang_cfg: dict[str, Any] | Unset = optional()


@section("policy")
@frozen_section(kw_only=True, repr=False, eq=False)
class PolicyExamples(Policy):
    """super-v3's policy section as every super-v3 example config writes it."""

    megatron_cfg: MegatronExamples | Unset = optional()
    generation: GenerationExamples | Unset = optional()


@section("policy.megatron_cfg")
@frozen_section(kw_only=True, repr=False, eq=False)
class MegatronExamplesMain(MegatronMain):
    cuda_graph_modules: str | tuple[str, ...] | None | Unset = optional()  # type: ignore[assignment]
    cuda_graph_warmup_steps: int | Unset = optional(at_least(0))
    moe_hybridep_num_sms: int | Unset = optional(at_least(1))
    peft: MegatronPeft | Unset = optional()  # type: ignore[assignment]
    fused_linear_logprobs_chunk_size: int | Unset = optional(at_least(1))


@section("policy.generation.vllm_cfg")
@frozen_section(kw_only=True, repr=False, eq=False)
class VllmConfigExamplesMain(VllmConfigMain):
    # Absent: NeMo-RL sets it (False for vision-language models, which need the tokenizer).
    skip_tokenizer_init: bool | Unset = optional()  # type: ignore[assignment]
    reasoning_parser_plugin: str | None | Unset = optional()  # type: ignore[assignment]
    # Where asynchronous HTTP/ZeroMQ weight refit listens (null: a free port).
    http_refit_server_port: int | None | Unset = optional(at_least(1))
    zmq_refit_server_port: int | None | Unset = optional(at_least(1))


@section("policy.generation", aliases={"pad_token_id": "_pad_token_id"})
@frozen_section(kw_only=True, repr=False, eq=False)
class GenerationExamplesMain(GenerationMain):
    vllm_cfg: VllmConfigExamplesMain | Unset = optional()
    # How weights reach a non-colocated generation engine (null: NeMo-RL picks).
    refit_transport: str | None | Unset = optional()
    refit_cfg: dict[str, Any] | None | Unset = optional()
    sglang_cfg: dict[str, Any] | Unset = optional()


@section("policy.tokenizer")
@frozen_section(kw_only=True, repr=False, eq=False)
class TokenizerExamplesMain(TokenizerMain):
    # null: given on the command line, as the model is.
    name: str | None | Derived = derived()  # type: ignore[assignment]


@section("policy")
@frozen_section(kw_only=True, repr=False, eq=False)
class PolicyExamplesMain(PolicyMain):
    """main's policy section as every main example config writes it."""

    # null: given on the command line ("set by the launcher").
    model_name: str | None = required()  # type: ignore[assignment]
    tokenizer: TokenizerExamplesMain = required()
    megatron_cfg: MegatronExamplesMain | Unset = optional()
    generation: GenerationExamplesMain | Unset = optional()


# --- environments -------------------------------------------------------------------------------


@section("env.nemo_gym")
@frozen_section(kw_only=True, repr=False, eq=False)
class NemoGymExamples(NemoGym):
    # Where Gym's servers get their virtual environments (NeMo-RL's default when absent).
    uv_venv_dir: str | Unset = optional()


@section("env")
@frozen_section(kw_only=True, repr=False, eq=False)
class EnvironmentsExamples(Environments):
    nemo_gym: NemoGymExamples | Unset = optional()


# --- what the non-GRPO entry points share -----------------------------------------------------


@attrs.frozen(kw_only=True)
class TrainLoop:
    """The loop of SFT, DPO and RM (super-v3: every key required; one TypedDict each upstream,
    with these keys alike)."""

    max_num_steps: int = required(at_least(1))
    max_num_epochs: int = required(at_least(1))
    # <= 0: no periodic validation (NeMo-RL then requires no validation data either).
    val_period: int = required()
    # <= 0: the whole validation set.
    val_batches: int = required()
    val_global_batch_size: int = required(at_least(1))
    val_micro_batch_size: int = required(at_least(1))
    val_at_start: bool = required()
    val_at_end: bool = required()
    seed: int = required()


@attrs.frozen(kw_only=True)
class TrainLoopMain:
    """The same loop on main: pydantic models whose keys all have defaults, so an absent key
    is NeMo-RL's default."""

    max_num_steps: int | Unset = optional(at_least(1))
    max_num_epochs: int | Unset = optional(at_least(1))
    val_period: int | Unset = optional()
    val_batches: int | Unset = optional()
    val_global_batch_size: int | Unset = optional(at_least(1))
    val_micro_batch_size: int | Unset = optional(at_least(1))
    val_at_start: bool | Unset = optional()
    val_at_end: bool | Unset = optional()
    seed: int | Unset = optional()


@attrs.frozen(kw_only=True)
class RunMasterConfig:
    """The sections of every non-GRPO master config on super-v3; each adds its algorithm's."""

    policy: PolicyExamples = required()
    data: DataList = required()
    logger: RunLogger = required()
    cluster: Cluster = fixed(Cluster())
    checkpointing: Checkpointing = required()


@attrs.frozen(kw_only=True)
class RunMasterConfigMain:
    """The same on main (super-v3.5-posttraining)."""

    # The branch's checks cite its lines (recipekit.nemo_rl.runs_super35).
    nemo_rl_branch: ClassVar[str] = SUPER35_BRANCH

    policy: PolicyExamplesMain = required()
    data: DataListMain = required()
    logger: RunLoggerMain = required()
    cluster: ClusterMain = attrs.field(factory=ClusterMain)
    checkpointing: CheckpointingMain = required()
