"""The Megatron-Core settings a stage passes, read from either framework's typed config.

:class:`MegatronOptions` holds the values Megatron-Core's config classes check, as the
framework hands them over (NeMo-RL's activation checkpointing already turned into a recompute
granularity, a key the stage leaves unset already the model provider's value, a field that
NeMo-RL's ``model_overrides`` sets on the provider already the override's: ``overrides``), and
:class:`OptionKeys` says which user key sets each one, so a rule's Issue names the key of the
framework in use. One key table per framework: ``NEMO_RL_KEYS``, ``MEGATRON_BRIDGE_KEYS``.

The parallel sizes are not options here: they are the stage's one
:class:`recipekit.parallelism.ParallelLayout` (its layout's ``parallel``), spelled by the
layout's own :class:`recipekit.parallelism.ParallelKeys`. Which framework a check context is,
its ``CheckContext.megatron_options`` says (``options_of`` asks it), so nothing here guesses
from the config's shape.
"""

from __future__ import annotations

from typing import Any

import attrs

from recipekit.markers import Marker
from recipekit.megatron_core.overrides import overridden_options
from recipekit.model_card import ModelCard
from recipekit.parallelism import ParallelKeys, ParallelLayout

# A value the stage does not set: the model provider's (Megatron-Bridge
# src/megatron/bridge/models/nemotronh/nemotron_h_bridge.py @ 067f987df for Nemotron-H).
PROVIDER_DEFAULTS: dict[str, Any] = {
    "moe_token_dispatcher_type": "alltoall",
    "moe_shared_expert_overlap": True,
    "moe_router_dtype": "fp32",
    "moe_enable_deepep": False,
    "bias_activation_fusion": False,
}


@attrs.frozen(kw_only=True)
class OptionKeys:
    """The user key path of each option; None where the framework has no key for it (the
    provider's value stands)."""

    framework: str
    recompute_granularity: str | None
    recompute_method: str | None
    recompute_num_layers: str | None
    recompute_modules: str | None
    moe_token_dispatcher_type: str | None
    moe_enable_deepep: str | None
    moe_shared_expert_overlap: str | None
    moe_router_dtype: str | None
    bias_activation_fusion: str | None
    optimizer: str | None
    use_distributed_optimizer: str | None
    use_precision_aware_optimizer: str | None
    fp8: str | None
    fp8_recipe: str | None
    # The learning-rate schedule (OptimizerParamScheduler's arguments).
    lr: str | None = None
    min_lr: str | None = None
    lr_warmup_init: str | None = None
    lr_warmup_iters: str | None = None
    lr_decay_iters: str | None = None
    start_weight_decay: str | None = None
    end_weight_decay: str | None = None
    weight_decay_incr_style: str | None = None
    lr_decay_style: str | None = None
    # The key that bounds the run's optimizer steps (the decay's length when it names none).
    run_iters: str | None = None
    # Layer-wise activation offloading: no stage key sets it (NeMo-RL's model_overrides can).
    cpu_offloading: str | None = None
    cpu_offloading_num_layers: str | None = None


_NRL = "policy.megatron_cfg"
NEMO_RL_KEYS = OptionKeys(
    framework="nemo-rl",
    # NeMo-RL sets the granularity from activation_checkpointing (and, on main, this key).
    recompute_granularity=f"{_NRL}.recompute_granularity",
    recompute_method=None,
    recompute_num_layers=None,
    recompute_modules=f"{_NRL}.recompute_modules",
    moe_token_dispatcher_type=f"{_NRL}.moe_token_dispatcher_type",
    moe_enable_deepep=f"{_NRL}.moe_enable_deepep",
    moe_shared_expert_overlap=f"{_NRL}.moe_shared_expert_overlap",
    moe_router_dtype=f"{_NRL}.moe_router_dtype",
    bias_activation_fusion=f"{_NRL}.bias_activation_fusion",
    optimizer=f"{_NRL}.optimizer.optimizer",
    use_distributed_optimizer=f"{_NRL}.optimizer.use_distributed_optimizer",
    use_precision_aware_optimizer=f"{_NRL}.optimizer.use_precision_aware_optimizer",
    fp8=f"{_NRL}.fp8_cfg.fp8",
    fp8_recipe=f"{_NRL}.fp8_cfg.fp8_recipe",
    lr=f"{_NRL}.optimizer.lr",
    min_lr=f"{_NRL}.optimizer.min_lr",
    lr_warmup_init=f"{_NRL}.scheduler.lr_warmup_init",
    lr_warmup_iters=f"{_NRL}.scheduler.lr_warmup_iters",
    lr_decay_iters=f"{_NRL}.scheduler.lr_decay_iters",
    start_weight_decay=f"{_NRL}.scheduler.start_weight_decay",
    end_weight_decay=f"{_NRL}.scheduler.end_weight_decay",
    weight_decay_incr_style=f"{_NRL}.scheduler.weight_decay_incr_style",
    lr_decay_style=f"{_NRL}.scheduler.lr_decay_style",
    run_iters="grpo.max_num_steps",
)
MEGATRON_BRIDGE_KEYS = OptionKeys(
    framework="megatron-bridge",
    recompute_granularity="model.recompute_granularity",
    recompute_method="model.recompute_method",
    recompute_num_layers="model.recompute_num_layers",
    recompute_modules="model.recompute_modules",
    moe_token_dispatcher_type="model.moe_token_dispatcher_type",
    moe_enable_deepep=None,
    moe_shared_expert_overlap=None,
    moe_router_dtype=None,
    bias_activation_fusion=None,
    optimizer=None,
    use_distributed_optimizer=None,
    use_precision_aware_optimizer=None,
    # The Megatron-Bridge stages have no FP8 key: the recipe's mixed-precision setting stands.
    fp8=None,
    fp8_recipe=None,
    lr="optimizer.lr",
    min_lr="optimizer.min_lr",
    lr_warmup_iters="scheduler.lr_warmup_iters",
    lr_decay_iters="scheduler.lr_decay_iters",
    run_iters="train.train_iters",
)


_OPTION_FIELDS = frozenset(attrs.fields_dict(OptionKeys)) - {"framework"}
# What NeMo-RL's setup always sets from its own keys, after the overrides.
_NEMO_RL_SETS = frozenset(
    {
        "moe_token_dispatcher_type",
        "moe_enable_deepep",
        "moe_shared_expert_overlap",
        "moe_router_dtype",
        "bias_activation_fusion",
    }
)
_PARALLEL_FIELDS = frozenset(attrs.fields_dict(ParallelKeys)) - {"section"}


@attrs.frozen(kw_only=True)
class MegatronOptions:
    """What Megatron-Core's config classes receive from one stage."""

    keys: OptionKeys
    # The stage's layout, as its framework's layout read it, and how that framework spells it.
    parallel: ParallelLayout
    parallel_keys: ParallelKeys
    recompute_granularity: str | None = None
    recompute_method: str | None = None
    recompute_num_layers: int | None = None
    # None: Megatron-Core's default, ["core_attn"] (TransformerConfig.__post_init__).
    recompute_modules: tuple[str, ...] | None = None
    moe_token_dispatcher_type: str = "alltoall"
    moe_enable_deepep: bool = False
    moe_shared_expert_overlap: bool = False
    moe_router_dtype: str | None = None
    bias_activation_fusion: bool = False
    optimizer: str = "adam"
    use_distributed_optimizer: bool = True
    use_precision_aware_optimizer: bool = False
    # None: FP8 off (TransformerConfig's default); else the format, "e4m3" or "hybrid".
    fp8: str | None = None
    fp8_recipe: str | None = None
    # The learning-rate schedule OptimizerParamScheduler is built with, in optimizer steps;
    # None where the stage leaves it to a value recipekit cannot see (the recipe's).
    lr: float | None = None
    min_lr: float | None = None
    lr_warmup_init: float | None = None
    lr_warmup_iters: int | None = None
    # None: the decay spans the whole run (the framework's train_iters).
    lr_decay_iters: int | None = None
    start_weight_decay: float | None = None
    end_weight_decay: float | None = None
    weight_decay_incr_style: str | None = None
    # Where the WSD style's decay length (lr_wsd_decay_iters) cannot be stated: the style as
    # the stage sets it (None where the recipe's scheduler may state both).
    lr_decay_style: str | None = None
    # The run's optimizer steps (its train_iters), None unknown; or, with run_iters_bound, the
    # most it can take (NeMo-RL's GRPO stops earlier when its epochs' batches run out).
    run_iters: int | None = None
    run_iters_bound: bool = False
    # ModelParallelConfig's defaults (model_parallel_config.py).
    cpu_offloading: bool = False
    cpu_offloading_num_layers: int = 0

    def key(self, field: str, fallback: str | None = None) -> str:
        """The user key that sets ``field`` (an option, or a size of ``parallel``), else
        ``fallback``'s, else the field's own name."""
        for name in (field, fallback):
            if name in _OPTION_FIELDS:
                if (path := getattr(self.keys, name)) is not None:
                    return str(path)
            elif name in _PARALLEL_FIELDS and self.parallel_keys.has(name):
                return self.parallel_keys.key(name)
        return field

    @property
    def sequence_parallel(self) -> bool:
        """Megatron-Bridge's finalize() turns sequence parallelism off at TP 1
        (src/megatron/bridge/models/transformer_config.py, TransformerConfig.finalize @ 067f987df);
        both frameworks
        build the provider through it."""
        return self.parallel.sp and self.parallel.tp > 1


def _value(section: Any, name: str, default: Any) -> Any:
    value = getattr(section, name, default)
    return default if isinstance(value, Marker) else value


def from_nemo_rl(
    megatron_cfg: Any,
    parallel: ParallelLayout,
    parallel_keys: ParallelKeys,
    run_iters: tuple[str, int] | None = None,
) -> MegatronOptions:
    """``policy.megatron_cfg`` as NeMo-RL's setup passes it (nemo_rl/models/megatron/setup.py
    @ 5d63149a: _apply_parallelism_config and _apply_moe_config the layout and MoE,
    _apply_performance_config recompute, _create_megatron_config the optimizer and scheduler
    sections), with the stage's ``parallel`` layout. ``run_iters`` (the keys, the
    value) bounds the scheduler's train_iters, which the entry point sets from its own step
    budget (GRPO: the smaller of grpo.max_num_steps and the epochs' batches, grpo.py's setup at
    both versions; nemo_rl.checks.context.train_iters_bound)."""
    m, opt = megatron_cfg, megatron_cfg.optimizer
    sched = getattr(m, "scheduler", None)
    granularity = method = layers = None
    modules = None
    if m.activation_checkpointing is True:
        granularity = _value(m, "recompute_granularity", "full")
        if granularity == "full":
            method, layers = "uniform", 1
        else:
            found = _value(m, "recompute_modules", None)
            modules = tuple(found) if found is not None else None
    # setup.py, _apply_performance_config (both versions): an enabled fp8_cfg's format and
    # recipe go onto the model config; a disabled one leaves FP8 off.
    fp8_cfg = getattr(m, "fp8_cfg", None)
    fp8 = fp8_recipe = None
    if getattr(fp8_cfg, "enabled", False) is True:
        fp8 = _value(fp8_cfg, "fp8", None)
        fp8_recipe = _value(fp8_cfg, "fp8_recipe", None)
    keys = NEMO_RL_KEYS
    if run_iters is not None:
        keys = attrs.evolve(keys, run_iters=run_iters[0])
    options = MegatronOptions(
        keys=keys,
        parallel=parallel,
        parallel_keys=parallel_keys,
        recompute_granularity=granularity,
        recompute_method=method,
        recompute_num_layers=layers,
        recompute_modules=modules,
        moe_token_dispatcher_type=m.moe_token_dispatcher_type,
        moe_enable_deepep=m.moe_enable_deepep is True,
        moe_shared_expert_overlap=m.moe_shared_expert_overlap is True,
        moe_router_dtype=_value(m, "moe_router_dtype", PROVIDER_DEFAULTS["moe_router_dtype"]),
        bias_activation_fusion=m.bias_activation_fusion is True,
        optimizer=opt.optimizer,
        use_distributed_optimizer=opt.use_distributed_optimizer is True,
        use_precision_aware_optimizer=opt.use_precision_aware_optimizer is True,
        fp8=fp8,
        fp8_recipe=fp8_recipe,
        lr=_value(opt, "lr", None),
        min_lr=_value(opt, "min_lr", None),
        lr_warmup_init=_value(sched, "lr_warmup_init", None),
        lr_warmup_iters=_value(sched, "lr_warmup_iters", None),
        lr_decay_iters=_value(sched, "lr_decay_iters", None),
        start_weight_decay=_value(sched, "start_weight_decay", None),
        end_weight_decay=_value(sched, "end_weight_decay", None),
        weight_decay_incr_style=_value(sched, "weight_decay_incr_style", None),
        lr_decay_style=_value(sched, "lr_decay_style", None),
        run_iters=None if run_iters is None else run_iters[1],
        run_iters_bound=True,
    )
    overrides = _value(m, "model_overrides", None)
    if not overrides:
        return options
    # NeMo-RL merges model_overrides into the provider first, then sets its own keys on it
    # (setup.py, setup_model_config, then _apply_moe_config, and _apply_performance_config's
    # recompute, fusions and FP8 @ super-v3.5-posttraining): an override stands where NeMo-RL sets
    # nothing afterwards.
    set_later = set(_NEMO_RL_SETS)
    if m.activation_checkpointing is True:
        set_later.add("recompute_granularity")
        if granularity == "full":
            set_later |= {"recompute_method", "recompute_num_layers"}
        elif modules is not None:
            set_later.add("recompute_modules")
    if fp8 is not None:
        set_later |= {"fp8", "fp8_recipe"}
    # An option that is a field of the model provider (recompute_*, moe_*, fp8, cpu_offloading,
    # ...; the optimizer's and scheduler's are not) may be overridden.
    options_fields = frozenset(attrs.fields_dict(MegatronOptions))
    found = overridden_options(overrides, options_fields, frozenset(set_later))
    paths = {name: f"{_NRL}.model_overrides.{name}" for name in found}
    return attrs.evolve(options, keys=attrs.evolve(options.keys, **paths), **found)


def from_megatron_bridge(
    config: Any, parallel: ParallelLayout, parallel_keys: ParallelKeys
) -> MegatronOptions:
    """``model.*`` as Megatron-Bridge's runner sets it on the recipe's provider, with the
    stage's ``parallel`` layout; what the stage leaves unset is the provider's
    (``PROVIDER_DEFAULTS``)."""
    m = config.model
    modules = _value(m, "recompute_modules", None)
    return MegatronOptions(
        keys=MEGATRON_BRIDGE_KEYS,
        parallel=parallel,
        parallel_keys=parallel_keys,
        recompute_granularity=_value(m, "recompute_granularity", None),
        recompute_method=_value(m, "recompute_method", None),
        recompute_num_layers=_value(m, "recompute_num_layers", None),
        recompute_modules=tuple(modules) if modules is not None else None,
        moe_token_dispatcher_type=_value(
            m, "moe_token_dispatcher_type", PROVIDER_DEFAULTS["moe_token_dispatcher_type"]
        ),
        moe_enable_deepep=PROVIDER_DEFAULTS["moe_enable_deepep"],
        moe_shared_expert_overlap=PROVIDER_DEFAULTS["moe_shared_expert_overlap"],
        moe_router_dtype=PROVIDER_DEFAULTS["moe_router_dtype"],
        bias_activation_fusion=PROVIDER_DEFAULTS["bias_activation_fusion"],
        lr=_value(config.optimizer, "lr", None),
        min_lr=_value(config.optimizer, "min_lr", None),
        lr_warmup_iters=_value(config.scheduler, "lr_warmup_iters", None),
        lr_decay_iters=_value(config.scheduler, "lr_decay_iters", None),
        run_iters=_value(config.train, "train_iters", None),
    )


def options_of(ctx: Any) -> MegatronOptions | None:
    """The options of a framework's check context, as its framework reads them
    (``CheckContext.megatron_options``); None where the stage does not run Megatron-Core (a
    NeMo-RL stage on DTensor)."""
    options: MegatronOptions | None = ctx.megatron_options()
    return options


def activation_of(model: ModelCard) -> str:
    """The MLP activation of the model's provider: Nemotron-H's is squared ReLU
    (nemotron_h_bridge.py @ 067f987df), a gated MLP's SwiGLU (silu)."""
    arch = model.architecture
    if arch is not None and arch.mamba is not None:
        return "squared_relu"
    return "silu" if arch is not None and arch.gated_mlp else "gelu"


def shared_experts(model: ModelCard) -> bool:
    arch = model.architecture
    return arch is not None and arch.moe is not None and arch.moe.shared_ffn > 0
