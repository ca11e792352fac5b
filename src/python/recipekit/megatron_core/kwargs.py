"""The Megatron-Core constructor arguments a framework passes for a rendered recipekit config.

Written from what each framework does with its config, so that Megatron-Core's own
``__post_init__`` can be run on exactly those arguments (``tools/record_megatron_verdicts.py``)
and its verdicts compared with recipekit's rules (``verdicts_test.py``). This reads the
*rendered* config (the dict the framework reads), not recipekit's typed one: the rules read the
typed config through ``options``, so the replay compares two independent readings.

Five classes, each a dict of keyword arguments; values are JSON (a dtype is its name, the
activation function its name; the recorder turns them into torch objects):

- ``model``: the TransformerConfig (a ModelParallelConfig) of the model provider. The provider's
  own values for Nemotron-H models come first (Megatron-Bridge
  ``src/megatron/bridge/models/nemotronh/nemotron_h_bridge.py`` @ 067f987df), then the model
  card's sizes, then the stage's keys.
- ``optimizer``: the OptimizerConfig. ``ddp``: the DistributedDataParallelConfig.
- ``scheduler`` (NeMo-RL only: a Megatron-Bridge stage's learning rates are its recipe's):
  the OptimizerParamScheduler the optimizer is built with (``nemo_rl_scheduler``).
- ``bridge``: what Megatron-Bridge's provider ``finalize()`` changes before it runs
  Megatron-Core's ``__post_init__`` (``src/megatron/bridge/models/transformer_config.py``,
  ``TransformerConfig.finalize`` @ 067f987df): a pipeline dtype defaulted to the params dtype,
  sequence parallelism turned off at TP 1, the expert tensor-parallel size defaulted. Applied here,
  cited per key.
"""

from __future__ import annotations

from typing import Any

from recipekit.model_card import ModelCard

Kwargs = dict[str, dict[str, Any]]

# NeMo-RL's Megatron setup, super-v3.5-posttraining (5d63149a): nemo_rl/models/megatron/setup.py.
NEMO_RL_SETUP = "nemo_rl/models/megatron/setup.py @ 5d63149a"

# megatron_cfg key -> TransformerConfig field, copied one to one (setup.py's
# _apply_parallelism_config, _apply_moe_config, _apply_mtp_config and _apply_performance_config).
_NEMO_RL_COPIED = (
    "tensor_model_parallel_size",
    "pipeline_model_parallel_size",
    "num_layers_in_first_pipeline_stage",
    "num_layers_in_last_pipeline_stage",
    "sequence_parallel",
    "context_parallel_size",
    "expert_tensor_parallel_size",
    "expert_model_parallel_size",
    "moe_router_dtype",
    "moe_router_load_balancing_type",
    "moe_router_bias_update_rate",
    "moe_enable_deepep",
    "moe_token_dispatcher_type",
    "moe_shared_expert_overlap",
    "moe_permute_fusion",
    "mtp_num_layers",
    "apply_rope_fusion",
    "bias_activation_fusion",
    "gradient_accumulation_fusion",
    "moe_router_enable_expert_bias",
    "moe_aux_loss_coeff",
)
_DTYPES = {"float32": "float32", "bfloat16": "bfloat16", "float16": "float16"}


def model_kwargs(model: ModelCard) -> dict[str, Any]:
    """The provider's TransformerConfig fields for ``model``, before the stage's keys."""
    arch = model.architecture
    out: dict[str, Any] = {"num_layers": model.num_layers}
    if arch is None:
        return out
    out |= {
        "hidden_size": arch.hidden,
        "num_attention_heads": arch.attention_heads or 1,
        "num_query_groups": arch.kv_heads or None,
        "kv_channels": arch.head_dim or None,
        "ffn_hidden_size": arch.ffn or (arch.moe.expert_ffn if arch.moe else 4 * arch.hidden),
        "gated_linear_unit": arch.gated_mlp,
    }
    if arch.mamba is not None:
        # nemotron_h_bridge.py: the hybrid Nemotron-H provider's own values.
        out |= {"activation_func": "squared_relu", "add_bias_linear": False}
    if arch.moe is not None:
        moe = arch.moe
        out |= {
            "num_moe_experts": moe.num_experts,
            "moe_ffn_hidden_size": moe.expert_ffn,
            "moe_router_topk": moe.top_k,
            "moe_shared_expert_intermediate_size": moe.shared_ffn or None,
        }
        if arch.mamba is not None:
            out |= {
                "moe_aux_loss_coeff": 0.0001,
                "moe_router_score_function": "sigmoid",
                "moe_router_enable_expert_bias": True,
                "moe_router_load_balancing_type": "seq_aux_loss",
                "moe_router_dtype": "fp32",
                "moe_grouped_gemm": True,
                "moe_token_dispatcher_type": "alltoall",
                "moe_permute_fusion": True,
                "moe_shared_expert_overlap": True,
            }
    return out


def provider_written(model: ModelCard) -> bool:
    """Whether ``model_kwargs`` writes down the model provider's own values: the Nemotron-H
    provider's. For another model the provider may set any field, so a field the stage leaves
    out is not known to be Megatron-Core's default."""
    arch = model.architecture
    return arch is not None and arch.mamba is not None


def bridge_finalize(model: dict[str, Any]) -> dict[str, Any]:
    """Megatron-Bridge's ``finalize()`` before Megatron-Core's ``__post_init__``
    (transformer_config.py, TransformerConfig.finalize @ 067f987df)."""
    out = dict(model)
    if out.get("pipeline_model_parallel_size", 1) > 1 and out.get("pipeline_dtype") is None:
        out["pipeline_dtype"] = out.get("params_dtype", "float32")
    if out.get("sequence_parallel") and out.get("tensor_model_parallel_size", 1) <= 1:
        out["sequence_parallel"] = False
    return out


def nemo_rl_kwargs(rendered: dict[str, Any], model: ModelCard) -> Kwargs:
    """What NeMo-RL's Megatron setup passes for a rendered GRPO config (``NEMO_RL_SETUP``)."""
    policy = rendered["policy"]
    cfg = policy["megatron_cfg"]
    out = model_kwargs(model)
    # setup.py, setup_model_config: model_overrides are merged into the provider before
    # NeMo-RL's own keys.
    out |= cfg.get("model_overrides") or {}
    out |= {key: cfg[key] for key in _NEMO_RL_COPIED if key in cfg}
    # setup.py, _apply_precision_config: the dtype of policy.precision sets bf16/fp16/params_dtype;
    # the pipeline dtype is megatron_cfg.pipeline_dtype's.
    precision = policy["precision"]
    out |= {
        "bf16": precision == "bfloat16",
        "fp16": precision == "float16",
        "params_dtype": _DTYPES.get(precision, "float32"),
        "pipeline_dtype": _DTYPES[cfg["pipeline_dtype"]],
    }
    # setup.py, _apply_performance_config: activation checkpointing picks the granularity (full
    # unless set); full recomputes one layer at a time, uniformly.
    if cfg["activation_checkpointing"]:
        granularity = cfg.get("recompute_granularity", "full")
        out["recompute_granularity"] = granularity
        if granularity == "full":
            out |= {"recompute_method": "uniform", "recompute_num_layers": 1}
        elif cfg.get("recompute_modules") is not None:
            out["recompute_modules"] = list(cfg["recompute_modules"])
    # setup.py, _apply_performance_config: FP8 settings only when enabled.
    fp8 = cfg.get("fp8_cfg")
    if isinstance(fp8, dict) and fp8.get("enabled"):
        out |= {key: fp8[key] for key in ("fp8", "fp8_recipe", "fp8_param") if key in fp8}
    ddp_cfg = cfg["distributed_data_parallel_config"]
    # setup.py, _create_megatron_config: the optimizer section as it is, plus overlap_param_gather;
    # the DDP config from four keys and the optimizer's use_distributed_optimizer.
    optimizer = {
        **{k: v for k, v in cfg["optimizer"].items() if k != "params_dtype"},
        "overlap_param_gather": ddp_cfg["overlap_param_gather"],
    }
    ddp = {
        "check_for_nan_in_grad": True,
        "grad_reduce_in_fp32": ddp_cfg["grad_reduce_in_fp32"],
        "overlap_grad_reduce": ddp_cfg["overlap_grad_reduce"],
        "overlap_param_gather": ddp_cfg["overlap_param_gather"],
        "average_in_collective": False,
        "use_distributed_optimizer": cfg["optimizer"]["use_distributed_optimizer"],
        "data_parallel_sharding_strategy": ddp_cfg["data_parallel_sharding_strategy"],
    }
    out_kwargs = {"model": bridge_finalize(out), "optimizer": optimizer, "ddp": ddp}
    if "grpo" in rendered:  # the run's length is GRPO's here
        out_kwargs["scheduler"] = nemo_rl_scheduler(rendered)
    return out_kwargs


def nemo_rl_scheduler(rendered: dict[str, Any]) -> dict[str, Any]:
    """The OptimizerParamScheduler arguments of a rendered GRPO config, in optimizer steps
    (samples): NeMo-RL hands Megatron-Bridge the scheduler section (setup.py,
    _create_megatron_config) and train_iters, the smaller of grpo.max_num_steps and the epochs'
    batches (grpo.py, setup), here max_num_steps, the most it can be; Megatron-Bridge scales
    iterations by the global batch, lets the decay span train_iters when lr_decay_iters is unset,
    and cuts a warm-up as long as the decay to one step less
    (megatron-bridge.config.calculate-scheduler-steps.warm-up-long-decay-longer-cut)."""
    policy = rendered["policy"]
    cfg = policy["megatron_cfg"]
    scheduler, optimizer = cfg["scheduler"], cfg["optimizer"]
    batch = policy["train_global_batch_size"]
    train_iters = rendered["grpo"]["max_num_steps"]
    decay = (scheduler.get("lr_decay_iters") or train_iters) * batch
    warmup = min(scheduler["lr_warmup_iters"] * batch, decay - 1)
    return {
        "init_lr": scheduler["lr_warmup_init"],
        "max_lr": optimizer["lr"],
        "min_lr": optimizer["min_lr"],
        "lr_warmup_steps": warmup,
        "lr_decay_steps": decay,
        "lr_decay_style": scheduler["lr_decay_style"],
        "start_wd": scheduler["start_weight_decay"],
        "end_wd": scheduler["end_weight_decay"],
        "wd_incr_steps": train_iters * batch,
        "wd_incr_style": scheduler["weight_decay_incr_style"],
        # Set from lr_wsd_decay_iters, which the section cannot state.
        "wsd_decay_steps": None,
        # Megatron-Bridge's SchedulerConfig leaves both at their defaults for NeMo-RL.
        "use_checkpoint_opt_param_scheduler": False,
        "override_opt_param_scheduler": False,
    }


def megatron_bridge_kwargs(rendered: dict[str, Any], model: ModelCard) -> Kwargs:
    """What Megatron-Bridge's runner passes: the recipe's provider with the stage's ``model.*``
    keys set on it, its OptimizerConfig with ``optimizer.*`` and its DDP config with ``ddp.*``
    set, each key that is a field of the class (run_recipe.py applies them as overrides onto the
    recipe's ConfigContainer, then ``validate()`` finalizes).

    The recipe function's own values are not visible before the job (they are upstream code);
    the provider's Nemotron-H values stand in for them, bf16 as the Super-VL recipes train.
    """
    fields = class_fields()

    def set_on(name: str) -> dict[str, Any]:
        """The stage's keys of a section that are fields of its class (the rest are the
        provider's or the runner's own: seq_length, the VL provider's freeze_*)."""
        section = rendered.get(name)
        return {
            key: (list(value) if isinstance(value, list | tuple) else value)
            for key, value in (section if isinstance(section, dict) else {}).items()
            if key in fields[name]
        }

    out = model_kwargs(model) | {"bf16": True, "params_dtype": "bfloat16"} | set_on("model")
    optimizer = {"optimizer": "adam", "bf16": True, "use_distributed_optimizer": True}
    optimizer |= set_on("optimizer")
    ddp = {"use_distributed_optimizer": True} | set_on("ddp")
    return {"model": bridge_finalize(out), "optimizer": optimizer, "ddp": ddp}


def class_fields() -> dict[str, frozenset[str]]:
    """The constructor fields of each class, by its name here, read from the pinned wheel
    (generated/guards.json, tools/generate_mcore_guards.py)."""
    from recipekit.megatron_core.guards import tables

    return {name: frozenset(table["defaults"]) for name, table in tables().items()}


def framework_kwargs(framework: str, rendered: dict[str, Any], model: ModelCard) -> Kwargs:
    if framework == "nemo-rl":
        return nemo_rl_kwargs(rendered, model)
    if framework == "megatron-bridge":
        return megatron_bridge_kwargs(rendered, model)
    raise ValueError(f"{framework} does not run Megatron-Core")
