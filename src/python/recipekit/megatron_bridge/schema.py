"""A Megatron-Bridge stage config as frozen, validated sections.

The shape is the one the ``nemotron`` CLI gives its Megatron-Bridge stages
(``nemotron/main/src/nemotron/recipes/super3/stage1_sft/config/default.yaml``): ``recipe``
names the recipe function (``_target_``) that builds the whole ``ConfigContainer``, and each
other section holds only the keys the stage sets on top of it. Section and key names are
Megatron-Bridge's own ``ConfigContainer`` fields (``train.global_batch_size``,
``model.tensor_model_parallel_size``, ``checkpoint.pretrained_checkpoint``), so its docs apply
and each key is also the ``KEY=VALUE`` override its runner takes.

A key left ``UNSET`` keeps the recipe's value. The layout, batch, sequence and freeze keys are
required: the plan checks them against the hardware, so they are written down, even where they
repeat the recipe. There is no ``run`` section: what a stage reads and publishes is the Stage's
lineage; a key that reads one of its inputs holds a ``RunInput``, which the plan resolves.
"""

from __future__ import annotations

from typing import Any, Literal

import attrs

from recipekit.errors import FieldError
from recipekit.markers import Derived, Unset, given
from recipekit.megatron_bridge.generated import section_keys as keys
from recipekit.sections import derived, frozen_section, optional, required, section
from recipekit.upstream.declared import Declared, declared, undeclared
from recipekit.validators import at_least, between, upstream_values

RecipeMode = Literal["pretrain", "sft", "peft"]

# The pinned Megatron-Bridge whose ConfigContainer the sections model (with the Megatron-Core
# and 0.6.2-release files its classes extend): recipekit.upstream.declared's table.
BRIDGE_TYPES = "megatron-bridge/main"


def upstream_bridge(*qualified: str) -> Declared:
    """Megatron-Bridge's config class(es) ``module:Name``, as the generated table has them."""
    return declared(BRIDGE_TYPES, *qualified)


DEFAULT_PEFT_SCHEME = "lora"


def recipe_mode(target: str) -> RecipeMode | None:
    """The training mode a recipe function's name encodes, as Megatron-Bridge's runner reads it
    (``scripts/training/recipe_metadata.py``: ``infer_recipe_mode``): ``_pretrain_``,
    ``_sft_``/``_finetune_``, ``_peft_``/``_lora_``/``_dora_``."""
    name = "_" + target.rsplit(".", 1)[-1].lower().strip("_") + "_"
    if "_pretrain_" in name:
        return "pretrain"
    if "_sft_" in name or "_finetune_" in name:
        return "sft"
    if any(tag in name for tag in ("_peft_", "_lora_", "_dora_")):
        return "peft"
    return None


def _dotted_function(_: Any, attribute: attrs.Attribute[Any], value: str) -> None:
    module, _sep, function = value.rpartition(".")
    if not module or not function.isidentifier():
        exc = FieldError(
            "a recipe target is the dotted path of a function, "
            "e.g. megatron.bridge.recipes.<family>.<module>.<name>_config",
            value,
        )
        exc.field_name = attribute.name  # type: ignore[attr-defined]
        raise exc


@section("recipe", aliases={"target": "_target_"})
@frozen_section(kw_only=True, repr=False, eq=False)
class Recipe:
    """The Megatron-Bridge recipe function that builds the ``ConfigContainer``."""

    target: str = required(_dotted_function)
    # The PEFT recipes' one argument (``..._peft_config(peft_scheme="lora")``): the job passes
    # it as run_recipe.py's --mode, which hands the recipe only the schemes it names.
    peft_scheme: str | Unset = optional(upstream_values("megatron_bridge.peft_scheme"))

    @property
    def function(self) -> str:
        return self.target.rsplit(".", 1)[-1]

    @property
    def mode(self) -> RecipeMode | None:
        return recipe_mode(self.target)

    @property
    def run_mode(self) -> str | None:
        """``run_recipe.py``'s ``--mode``: pretrain, sft, or a PEFT recipe's adapter scheme,
        LoRA where the recipe names none (the PEFT recipe functions' ``peft_scheme="lora"``)."""
        if self.mode != "peft":
            return self.mode
        return given(self.peft_scheme, DEFAULT_PEFT_SCHEME)


@section("train")
@frozen_section(kw_only=True, repr=False, eq=False)
class Train(keys.TrainKeys):
    upstream = upstream_bridge("megatron.bridge.training.config:TrainingConfig")

    train_iters: int = required(at_least(1))
    global_batch_size: int = required(at_least(1))
    micro_batch_size: int = required(at_least(1))
    manual_gc_interval: int | Unset = optional(at_least(0))


@section("model")
@frozen_section(kw_only=True, repr=False, eq=False)
class Model(keys.ModelKeys):
    """The model provider's fields the stage sets: layout, sequence, freezing, recompute."""

    upstream = upstream_bridge(
        "megatron.bridge.models.nemotron_omni.nemotron_omni_provider:NemotronVLModelProvider",
        "megatron.bridge.models.nemotron_omni.nemotron_omni_provider:NemotronOmniModelProvider",
        "megatron.bridge.models.nemotron_omni.nemotron_omni_provider:NemotronOmniLlavaModelProvider",
        "megatron.bridge.models.nemotron_omni.nemotron_omni_provider:_NemotronOmniModelProviderBase",
        "megatron.bridge.models.hybrid.hybrid_provider:HybridModelProvider",
        "megatron.bridge.models.mamba.mamba_provider:MambaModelProvider",
        "megatron.bridge.models.gpt_provider:GPTModelProvider",
        "megatron.bridge.models.t5_provider:T5ModelProvider",
    )

    tensor_model_parallel_size: int = required(at_least(1))
    pipeline_model_parallel_size: int = required(at_least(1))
    context_parallel_size: int = required(at_least(1))
    expert_model_parallel_size: int = required(at_least(1))
    expert_tensor_parallel_size: int = required(at_least(1))
    sequence_parallel: bool = required()
    seq_length: int = required(at_least(1))
    # The VL providers' independent freeze controls (Megatron-Bridge
    # models/nemotron_omni/nemotron_omni_provider.py, NemotronVLModelProvider).
    freeze_language_model: bool = required()
    freeze_vision_model: bool = required()
    freeze_vision_projection: bool = required()
    # An uneven pipeline split: the first/last stage's decoder layers, the rest even.
    num_layers_in_first_pipeline_stage: int | None | Unset = optional(at_least(1))
    num_layers_in_last_pipeline_stage: int | None | Unset = optional(at_least(1))
    # Read by the context-parallel rules (a per-layer list names num_layers types; a2a+p2p's
    # groups multiply to the CP size).
    num_layers: int | None | Unset = optional(at_least(1))
    # One type for every layer, or a list with one per layer.
    cp_comm_type: str | tuple[str, ...] | None | Unset = optional(
        upstream_values("megatron_core.cp_comm_type")
    )
    recompute_granularity: str | None | Unset = optional(
        upstream_values("megatron_core.recompute_granularity")
    )
    recompute_method: str | None | Unset = optional(
        upstream_values("megatron_core.recompute_method")
    )
    recompute_num_layers: int | None | Unset = optional(at_least(1))
    moe_token_dispatcher_type: str | Unset = optional(
        upstream_values("megatron_core.moe_token_dispatcher_type")
    )


@section("dataset")
@frozen_section(kw_only=True, repr=False, eq=False)
class Dataset(keys.DatasetKeys):
    """The recipe's dataset config (Energon for the VL recipes), with what the stage sets.

    ``path`` is usually ``RunInput("data")``, the stage's data artifact. ``seq_length`` and
    ``micro_batch_size`` follow the model and train sections; leave them ``UNSET`` for a recipe
    whose dataset has no such field (the long-context recipe's CoderForge dataset).
    """

    upstream = upstream_bridge(
        "megatron.bridge.data.builders.energon:EnergonDatasetConfig",
        "megatron.bridge.training.config:GPTDatasetConfig",
        "megatron.bridge.training.config:GPTFIMDatasetConfig",
        "megatron.bridge.training.config:MockGPTDatasetConfig",
        "megatron.bridge.data.base:DatasetProvider",
        "megatron.bridge.data.builders.mock_vlm_sft:MockVLMSFTDatasetConfig",
        "megatron.bridge.data.builders.direct_hf_sft:DirectHFSFTDatasetConfig",
        "megatron.bridge.data.builders.gpt_sft:GPTSFTDatasetConfig",
        "megatron.bridge.data.builders.gpt_sft:FinetuningDatasetConfig",
    )

    path: str | Unset = optional()
    seq_length: int | Derived | Unset = derived(at_least(1))
    micro_batch_size: int | Derived | Unset = derived(at_least(1))
    num_workers: int | Unset = optional(at_least(0))


@section("optimizer")
@frozen_section(kw_only=True, repr=False, eq=False)
class Optimizer(keys.OptimizerKeys):
    upstream = upstream_bridge("megatron.bridge.training.config:OptimizerConfig")

    optimizer: str | Unset = optional(upstream_values("megatron_core.optimizer"))
    lr: float | Unset = optional(at_least(0))
    min_lr: float | Unset = optional(at_least(0))
    weight_decay: float | Unset = optional(at_least(0))
    adam_beta1: float | Unset = optional(between(0, 1))
    adam_beta2: float | Unset = optional(between(0, 1))
    clip_grad: float | Unset = optional(at_least(0))
    optimizer_offload_fraction: float | Unset = optional(between(0, 1))


@section("scheduler")
@frozen_section(kw_only=True, repr=False, eq=False)
class Scheduler(keys.SchedulerKeys):
    upstream = upstream_bridge("megatron.bridge.training.config:SchedulerConfig")

    lr_warmup_iters: int | Unset = optional(at_least(0))
    # The recipes decay over the whole run (``lr_decay_iters = train.train_iters``).
    lr_decay_iters: int | None | Derived | Unset = derived(at_least(1))
    lr_decay_style: str | Unset = optional(upstream_values("megatron_core.lr_decay_style"))


@section("logger")
@frozen_section(kw_only=True, repr=False, eq=False)
class Logger(keys.LoggerKeys):
    upstream = upstream_bridge("megatron.bridge.training.config:LoggerConfig")

    log_interval: int | Unset = optional(at_least(1))


@section("checkpoint")
@frozen_section(kw_only=True, repr=False, eq=False)
class Checkpoint(keys.CheckpointKeys):
    upstream = upstream_bridge("megatron.bridge.training.config:CheckpointConfig")

    save: str = required()
    save_interval: int = required(at_least(1))
    # Weights to start from (a converted or earlier checkpoint): usually RunInput("model").
    pretrained_checkpoint: str | None | Unset = optional()
    # Load only the weights of pretrained_checkpoint: no optimizer or RNG state, iteration 0.
    finetune: bool | Unset = optional()
    # Resume from here (same run); null keeps a fresh run from picking up another's state.
    load: str | None | Unset = optional()


@section("peft")
@frozen_section(kw_only=True, repr=False, eq=False)
class LoRA(keys.LoRAKeys):
    """Megatron-Bridge's ``peft.LoRA`` settings over the recipe's adapter (``LoRA``, or
    ``VLMLoRA`` for a vision-language recipe: the keys of either)."""

    upstream = upstream_bridge(
        "megatron.bridge.peft.base:PEFT",
        "megatron.bridge.peft.lora:LoRA",
        "megatron.bridge.peft.lora:VLMLoRA",
    )

    dim: int = required(at_least(1))
    alpha: int = required(at_least(1))
    target_modules: tuple[str, ...] = required()
    dropout: float | Unset = optional(between(0, 1))


@section()
@frozen_section(kw_only=True, repr=False, eq=False)
class MegatronBridgeConfig(keys.MegatronBridgeConfigKeys):
    """What the entry point applies: the recipe, then each section's keys over its result."""

    upstream = upstream_bridge("megatron.bridge.training.config:ConfigContainer")
    undeclared_keys = undeclared(own=("recipe",))
    # The recipe function builds the tokenizer config; the entry point only overrides it.
    optional_keys = ("tokenizer",)

    recipe: Recipe = required()
    train: Train = required()
    model: Model = required()
    dataset: Dataset = required()
    optimizer: Optimizer | Unset = optional()
    scheduler: Scheduler = required()
    logger: Logger | Unset = optional()
    checkpoint: Checkpoint = required()
    # LoRA for a PEFT recipe; null turns a recipe's adapter off (full fine-tuning).
    peft: LoRA | None | Unset = optional()
