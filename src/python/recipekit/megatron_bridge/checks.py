"""Plan-time checks of a Megatron-Bridge stage: layout, batch, sequence, what trains, inputs.

Each check is a small function named for what it guards; it yields an Issue naming the key,
the value and the arithmetic. Megatron-Core asserts most of these itself, but only once every
node has loaded a 120B checkpoint; here they fail before anything is queued.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator
from pathlib import Path

import attrs

from recipekit import checking
from recipekit.errors import Issue, did_you_mean
from recipekit.generated_tables import sources
from recipekit.markers import given_at
from recipekit.megatron_bridge.layout import Layout
from recipekit.megatron_bridge.rules import checkpoint, cite, dataset, parallel
from recipekit.megatron_bridge.schema import LoRA, MegatronBridgeConfig
from recipekit.megatron_core.options import MegatronOptions, from_megatron_bridge
from recipekit.memory.switches import (
    MEGATRON_CORE,
    section_values,
    switched_on,
)
from recipekit.parallelism import model_layout_issues

SEQ = "model.seq_length"
# Where the provider's finalize() turns sequence parallelism off at TP 1: an assignment, no rule
# site to anchor, so written here by hand, once (an upgrade must check it).
FINALIZE_TURNS_SP_OFF = "models/transformer_config.py:175"


@attrs.frozen
class CheckContext(checking.CheckContext[MegatronBridgeConfig, Layout]):
    @property
    def gpus(self) -> str:
        hw = self.hardware
        return f"{hw.total_gpus} GPUs ({hw.num_nodes} nodes x {hw.gpus_per_node} {hw.node.name})"

    @property
    def adapter(self) -> LoRA | None:
        peft = self.config.peft
        return peft if isinstance(peft, LoRA) else None

    def megatron_options(self) -> MegatronOptions:
        """What the runner sets on the provider, with the layout's sizes (the Megatron-Core
        rules read it through ``options_of``)."""
        return from_megatron_bridge(self.config, self.layout.parallel, self.layout.keys)


Check = Callable[[CheckContext], Iterator[Issue]]


# --- recipe ----------------------------------------------------------------------------------


def recipe_names_its_mode(ctx: CheckContext) -> Iterator[Issue]:
    recipe = ctx.config.recipe
    if recipe.mode is None:
        yield Issue(
            "recipe._target_",
            "the name does not say whether it pretrains or fine-tunes (Megatron-Bridge's runner "
            "reads _pretrain_, _sft_ or _peft_ in it to pick the training loop)",
            value=recipe.target,
        )


# --- layout ----------------------------------------------------------------------------------


def parallel_layout_holds(ctx: CheckContext) -> Iterator[Issue]:
    """Every Megatron-Core layout rule (``recipekit.parallelism.LAYOUT_RULES``), in the keys of
    the stage's config."""
    lay = ctx.layout
    yield from model_layout_issues(
        lay.parallel, lay.keys, ctx.hardware.node, ctx.model, f"the {ctx.gpus}"
    )


# --- batch and sequence ----------------------------------------------------------------------


def global_batch_splits_over_data_parallel(ctx: CheckContext) -> Iterator[Issue]:
    lay, train = ctx.layout, ctx.config.train
    dp = lay.parallel.dp
    if not dp:
        return  # the layout check already failed
    step = train.micro_batch_size * dp
    if train.global_batch_size % step:
        yield Issue(
            "train.global_batch_size",
            f"must be a multiple of micro_batch_size x DP = {train.micro_batch_size} x {dp} = "
            f"{step} (DP = {lay.total_gpus} GPUs / "
            f"(TP x PP x CP = {lay.parallel.model_parallel}))",
            value=train.global_batch_size,
        )


def sequence_splits_over_its_ranks(ctx: CheckContext) -> Iterator[Issue]:
    """Megatron-Bridge's collate padding multiple (training/config.py, ConfigContainer.validate,
    for the dataset and for the model's 2 x CP @ 067f987df): context parallelism cuts each sequence
    into 2 x CP chunks (load balancing gives each rank one early and one late chunk), and sequence
    parallelism splits a CP rank's share over TP, so the sequence is a multiple of
    lcm(2 x CP, CP x TP)."""
    m = ctx.config.model
    tp, cp, seq = m.tensor_model_parallel_size, m.context_parallel_size, m.seq_length
    cp_multiple = 2 * cp if cp > 1 else 1
    sp_multiple = cp * tp if m.sequence_parallel and tp > 1 else 1
    multiple = math.lcm(cp_multiple, sp_multiple)
    if seq % multiple == 0:
        return
    if sp_multiple == 1:
        why = f"context parallelism cuts each sequence into 2 x CP = {cp_multiple} chunks"
    elif cp_multiple == 1:
        why = f"sequence parallelism splits each sequence over the TP = {tp} ranks"
    else:
        why = (
            f"context parallelism cuts each sequence into 2 x CP = {cp_multiple} chunks and "
            f"sequence parallelism splits a CP rank's share over the TP = {tp} ranks"
        )
    yield Issue(
        SEQ,
        f"{why}: it must be a multiple of {multiple}, to which Megatron-Bridge pads every batch "
        + cite(
            "megatron-bridge.config.config-container-validate.dataset-seq-length-not-multiple-lcm"
        ),
        value=seq,
    )


def dataset_agrees_with_model_and_train(ctx: CheckContext) -> Iterator[Issue]:
    cfg = ctx.config
    ds = cfg.dataset
    if isinstance(ds.seq_length, int) and ds.seq_length != cfg.model.seq_length:
        yield Issue(
            "dataset.seq_length",
            f"differs from {SEQ} ({cfg.model.seq_length}); Megatron-Bridge's runner would set "
            "the model's to the dataset's",
            value=ds.seq_length,
            hint="leave it derived",
        )
    if isinstance(ds.micro_batch_size, int) and ds.micro_batch_size != cfg.train.micro_batch_size:
        yield Issue(
            "dataset.micro_batch_size",
            f"the loader would batch differently from train.micro_batch_size "
            f"({cfg.train.micro_batch_size})",
            value=ds.micro_batch_size,
            hint="leave it derived",
        )


# --- what trains, and from what ---------------------------------------------------------------


def something_trains(ctx: CheckContext) -> Iterator[Issue]:
    m = ctx.config.model
    if (
        m.freeze_language_model
        and m.freeze_vision_model
        and m.freeze_vision_projection
        and ctx.adapter is None
    ):
        yield Issue(
            "model",
            "freeze_language_model, freeze_vision_model and freeze_vision_projection are all "
            "true and there is no peft adapter: nothing would train",
            hint="unfreeze a part, or add a peft section",
        )


def peft_stage_has_adapter(ctx: CheckContext) -> Iterator[Issue]:
    cfg = ctx.config
    if cfg.recipe.mode != "peft":
        return
    if ctx.adapter is None:
        yield Issue(
            "peft",
            f"{cfg.recipe.function} is a PEFT recipe: set the adapter "
            "(LoRA dim, alpha, target_modules)",
            value=cfg.peft,
        )


def finetune_has_weights_to_load(ctx: CheckContext) -> Iterator[Issue]:
    """recipekit.checkpoint.fine-tuning-loads-pretrained-weights (NVIDIA-NeMo/Megatron-Bridge
    #1649): without checkpoint.pretrained_checkpoint (nor a checkpoint.load to resume) a
    fine-tuning run starts from the random weights Megatron-Bridge initialises, silently."""
    ckpt = ctx.config.checkpoint
    if isinstance(ckpt.pretrained_checkpoint, str):
        return
    if ckpt.finetune is True:
        yield Issue(
            "checkpoint.finetune",
            "fine-tuning loads the weights of checkpoint.pretrained_checkpoint, which is not set",
            value=True,
        )
    # With an adapter, adapter_trains_over_pretrained_weights refuses the same key already.
    elif ctx.config.recipe.mode == "sft" and ctx.adapter is None and not isinstance(ckpt.load, str):
        yield Issue(
            "checkpoint.pretrained_checkpoint",
            f"{ctx.config.recipe.function} is a fine-tuning recipe and loads no weights (nor "
            "checkpoint.load): Megatron-Bridge would train from random initialisation "
            "(NVIDIA-NeMo/Megatron-Bridge#1649)",
            value=ckpt.pretrained_checkpoint,
        )


def model_keeps_the_checkpoints_shape(ctx: CheckContext) -> Iterator[Issue]:
    """A stage that loads weights (checkpoint.pretrained_checkpoint, or checkpoint.load to
    resume) builds the model from the provider with the stage's model.* keys and then loads the
    checkpoint into it by parameter name: a size the weights fix set to another value is
    another model than the checkpoint's."""
    from recipekit.megatron_core.overrides import checkpoint_shape, shape_issues

    ckpt = ctx.config.checkpoint
    loaded = [
        key
        for key, path in (
            ("checkpoint.pretrained_checkpoint", ckpt.pretrained_checkpoint),
            ("checkpoint.load", ckpt.load),
        )
        if isinstance(path, str)
    ]
    if not loaded:
        return
    model = ctx.config.model
    sizes = {
        name: value
        for name in checkpoint_shape(ctx.model)
        if (value := given_at(model, name)) is not None
    }
    yield from shape_issues(
        sizes, "model", ctx.model, f"Megatron-Bridge loads from {' and '.join(loaded)}"
    )


def lora_excludes_only_without_targets(ctx: CheckContext) -> Iterator[Issue]:
    """peft/module_matcher.py, ModuleMatcher.match: exclude_modules selects every linear layer
    but those; with target_modules (or a canonical_mapping) naming the layers instead, LoRA's
    matcher asserts it is empty when the adapter is applied."""
    peft = ctx.config.peft
    excluded = given_at(peft, "exclude_modules")
    if not excluded or not isinstance(peft, LoRA):
        return
    naming = [k for k in ("target_modules", "canonical_mapping") if given_at(peft, k)]
    if naming:
        rule = "target-modules" if naming[0] == "target_modules" else "canonical-mapping"
        yield Issue(
            "peft.exclude_modules",
            f"Megatron-Bridge's LoRA asserts it is empty when peft.{naming[0]} names the "
            "modules to adapt, as the adapter is applied "
            + cite(f"megatron-bridge.peft.module-matcher.match.exclude-modules-empty-{rule}"),
            value=excluded,
            hint=f"name the modules in peft.{naming[0]} alone, or set it [] to adapt every "
            "linear layer but the excluded",
        )


ERROR_CHECKS: tuple[Check, ...] = (
    recipe_names_its_mode,
    parallel_layout_holds,
    global_batch_splits_over_data_parallel,
    sequence_splits_over_its_ranks,
    dataset_agrees_with_model_and_train,
    something_trains,
    peft_stage_has_adapter,
    lora_excludes_only_without_targets,
    checkpoint.adapter_trains_over_pretrained_weights,
    finetune_has_weights_to_load,
    model_keeps_the_checkpoints_shape,
    dataset.energon_dataset_has_a_path,
    dataset.energon_has_no_test_split,
    parallel.per_layer_comm_types_cover_every_layer,
    parallel.hierarchical_context_parallel_needs_its_sizes,
    parallel.hierarchical_sizes_multiply_to_the_cp_size,
)


# --- warnings: settings that do nothing ---------------------------------------------------------


def sequence_parallel_without_tensor_parallel(ctx: CheckContext) -> Iterator[Issue]:
    m = ctx.config.model
    if m.sequence_parallel and m.tensor_model_parallel_size == 1:
        yield Issue(
            "model.sequence_parallel",
            "has no effect with tensor_model_parallel_size 1: Megatron-Bridge's provider turns "
            f"it off before Megatron-Core would refuse it ({FINALIZE_TURNS_SP_OFF})",
            value=True,
        )


def memory_switches_not_modelled(ctx: CheckContext) -> Iterator[Issue]:
    """A warning for each memory switch the stage turns on that the estimate does not model
    (recipekit.memory.switches): the model provider's. Expandable segments (env_vars'
    PYTORCH_CUDA_ALLOC_CONF) are modelled: the estimate's allocator term names them."""
    config = ctx.config
    yield from switched_on(section_values("model", config.model, MEGATRON_CORE), MEGATRON_CORE)


# The mixed-precision presets a stage may name (tools/generate_presets.py).
PRESETS = Path(__file__).parent / "generated" / "presets.json"


@functools.cache
def _presets() -> tuple[str, dict[str, int], str]:
    """(the pinned source, preset -> its line, where an unknown name is refused)."""
    ((source, table),) = sources(PRESETS).items()
    return source, table["mixed_precision"], f"{table['file']}:{table['refused_at']}"


def mixed_precision_names_a_preset(ctx: CheckContext) -> Iterator[Issue]:
    """A warning: a ``mixed_precision`` name that is none of the presets Megatron-Bridge
    registers (``get_mixed_precision_config``, which reads ``-`` as ``_``) raises ValueError at
    setup. The presets are read from the 0.6.2 release, not the commit the stages run, which may
    have more, so this is a warning, not a refusal."""
    name = given_at(ctx.config, "mixed_precision")
    if not isinstance(name, str):
        return
    source, presets, refused = _presets()
    registered = name.replace("-", "_")  # as get_mixed_precision_config reads it
    if registered in presets:
        return
    yield Issue(
        "mixed_precision",
        f"not one of the {len(presets)} mixed-precision presets Megatron-Bridge registers; it "
        f"raises ValueError at setup for a name it lacks ({refused} @ {source})",
        value=name,
        hint=did_you_mean(registered, presets, what="presets"),
    )


WARNING_CHECKS: tuple[Check, ...] = (
    sequence_parallel_without_tensor_parallel,
    mixed_precision_names_a_preset,
    memory_switches_not_modelled,
)
