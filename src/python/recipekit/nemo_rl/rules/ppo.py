"""PPO's own rules (``examples/run_ppo.py``, super-v3.5-posttraining): what the runner, PPO's
setup and training loops (``nemo_rl/algorithms/ppo.py``) and the value model (the critic:
``nemo_rl/models/value/lm_value.py`` and its DTensor and Megatron workers) refuse or warn about.

Each check reads the typed config (the entry point is a NemoRLRun, which has no GRPO
CheckContext). An absent key is NeMo-RL's default for it; a section NeMo-RL indexes without
a default fails there anyway, and a check only flags what the rule itself says.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from recipekit.errors import Issue
from recipekit.markers import Marker, given, is_set
from recipekit.nemo_rl.keys import value_of
from recipekit.nemo_rl.rules.checkpoint_ranking import (
    metric_without_its_source,
    misspelt_metric_check,
    unranked_saves,
)
from recipekit.nemo_rl.rules.citation import cite_super35 as _cite
from recipekit.nemo_rl.rules.citation import mirrors_super35
from recipekit.nemo_rl.rules.generation_split import (
    SplitRules,
    generation_colocated,
    non_colocated_generation,
    policy_generation,
    split_issues,
    stated_cluster,
    training_gpus,
)
from recipekit.nemo_rl.rules.torch_optim import trained_by_dtensor
from recipekit.nemo_rl.rules.weight_sync import SPARSE_TRANSPORTS
from recipekit.nemo_rl.schema_ppo import AsyncPPO, PPOMasterConfig


def _on(section: object, key: str) -> bool:
    """``section.key`` is true (an absent section or key is not)."""
    return value_of(section, key) is True


def _vllm(config: PPOMasterConfig) -> Any:
    """The vLLM settings when the policy generates with vLLM."""
    gen = policy_generation(config)
    if gen is None or gen.backend != "vllm" or isinstance(gen.vllm_cfg, Marker):
        return None
    return gen.vllm_cfg


def _async(config: PPOMasterConfig) -> AsyncPPO | None:
    section = config.ppo.async_ppo
    return section if isinstance(section, AsyncPPO) and section.enabled is True else None


def _megatron_value(config: PPOMasterConfig) -> Any:
    megatron = config.value.megatron_cfg
    return megatron if not isinstance(megatron, Marker) and megatron.enabled is True else None


def _dtensor_value(config: PPOMasterConfig) -> bool:
    """The critic trains on DTensor: ppo.py's setup takes that branch whenever value's
    megatron_cfg is off."""
    return _megatron_value(config) is None and config.value.dtensor_cfg.enabled is True


def _fp8_kv_cache(config: PPOMasterConfig) -> str | None:
    vllm = _vllm(config)
    dtype = None if vllm is None else vllm.kv_cache_dtype
    return dtype if isinstance(dtype, str) and dtype.startswith("fp8") else None


# --- the runner and the config's own validators -------------------------------------------------


@mirrors_super35(
    "nemo-rl.examples.run-ppo.validate-async-ppo-config.async-ppo-generates-vllm-async-engine"
)
def async_ppo_needs_async_vllm(config: PPOMasterConfig) -> Iterator[Issue]:
    """run_ppo.py, _validate_async_ppo_config: async PPO's collector streams rollouts from vLLM's
    async engine."""
    gen = policy_generation(config)
    if _async(config) is None or gen is None:
        return  # no generation at all: ppo_needs_a_generation_config says so
    vllm = _vllm(config)
    if gen.backend != "vllm":
        key, value = "policy.generation.backend", gen.backend
    elif vllm is None or vllm.async_engine is not True:
        key, value = "policy.generation.vllm_cfg.async_engine", value_of(vllm, "async_engine")
    else:
        return
    yield Issue(
        key,
        "async PPO streams its rollouts from vLLM's async engine; the PPO runner refuses "
        "anything else",
        value=value,
        hint="policy.generation.backend: vllm and vllm_cfg.async_engine: true",
    )


@mirrors_super35("nemo-rl.examples.run-ppo.validate-async-ppo-config.async-ppo-generates-gpus-own")
def async_ppo_needs_non_colocated_generation(config: PPOMasterConfig) -> Iterator[Issue]:
    """run_ppo.py, _validate_async_ppo_config: async PPO generates while it trains, on GPUs of its
    own (the runner checks it after setup has handed the generation section to code the replay
    of the runner does not follow)."""
    if _async(config) is not None and generation_colocated(config) is True:
        yield Issue(
            "policy.generation.colocated.enabled",
            "async PPO generates while it trains, so the PPO runner refuses generation on the "
            "training GPUs",
            value=True,
            hint="set it false and give generation its own resources",
        )


@mirrors_super35(
    "nemo-rl.examples.run-ppo.validate-async-ppo-config.async-ppo-runs-without-dynamic-sampling"
)
def async_ppo_without_unsupported_features(config: PPOMasterConfig) -> Iterator[Issue]:
    """run_ppo.py, _validate_async_ppo_config: dynamic sampling, reward scaling and shaping, several
    dataloaders, NeMo Gym rollouts and FP8 KV-cache scale syncing have no async PPO path."""
    if _async(config) is None:
        return
    ppo = config.ppo
    # (key, feature, its value: the feature is on where the value is truthy)
    features: list[tuple[str, str, object]] = [
        ("ppo.use_dynamic_sampling", "dynamic sampling", ppo.use_dynamic_sampling is True),
        ("ppo.reward_scaling.enabled", "reward scaling", _on(ppo.reward_scaling, "enabled")),
        ("ppo.reward_shaping.enabled", "reward shaping", _on(ppo.reward_shaping, "enabled")),
        (
            "data.use_multiple_dataloader",
            "several dataloaders",
            _on(config.data, "use_multiple_dataloader"),
        ),
        ("env.should_use_nemo_gym", "NeMo Gym rollouts", _on(config.env, "should_use_nemo_gym")),
        (
            "policy.generation.vllm_cfg.kv_cache_dtype",
            "FP8 KV-cache scale syncing",
            _fp8_kv_cache(config),
        ),
    ]
    for key, feature, value in features:
        if value:
            yield Issue(
                key,
                f"async PPO has no path for {feature}; the PPO runner refuses it",
                value=value,
                hint="turn it off, or run PPO synchronously",
            )


# --- ppo.py's setup -----------------------------------------------------------------------------


def ppo_takes_no_refit_transport(config: PPOMasterConfig) -> Iterator[Issue]:
    """ppo.py, setup (two raises): PPO refits vLLM over its default collective path only; a sparse
    remote transport is GRPO's alone, and every other named transport is refused too."""
    gen = policy_generation(config)
    if gen is None or gen.backend != "vllm":
        return
    transport = given(gen.refit_transport, None)
    if transport is None:
        return
    sparse = transport in SPARSE_TRANSPORTS
    why = "sparse remote refit is GRPO's only" if sparse else "PPO refits over its own path"
    yield Issue(
        "policy.generation.refit_transport",
        f"{why}; PPO's setup refuses any transport ("
        + _cite(
            "nemo-rl.algorithms.ppo.setup.ppo-takes-no-sparse-remote-refit"
            if sparse
            else "nemo-rl.algorithms.ppo.setup.ppo-takes-no-refit-transport-all"
        )
        + ")",
        value=transport,
        hint="set it null",
    )


def value_has_one_training_backend(config: PPOMasterConfig) -> Iterator[Issue]:
    """ppo.py, setup, and lm_value.py, Value.__init__: the critic trains on exactly one of DTensor
    and Megatron-Core."""
    megatron, dtensor = _megatron_value(config), config.value.dtensor_cfg.enabled is True
    if megatron is not None and dtensor:
        yield Issue(
            "value.dtensor_cfg.enabled",
            "the value model trains on one back-end; with value.megatron_cfg enabled too its "
            "workers refuse to start ("
            + _cite("nemo-rl.models.value.lm-value.init.value-model-trains-one-back-end")
            + ")",
            value=True,
            hint="turn one of value.dtensor_cfg and value.megatron_cfg off",
        )
    elif megatron is None and not dtensor:
        yield Issue(
            "value.dtensor_cfg.enabled",
            "neither value.dtensor_cfg nor value.megatron_cfg is enabled, and the value model "
            "needs one to train on ("
            + _cite("nemo-rl.algorithms.ppo.setup.value-model-trains-megatron-core-dtensor")
            + ", "
            + _cite("nemo-rl.models.value.lm-value.init.value-model-has-training-back-end")
            + ")",
            value=config.value.dtensor_cfg.enabled,
            hint="enable one of them",
        )


# ppo.py, setup: the split of the cluster between non-colocated generation and training.
PPO_SPLIT = SplitRules(
    who="PPO",
    gpus_stated=_cite(
        "nemo-rl.algorithms.ppo.setup.non-colocated-generation-one-node-cluster-states"
    ),
    one_node_only=_cite(
        "nemo-rl.algorithms.ppo.setup.non-colocated-generation-one-node-cluster-takes"
    ),
    nodes_stated=_cite(
        "nemo-rl.algorithms.ppo.setup.non-colocated-generation-several-nodes-states"
    ),
    whole_nodes=_cite(
        "nemo-rl.algorithms.ppo.setup.non-colocated-generation-several-nodes-takes-whole"
    ),
    leaves_gpus=_cite("nemo-rl.algorithms.ppo.setup.non-colocated-generation-one-node-leaves"),
    leaves_nodes=_cite("nemo-rl.algorithms.ppo.setup.non-colocated-generation-leaves-nodes-train"),
)


def one_node_generation_leaves_training_gpus(config: PPOMasterConfig) -> Iterator[Issue]:
    """ppo.py, setup (three asserts): on one node, non-colocated generation takes some of its GPUs
    (a number it states, above 0) and leaves the rest to the policy and the value model."""
    gen, cluster = non_colocated_generation(config), stated_cluster(config)
    if gen is None or cluster is None or cluster[0] != 1:
        return
    yield from split_issues(gen.colocated.resources, cluster, PPO_SPLIT)


def nodes_split_between_generation_and_training(config: PPOMasterConfig) -> Iterator[Issue]:
    """ppo.py, setup (three asserts): on several nodes, non-colocated generation takes whole
    nodes (a count it states) and leaves at least one to train on."""
    gen, cluster = non_colocated_generation(config), stated_cluster(config)
    if gen is None or cluster is None or cluster[0] == 1:
        return
    yield from split_issues(gen.colocated.resources, cluster, PPO_SPLIT)


# --- ppo.py's training loops --------------------------------------------------------------------


def ppo_checkpoint_metric_names_its_source(config: PPOMasterConfig) -> Iterator[Issue]:
    """ppo.py, ppo_train (sync loop) and async_ppo_train (async loop): a ranking metric says whether
    it is a training or a validation metric."""
    rule = (
        "nemo-rl.algorithms.ppo.async-ppo-train.ranking-metric-starts-train-val-async"
        if _async(config) is not None
        else "nemo-rl.algorithms.ppo.ppo-train.ranking-metric-starts-train-val"
    )
    yield from metric_without_its_source(config.checkpointing, "PPO", _cite(rule))


def ppo_checkpoint_saved_without_its_validation_metric(
    config: PPOMasterConfig,
) -> Iterator[Issue]:
    """ppo.py, ppo_train (sync loop) and async_ppo_train (async loop): a checkpoint ranked by a
    ``val:`` metric, saved at a step that ran no validation, is left out of the top-k. Saves the
    config cannot fix (checkpoint_must_save_by's time limit, a dataset that runs out before
    max_num_steps) are not foreseen."""
    rule = (
        "nemo-rl.algorithms.ppo.async-ppo-train.val-ranking-metric-save-step-ran"
        if _async(config) is not None
        else "nemo-rl.algorithms.ppo.ppo-train.val-ranking-metric-save-step-ran"
    )
    yield from unranked_saves(config.checkpointing, config.ppo, "ppo", "PPO", _cite(rule))


@mirrors_super35("nemo-rl.algorithms.ppo.async-ppo-train.trajectories-older-one-step-bias-gae")
def stale_ppo_rollouts_bias_gae(config: PPOMasterConfig) -> Iterator[Issue]:
    """ppo.py, async_ppo_train: rollouts older than one step make GAE's value targets off-policy; 1
    is the validated age."""
    section = _async(config)
    if section is not None and section.max_trajectory_age_steps > 1:
        yield Issue(
            "ppo.async_ppo.max_trajectory_age_steps",
            "rollouts older than one step bias GAE off-policy; async PPO warns, 1 is the value "
            "it was validated with",
            value=section.max_trajectory_age_steps,
            hint="1",
        )


@mirrors_super35("nemo-rl.algorithms.ppo.async-ppo-train.trajectories-older-one-step-want-flight")
def stale_ppo_rollouts_want_in_flight_updates(config: PPOMasterConfig) -> Iterator[Issue]:
    """ppo.py, async_ppo_train: without in-flight weight updates a trajectory age above 1 buys no
    speed."""
    section = _async(config)
    if section is None or section.max_trajectory_age_steps <= 1:
        return
    if section.in_flight_weight_updates is not True:
        yield Issue(
            "ppo.async_ppo.in_flight_weight_updates",
            f"with max_trajectory_age_steps {section.max_trajectory_age_steps} async PPO warns: "
            "without in-flight weight updates an older trajectory age gains no throughput",
            value=given(section.in_flight_weight_updates, False),
            hint="set it true, or max_trajectory_age_steps 1",
        )


# --- the value model ----------------------------------------------------------------------------


def value_parallelism_divides_its_gpus(config: PPOMasterConfig) -> Iterator[Issue]:
    """lm_value.py, Value.__init__ (two raises): the value model's PP x CP x TP must divide the
    training cluster's GPUs, leaving a whole data-parallel size of at least 1."""
    megatron, dtensor = _megatron_value(config), config.value.dtensor_cfg
    if megatron is not None:
        tp, pp = megatron.tensor_model_parallel_size, megatron.pipeline_model_parallel_size
        cp = megatron.context_parallel_size
        factors = [
            ("value.megatron_cfg.tensor_model_parallel_size", tp),
            ("value.megatron_cfg.context_parallel_size", cp),
            ("value.megatron_cfg.pipeline_model_parallel_size", pp),
        ]
    elif dtensor.enabled is True:
        tp, pp = given(dtensor.tensor_parallel_size, 1), 1
        cp = given(dtensor.context_parallel_size, 1)
        factors = [
            ("value.dtensor_cfg.tensor_parallel_size", tp),
            ("value.dtensor_cfg.context_parallel_size", cp),
        ]
    else:
        return
    train = training_gpus(config)
    if train is None:
        return
    gpus, counted = train
    size = tp * pp * cp
    if size > gpus or gpus % size:
        # The largest factor names the key (TP first among equals).
        key, value = max(factors, key=lambda factor: factor[1])
        yield Issue(
            key,
            f"the value model's PP x CP x TP = {pp} x {cp} x {tp} = {size} must divide the "
            f"{gpus} GPUs it trains on ({counted}); its workers refuse to start "
            "("
            + _cite(
                "nemo-rl.models.value.lm-value.init.value-model-pp-x-cp-x-tp-fits"
                if size > gpus
                else "nemo-rl.models.value.lm-value.init.value-model-pp-x-cp-x-tp-divides"
            )
            + ")",
            value=value,
            hint=f"a PP x CP x TP that divides {gpus}",
        )


@mirrors_super35("nemo-rl.models.value.lm-value.init.dtensor-value-model-uses-v2-worker")
def dtensor_value_needs_v2(config: PPOMasterConfig) -> Iterator[Issue]:
    """lm_value.py, Value.__init__ (start) and Value.save_checkpoint: the DTensor critic exists only
    as the v2 worker."""
    if _dtensor_value(config) and config.value.dtensor_cfg.v2 is not True:
        yield Issue(
            "value.dtensor_cfg._v2",
            "the DTensor value model has only a v2 worker; it refuses to start without "
            "value.dtensor_cfg._v2 true",
            value=given(config.value.dtensor_cfg.v2, None),
            hint="set it true",
        )


@mirrors_super35("nemo-rl.models.value.lm-value.init.value-dynamic-batching-runs-one-pipeline")
def value_dynamic_batching_needs_one_pipeline_stage(config: PPOMasterConfig) -> Iterator[Issue]:
    """lm_value.py, Value.__init__: the value model batches dynamically on one pipeline stage
    only."""
    megatron = _megatron_value(config)
    if megatron is None or config.value.dynamic_batching.enabled is not True:
        return
    if megatron.pipeline_model_parallel_size != 1:
        yield Issue(
            "value.megatron_cfg.pipeline_model_parallel_size",
            "the value model refuses to start with dynamic batching on more than one pipeline "
            "stage",
            value=megatron.pipeline_model_parallel_size,
            hint="set it 1, or value.dynamic_batching.enabled false",
        )


@mirrors_super35(
    "nemo-rl.models.value.lm-value.init.value-dynamic-batching-excludes-sequence-packing",
    "nemo-rl.models.value.lm-value.init.value-sequence-packing-excludes-dynamic-batching",
)
def value_batching_excludes_packing(config: PPOMasterConfig) -> Iterator[Issue]:
    """lm_value.py, Value.__init__ (two asserts): the value model batches dynamically or packs
    sequences, not both."""
    value = config.value
    if value.dynamic_batching.enabled is True and _on(value.sequence_packing, "enabled"):
        yield Issue(
            "value.sequence_packing.enabled",
            "the value model either batches dynamically or packs sequences; with both on its "
            "workers refuse to start",
            value=True,
            hint="turn off value.dynamic_batching or value.sequence_packing",
        )


@mirrors_super35(
    "nemo-rl.models.value.workers.dtensor-value-worker-v2.init.dtensor-value-model-enabled-regression-reward"
)
def dtensor_value_needs_a_regression_head(config: PPOMasterConfig) -> Iterator[Issue]:
    """dtensor_value_worker_v2.py, DTensorValueWorkerV2Impl.__init__: the DTensor critic is built as
    a one-label regression reward model."""
    if not _dtensor_value(config):
        return
    head = config.value.reward_model_cfg
    enabled = value_of(head, "enabled")
    kind = value_of(head, "reward_model_type")
    if enabled is not True or kind != "regression":
        key = "enabled" if enabled is not True else "reward_model_type"
        yield Issue(
            f"value.reward_model_cfg.{key}",
            "the DTensor value model loads as a regression reward model; its worker refuses "
            "to start without value.reward_model_cfg enabled and of type 'regression'",
            value=enabled if key == "enabled" else kind,
            hint="enabled: true, reward_model_type: regression",
        )


@mirrors_super35(
    "nemo-rl.models.value.workers.megatron-value-worker.init.megatron-value-model-has-no-virtual"
)
def megatron_value_without_virtual_pipeline(config: PPOMasterConfig) -> Iterator[Issue]:
    """megatron_value_worker.py, MegatronValueWorkerImpl.__init__: the Megatron critic has no
    interleaved (virtual) pipeline schedule. Only model_overrides can set one: the model provider's
    default is none, and NeMo-RL has no key of its own for it."""
    megatron = _megatron_value(config)
    overrides = None if megatron is None else given(megatron.model_overrides, None)
    vpp = (overrides or {}).get("virtual_pipeline_model_parallel_size")
    if vpp not in (None, 1):
        yield Issue(
            "value.megatron_cfg.model_overrides.virtual_pipeline_model_parallel_size",
            "the Megatron value model has no virtual pipeline schedule; its worker refuses to "
            "start with one",
            value=vpp,
            hint="leave it out, or 1",
        )


@mirrors_super35(
    "nemo-rl.models.value.workers.dtensor-value-worker-v2.train.emptying-cuda-cache-few-micro-batches"
)
def value_cache_clearing_costs_time(config: PPOMasterConfig) -> Iterator[Issue]:
    """dtensor_value_worker_v2.py, DTensorValueWorkerV2Impl.train: emptying the CUDA cache every few
    micro-batches is slow; the DTensor critic warns at each training step."""
    steps = config.value.dtensor_cfg.clear_cache_every_n_steps
    if _dtensor_value(config) and is_set(steps) and steps:
        yield Issue(
            "value.dtensor_cfg.clear_cache_every_n_steps",
            f"the DTensor value model empties the CUDA cache every {steps} micro-batches and "
            f"warns that this costs much time when memory does not need it",
            value=steps,
            hint="null, unless the value model runs out of memory",
        )


def dtensor_value_optimizer_and_schedulers_build(config: PPOMasterConfig) -> Iterator[Issue]:
    """ppo.py, setup, and the value model's DTensor worker: the critic's optimizer and LR
    schedulers are built by name with their kwargs as the policy's are
    (recipekit.nemo_rl.rules.torch_optim)."""
    if _dtensor_value(config):
        yield from trained_by_dtensor("value", config.value)


PPO_ERROR_CHECKS = (
    async_ppo_needs_async_vllm,
    async_ppo_needs_non_colocated_generation,
    async_ppo_without_unsupported_features,
    ppo_takes_no_refit_transport,
    value_has_one_training_backend,
    one_node_generation_leaves_training_gpus,
    nodes_split_between_generation_and_training,
    ppo_checkpoint_metric_names_its_source,
    value_parallelism_divides_its_gpus,
    dtensor_value_needs_v2,
    value_dynamic_batching_needs_one_pipeline_stage,
    value_batching_excludes_packing,
    dtensor_value_needs_a_regression_head,
    megatron_value_without_virtual_pipeline,
    dtensor_value_optimizer_and_schedulers_build,
)
PPO_WARNING_CHECKS = (
    ppo_checkpoint_saved_without_its_validation_metric,
    misspelt_metric_check(
        "ppo", "PPO", "nemo-rl.algorithms.ppo.ppo-train.ranking-metric-one-run-collects"
    ),
    stale_ppo_rollouts_bias_gae,
    stale_ppo_rollouts_want_in_flight_updates,
    value_cache_clearing_costs_time,
)

__all__ = ["PPO_ERROR_CHECKS", "PPO_WARNING_CHECKS"]
