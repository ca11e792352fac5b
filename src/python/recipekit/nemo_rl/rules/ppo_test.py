"""PPO's rules (``examples/run_ppo.py``, super-v3.5-posttraining) on the stages ``recipekit
import-yaml`` makes of NeMo-RL's own ppo_math_1B.yaml (DTensor policy and value model) and
ppo_math_1B_megatron.yaml (both on Megatron-Core): a value that breaks each is refused at its
key, citing the upstream line.

The importer keeps only their ``mcore_generation_config`` untyped (it has super-v3's shape,
which main's schema refuses, and vLLM never reads it); the rest of the generation section is
typed as the compiled config has it."""

# The catalogued checks these tests break, which the rule catalogue's meta-test finds by name:
# runner_refusals (its runner_issues: run_ppo.py's main and PPO's setup, replayed),
# config_validators_hold (the config's validators, replayed),
# async_ppo_needs_async_vllm,
# async_ppo_needs_importance_sampling, async_ppo_without_a_forced_ratio,
# async_ppo_needs_non_colocated_generation, async_ppo_has_no_epoch_limit,
# async_ppo_without_unsupported_features, ppo_takes_no_refit_transport,
# critic_warmup_without_constant_checkpoint_structure,
# megatron_value_context_parallel_needs_packing, value_has_one_training_backend,
# dtensor_value_without_sequence_packing, dtensor_value_without_context_parallel,
# dtensor_value_without_dynamic_batching, batch_multiplier_needs_dynamic_sampling,
# forced_ratio_needs_one_update_per_step, non_colocated_generation_needs_vllm,
# one_node_generation_leaves_training_gpus, nodes_split_between_generation_and_training,
# ppo_generates_with_vllm_or_sglang, runner_refusals,
# ppo_checkpoint_metric_names_its_source, ppo_checkpoint_saved_without_its_validation_metric,
# stale_ppo_rollouts_bias_gae, stale_ppo_rollouts_want_in_flight_updates,
# value_parallelism_divides_its_gpus, dtensor_value_needs_v2,
# value_dynamic_batching_needs_one_pipeline_stage, value_batching_excludes_packing,
# dtensor_value_needs_a_regression_head, megatron_value_without_virtual_pipeline,
# value_cache_clearing_costs_time.

from __future__ import annotations

from pathlib import Path

import attrs
import pytest

from recipekit.errors import RecipeError
from recipekit.hardware import Hardware
from recipekit.importers.nemo_rl_yaml import ImportedRecipe, import_yaml
from recipekit.loading import load_object
from recipekit.markers import UNSET
from recipekit.nemo_rl.algorithms import NEMO_RL_SUPER35_PPO
from recipekit.nemo_rl.rule_lines import where
from recipekit.nemo_rl.rules import ppo
from recipekit.nemo_rl.rules.citation import cite_super35
from recipekit.nemo_rl.rules.conftest import plan_warnings
from recipekit.plan import make_plan
from recipekit.stage import Stage

CONFIGS = "nemo-rl/main/examples/configs"
NON_COLOCATED = (
    "policy.generation.colocated.enabled=false",
    "cluster.gpus_per_node=8",
    "policy.generation.colocated.resources.gpus_per_node=4",
)
# Async PPO with everything the runner asks of it.
ASYNC = (
    "ppo.max_num_epochs=-1",
    "ppo.async_ppo.enabled=true",
    "policy.generation.vllm_cfg.async_engine=true",
    "loss_fn.use_importance_sampling_correction=true",
    "ppo.reward_shaping.enabled=false",
    "ppo.reward_scaling.enabled=false",
    *NON_COLOCATED,
)
# The upstream examples' one warning: they save every 10 steps and validate every 20.
UNRANKED_SAVE = "checkpointing.save_period = 10: PPO saves a checkpoint at step 10"


def _imported(reference_dir: Path, tmp: Path, name: str) -> ImportedRecipe:
    module = tmp / name.replace(".yaml", ".py")
    module.write_text(import_yaml(reference_dir / CONFIGS / name).source)
    recipe = load_object(f"{module}:recipe")
    assert isinstance(recipe, ImportedRecipe)
    return recipe


def _typed(recipe: ImportedRecipe) -> Stage:
    assert [k for k in recipe.untyped_keys if k.startswith("policy.generation")] == [
        "policy.generation.mcore_generation_config"
    ]
    return recipe.stage


@pytest.fixture(scope="module")
def imported(reference_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> ImportedRecipe:
    return _imported(reference_dir, tmp_path_factory.mktemp("ppo"), "ppo_math_1B.yaml")


@pytest.fixture(scope="module")
def dtensor(imported: ImportedRecipe) -> Stage:
    return _typed(imported)


@pytest.fixture(scope="module")
def megatron(reference_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Stage:
    tmp = tmp_path_factory.mktemp("ppo_megatron")
    return _typed(_imported(reference_dir, tmp, "ppo_math_1B_megatron.yaml"))


def _errors(stage: Stage, *overrides: str) -> list[str]:
    with pytest.raises(RecipeError) as exc:
        make_plan(stage, overrides)
    return [issue.render() for issue in exc.value.issues]


def _refused_at(stage: Stage, overrides: tuple[str, ...], key: str, cited: str) -> list[str]:
    """Planning with these overrides raises an error at ``key`` citing ``cited``
    (``file:line``); those errors."""
    errors = _errors(stage, *overrides)
    found = [e for e in errors if e.startswith(key) and cited in e and "@ super-v3.5" in e]
    assert found, errors
    return found


_warnings = plan_warnings


# --- the upstream examples ----------------------------------------------------------------------


def test_the_upstream_examples_plan_with_ppos_rules(dtensor: Stage, megatron: Stage) -> None:
    for stage in (dtensor, megatron):
        assert stage.framework is NEMO_RL_SUPER35_PPO
        [warning] = _warnings(stage)
        assert (
            warning.startswith(UNRANKED_SAVE)
            and where("nemo-rl.algorithms.ppo.ppo-train.val-ranking-metric-save-step-ran")
            in warning
        )
    assert ppo.ppo_checkpoint_saved_without_its_validation_metric in (
        NEMO_RL_SUPER35_PPO.warning_checks
    )
    assert ppo.value_has_one_training_backend in NEMO_RL_SUPER35_PPO.error_checks


def test_ppo_needs_a_generation_section(imported: ImportedRecipe) -> None:
    [error] = _errors(imported.stage.with_values({"policy.generation": UNSET}))
    assert (
        error.startswith("policy.generation: ")
        and where("nemo-rl.examples.run-ppo.main.ppo-needs-generation-section") in error
    )


# --- the runner and the config's validators ---------------------------------------------------


def test_a_warmup_lead_covers_the_trajectory_age(dtensor: Stage) -> None:
    lead = (
        "ppo.async_ppo.max_trajectory_age_steps=3",
        "ppo.async_ppo.warmup_generation_lead_steps=2",
    )
    _refused_at(
        dtensor,
        lead,
        "ppo.async_ppo.warmup_generation_lead_steps = 2",
        where(
            "nemo-rl.algorithms.ppo.async-ppo-config.validate-settings.warm-up-generation-lead-least-trajectory"
        ),
    )
    make_plan(dtensor, ["ppo.async_ppo.warmup_generation_lead_steps=3", lead[0]])


def test_an_async_warmup_lead_needs_a_critic_warmup(dtensor: Stage) -> None:
    lead = "ppo.async_ppo.warmup_generation_lead_steps=2"
    key = "ppo.async_ppo.warmup_generation_lead_steps"
    _refused_at(
        dtensor,
        (*ASYNC, lead),
        key,
        where(
            "nemo-rl.algorithms.ppo.ppo-config.validate-async-warmup-settings.async-warm-up-generation-lead-needs-critic"
        ),
    )
    make_plan(dtensor, (*ASYNC, lead, "ppo.policy_training_start_step=4"))


def test_async_ppo_plans_with_no_epoch_limit_and_refuses_one(dtensor: Stage) -> None:
    make_plan(dtensor, ASYNC)
    [error] = _errors(dtensor, *ASYNC, "ppo.max_num_epochs=100000")
    assert (
        error.startswith("ppo.max_num_epochs = 100000: ")
        and where("nemo-rl.examples.run-ppo.validate-async-ppo-config.async-ppo-has-no-epoch-limit")
        in error
    )


@pytest.mark.parametrize(
    ("overrides", "key", "rule"),
    [
        (
            ("policy.generation.vllm_cfg.async_engine=false",),
            "policy.generation.vllm_cfg",
            "nemo-rl.examples.run-ppo.validate-async-ppo-config.async-ppo-generates-vllm-async-engine",
        ),
        (
            ("loss_fn.use_importance_sampling_correction=false",),
            "loss_fn.use_importance",
            "nemo-rl.examples.run-ppo.validate-async-ppo-config.async-ppo-corrects-off-policy-rollouts",
        ),
        (
            ("loss_fn.force_on_policy_ratio=true",),
            "loss_fn.force_on_policy_ratio",
            "nemo-rl.examples.run-ppo.validate-async-ppo-config.async-ppo-does-not-force-ppo",
        ),
        (
            ("policy.generation.colocated.enabled=true",),
            "policy.generation.colocated.enabled",
            "nemo-rl.examples.run-ppo.validate-async-ppo-config.async-ppo-generates-gpus-own",
        ),
        (
            ("ppo.use_dynamic_sampling=true",),
            "ppo.use_dynamic_sampling",
            "nemo-rl.examples.run-ppo.validate-async-ppo-config.async-ppo-runs-without-dynamic-sampling",
        ),
        (
            ("ppo.reward_scaling.enabled=true",),
            "ppo.reward_scaling.enabled",
            "nemo-rl.examples.run-ppo.validate-async-ppo-config.async-ppo-runs-without-dynamic-sampling",
        ),
        (
            ("ppo.reward_shaping.enabled=true",),
            "ppo.reward_shaping.enabled",
            "nemo-rl.examples.run-ppo.validate-async-ppo-config.async-ppo-runs-without-dynamic-sampling",
        ),
        (
            ("data.use_multiple_dataloader=true",),
            "data.use_multiple_dataloader",
            "nemo-rl.examples.run-ppo.validate-async-ppo-config.async-ppo-runs-without-dynamic-sampling",
        ),
        (
            ("env.should_use_nemo_gym=true",),
            "env.should_use_nemo_gym",
            "nemo-rl.examples.run-ppo.validate-async-ppo-config.async-ppo-runs-without-dynamic-sampling",
        ),
        (
            ("policy.generation.vllm_cfg.kv_cache_dtype=fp8",),
            "policy.generation.vllm_cfg.kv_cache_dtype",
            "nemo-rl.examples.run-ppo.validate-async-ppo-config.async-ppo-runs-without-dynamic-sampling",
        ),
    ],
)
def test_the_async_runner_refuses_what_async_ppo_lacks(
    dtensor: Stage, overrides: tuple[str, ...], key: str, rule: str
) -> None:
    _refused_at(dtensor, (*ASYNC, *overrides), key, where(rule))


def test_async_ppo_needs_vllm(dtensor: Stage) -> None:
    sglang = ("policy.generation.backend=sglang",)
    key = "policy.generation.backend = 'sglang'"
    _refused_at(
        dtensor,
        (*ASYNC, *sglang),
        key,
        where(
            "nemo-rl.examples.run-ppo.validate-async-ppo-config.async-ppo-generates-vllm-async-engine"
        ),
    )


# --- ppo.py's setup -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("transport", "rule"),
    [
        ("vllm_zmq_sparse", "nemo-rl.algorithms.ppo.setup.ppo-takes-no-sparse-remote-refit"),
        ("nccl_reshard", "nemo-rl.algorithms.ppo.setup.ppo-takes-no-refit-transport-all"),
    ],
)
def test_ppo_takes_no_refit_transport(dtensor: Stage, transport: str, rule: str) -> None:
    setting = f"policy.generation.refit_transport={transport}"
    _refused_at(dtensor, (setting,), "policy.generation.refit_transport", where(rule))
    make_plan(dtensor, ["policy.generation.refit_transport=null"])


def test_a_critic_warmup_excludes_a_constant_checkpoint_structure(megatron: Stage) -> None:
    warmup = (
        "ppo.policy_training_start_step=5",
        "policy.megatron_cfg.checkpoint.ckpt_assume_constant_structure=true",
    )
    # The replay of PPO's setup names the first key of the failing test the config sets.
    key = "ppo.policy_training_start_step = 5"
    _refused_at(
        megatron,
        warmup,
        key,
        where("nemo-rl.algorithms.ppo.setup.critic-warm-up-optimizer-checkpoints-excludes"),
    )
    make_plan(megatron, [*warmup, "checkpointing.save_optimizer=false"])
    make_plan(megatron, [warmup[1]])  # no warm-up


def test_a_megatron_value_model_at_cp_2_packs_sequences(megatron: Stage) -> None:
    cp = ("value.megatron_cfg.context_parallel_size=2", "cluster.gpus_per_node=2")
    _refused_at(
        megatron,
        cp,
        "value.sequence_packing.enabled = False",
        where("nemo-rl.algorithms.ppo.setup.megatron-value-model-cp-1-packs"),
    )
    make_plan(megatron, [*cp, "value.sequence_packing.enabled=true"])


@pytest.mark.parametrize(
    ("stage_name", "setting", "cited"),
    [
        (
            "dtensor",
            "value.megatron_cfg.enabled=true",
            where("nemo-rl.models.value.lm-value.init.value-model-trains-one-back-end"),
        ),
        (
            "dtensor",
            "value.dtensor_cfg.enabled=false",
            where("nemo-rl.algorithms.ppo.setup.value-model-trains-megatron-core-dtensor"),
        ),
        (
            "megatron",
            "value.megatron_cfg.enabled=false",
            where("nemo-rl.algorithms.ppo.setup.value-model-trains-megatron-core-dtensor"),
        ),
    ],
)
def test_the_value_model_trains_on_one_back_end(
    request: pytest.FixtureRequest, stage_name: str, setting: str, cited: str
) -> None:
    stage = request.getfixturevalue(stage_name)
    _refused_at(stage, (setting,), "value.dtensor_cfg.enabled", cited)


@pytest.mark.parametrize(
    ("setting", "key", "rule"),
    [
        (
            "value.sequence_packing.enabled=true",
            "value.sequence_packing.enabled",
            "nemo-rl.algorithms.ppo.setup.dtensor-value-model-does-not-pack",
        ),
        (
            "value.dtensor_cfg.context_parallel_size=2",
            "value.dtensor_cfg.context_parallel_size",
            "nemo-rl.algorithms.ppo.setup.dtensor-value-model-runs-cp",
        ),
        (
            "value.dynamic_batching.enabled=true",
            "value.dynamic_batching.enabled",
            "nemo-rl.algorithms.ppo.setup.dtensor-value-model-does-not-batch",
        ),
    ],
)
def test_the_dtensor_value_model_refuses_what_it_lacks(
    dtensor: Stage, megatron: Stage, setting: str, key: str, rule: str
) -> None:
    _refused_at(dtensor, (setting, "cluster.gpus_per_node=2"), key, where(rule))
    make_plan(megatron, [setting])  # the Megatron value model reads no DTensor limits


def test_a_batch_multiplier_needs_dynamic_sampling(dtensor: Stage) -> None:
    _refused_at(
        dtensor,
        ("ppo.batch_multiplier=2",),
        "ppo.batch_multiplier = 2",
        where("nemo-rl.algorithms.ppo.setup.batch-multiplier-other-1-needs-dynamic"),
    )
    make_plan(dtensor, ["ppo.batch_multiplier=2", "ppo.use_dynamic_sampling=true"])


def test_a_forced_ratio_trains_each_steps_rollouts_as_one_batch(dtensor: Stage) -> None:
    forced = "loss_fn.force_on_policy_ratio=true"
    make_plan(dtensor, [forced])  # 32 prompts x 16 generations = 512, the global batch
    [error] = _refused_at(
        dtensor,
        (forced, "ppo.num_prompts_per_step=16"),
        "ppo.num_prompts_per_step = 16",
        where("nemo-rl.algorithms.ppo.setup.forced-policy-ratio-trains-each-step"),
    )
    assert "ppo.num_generations_per_prompt=16, policy.train_global_batch_size=512" in error


def test_non_colocated_generation_is_vllm(dtensor: Stage) -> None:
    sglang = (*NON_COLOCATED, "policy.generation.backend=sglang")
    _refused_at(
        dtensor,
        sglang,
        "policy.generation.backend = 'sglang'",
        where("nemo-rl.algorithms.ppo.setup.non-colocated-ppo-generation-runs-vllm"),
    )
    # Colocated SGLang passes PPO's own rule, but PPO never tells the v2 DTensor worker the
    # engines' GPU count its first refit streams by (only GRPO's setup does).
    _refused_at(
        dtensor,
        ("policy.generation.backend=sglang",),
        "policy.generation.backend = 'sglang'",
        where(
            "nemo-rl.automodel.worker.stream-weights-via-http.colocated-sglang-refit-needs-engines-gpu"
        ),
    )
    make_plan(dtensor, NON_COLOCATED)


def test_ppo_generates_with_vllm_or_sglang(dtensor: Stage) -> None:
    megatron = ("policy.generation.backend=megatron",)
    _refused_at(
        dtensor,
        megatron,
        "policy.generation.backend = 'megatron'",
        where("nemo-rl.algorithms.ppo.setup.ppo-generates-vllm-sglang"),
    )


@pytest.mark.parametrize(
    ("setting", "key", "rule"),
    [
        (
            "policy.generation.colocated.resources.gpus_per_node=null",
            "gpus_per_node = None",
            "nemo-rl.algorithms.ppo.setup.non-colocated-generation-one-node-cluster-states",
        ),
        (
            "policy.generation.colocated.resources.num_nodes=2",
            "num_nodes = 2",
            "nemo-rl.algorithms.ppo.setup.non-colocated-generation-one-node-cluster-takes",
        ),
        (
            "policy.generation.colocated.resources.gpus_per_node=8",
            "gpus_per_node = 8",
            "nemo-rl.algorithms.ppo.setup.non-colocated-generation-one-node-leaves",
        ),
    ],
)
def test_one_node_generation_leaves_training_gpus(
    dtensor: Stage, setting: str, key: str, rule: str
) -> None:
    resources = "policy.generation.colocated.resources."
    _refused_at(dtensor, (*NON_COLOCATED, setting), resources + key, where(rule))


@pytest.mark.parametrize(
    ("settings", "key", "rule"),
    [
        (
            ("resources.num_nodes=null",),
            "num_nodes = None",
            "nemo-rl.algorithms.ppo.setup.non-colocated-generation-several-nodes-states",
        ),
        (
            ("resources.num_nodes=1", "resources.gpus_per_node=4"),
            "gpus_per_node = 4",
            "nemo-rl.algorithms.ppo.setup.non-colocated-generation-several-nodes-takes-whole",
        ),
        (
            ("resources.num_nodes=2",),
            "num_nodes = 2",
            "nemo-rl.algorithms.ppo.setup.non-colocated-generation-leaves-nodes-train",
        ),
    ],
)
def test_nodes_split_between_generation_and_training(
    dtensor: Stage, settings: tuple[str, ...], key: str, rule: str
) -> None:
    two_nodes = dtensor.with_values(hardware=Hardware(dtensor.hardware.node, 2))
    cluster = (
        "policy.generation.colocated.enabled=false",
        "cluster.num_nodes=2",
        "cluster.gpus_per_node=8",
        "policy.generation.colocated.resources.gpus_per_node=8",
    )
    overrides = (*cluster, *(f"policy.generation.colocated.{s}" for s in settings))
    resources = "policy.generation.colocated.resources."
    _refused_at(two_nodes, overrides, resources + key, where(rule))
    make_plan(two_nodes, [*cluster, "policy.generation.colocated.resources.num_nodes=1"])


@pytest.mark.parametrize(
    ("stage_name", "settings", "key", "rule"),
    [
        (
            "dtensor",
            ("policy.generation.vllm_cfg.precision=fp8",),
            "loss_fn.use_importance_sampling_correction",
            "nemo-rl.algorithms.ppo.setup.fp8-vllm-generation-needs-importance-sampling",
        ),
        (
            "megatron",
            ("policy.generation.vllm_cfg.kv_cache_dtype=fp8",),
            "policy.generation.vllm_cfg.precision = 'bfloat16'",
            "nemo-rl.algorithms.ppo.setup.fp8-kv-cache-comes-fp8-weights",
        ),
        (
            "dtensor",
            (
                "policy.generation.vllm_cfg.kv_cache_dtype=fp8_e4m3",
                "policy.generation.vllm_cfg.precision=fp8",
                "loss_fn.use_importance_sampling_correction=true",
            ),
            "policy.dtensor_cfg.enabled",
            "nemo-rl.algorithms.ppo.setup.fp8-kv-cache-needs-policy-off",
        ),
        (
            "megatron",
            (
                "policy.generation.vllm_cfg.kv_cache_dtype=fp8",
                "policy.generation.vllm_cfg.async_engine=true",
            ),
            "policy.generation.vllm_cfg.async_engine",
            "nemo-rl.algorithms.ppo.setup.fp8-kv-cache-excludes-asynchronous-rollouts",
        ),
        (
            "megatron",
            (
                "policy.generation.vllm_cfg.kv_cache_dtype=fp8",
                "policy.megatron_cfg.pipeline_model_parallel_size=2",
                "cluster.gpus_per_node=2",
            ),
            "policy.megatron_cfg.pipeline_model_parallel_size = 2",
            "nemo-rl.algorithms.ppo.setup.fp8-kv-cache-needs-one-pipeline",
        ),
    ],
)
def test_fp8_generation_rules(
    request: pytest.FixtureRequest,
    stage_name: str,
    settings: tuple[str, ...],
    key: str,
    rule: str,
) -> None:
    stage = request.getfixturevalue(stage_name)
    _refused_at(stage, settings, key, where(rule))


def test_an_fp8_kv_cache_plans_with_everything_it_needs(megatron: Stage) -> None:
    make_plan(
        megatron,
        [
            "policy.generation.vllm_cfg.kv_cache_dtype=fp8",
            "policy.generation.vllm_cfg.precision=fp8",
            "loss_fn.use_importance_sampling_correction=true",
        ],
    )


# --- the training loops -------------------------------------------------------------------------


def test_ppos_advantage_estimator_is_one_its_loop_builds(dtensor: Stage) -> None:
    # The schema holds it, with the names read from ppo.py's _create_advantage_estimator.
    (error,) = _refused_at(
        dtensor, ("ppo.adv_estimator.name=grpo",), "ppo.adv_estimator.name", "ppo.py:"
    )
    assert "accepts 'gae', 'raw_reward'" in error
    make_plan(dtensor, ["ppo.adv_estimator.name=raw_reward"])


def test_skipped_reference_logprobs_leave_no_kl_penalty(dtensor: Stage) -> None:
    kl = "loss_fn.reference_policy_kl_penalty=0.01"
    # The replay of PPO's training loops names the key the failing test reads last.
    key = "loss_fn.reference_policy_kl_penalty = 0.01"
    _refused_at(
        dtensor,
        (kl,),
        key,
        where("nemo-rl.algorithms.ppo.ppo-train.skipped-reference-logprobs-leave-no-kl"),
    )
    _refused_at(
        dtensor,
        (*ASYNC, kl),
        key,
        where("nemo-rl.algorithms.ppo.async-ppo-train.skipped-reference-logprobs-leave-no-kl"),
    )
    make_plan(dtensor, [kl, "ppo.skip_reference_policy_logprobs_calculation=false"])


def test_a_ranking_metric_names_its_source(dtensor: Stage) -> None:
    metric = "checkpointing.metric_name=accuracy"
    _refused_at(
        dtensor,
        (metric,),
        "checkpointing.metric_name = 'accuracy'",
        where("nemo-rl.algorithms.ppo.ppo-train.ranking-metric-starts-train-val"),
    )
    _refused_at(
        dtensor,
        (*ASYNC, metric),
        "checkpointing.metric_name",
        where("nemo-rl.algorithms.ppo.async-ppo-train.ranking-metric-starts-train-val-async"),
    )


def test_a_save_without_validation_is_not_ranked(dtensor: Stage) -> None:
    assert _warnings(dtensor, "checkpointing.save_period=20") == []
    [warning] = _warnings(dtensor, "checkpointing.save_period=20", "ppo.val_period=0")
    assert warning.startswith("checkpointing.save_period = 20") and "val_period <= 0" in warning
    assert _warnings(dtensor, "checkpointing.metric_name=train:loss") == []
    # The async loop warns at its own line.
    config = dtensor.with_values({"ppo.async_ppo.enabled": True}).config
    [issue] = ppo.ppo_checkpoint_saved_without_its_validation_metric(config)
    assert (
        where("nemo-rl.algorithms.ppo.async-ppo-train.val-ranking-metric-save-step-ran")
        in issue.message
    )


ASYNC_PPO_TRAIN = "nemo-rl.algorithms.ppo.async-ppo-train.trajectories-older-one-step-"


def test_async_ppo_warns_about_stale_rollouts(dtensor: Stage) -> None:
    stale = {"ppo.async_ppo.enabled": True, "ppo.async_ppo.max_trajectory_age_steps": 2}
    config = dtensor.with_values(stale).config
    [bias] = ppo.stale_ppo_rollouts_bias_gae(config)
    assert (
        bias.path == "ppo.async_ppo.max_trajectory_age_steps"
        and where(f"{ASYNC_PPO_TRAIN}bias-gae") in bias.message
    )
    [in_flight] = ppo.stale_ppo_rollouts_want_in_flight_updates(config)
    assert in_flight.path == "ppo.async_ppo.in_flight_weight_updates"
    assert where(f"{ASYNC_PPO_TRAIN}want-flight") in in_flight.message
    updated = dtensor.with_values({**stale, "ppo.async_ppo.in_flight_weight_updates": True})
    assert list(ppo.stale_ppo_rollouts_want_in_flight_updates(updated.config)) == []
    fresh = dtensor.with_values({"ppo.async_ppo.enabled": True}).config
    assert list(ppo.stale_ppo_rollouts_bias_gae(fresh)) == []


# --- the value model ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("stage_name", "settings", "key", "rule"),
    [
        (
            "dtensor",
            ("value.dtensor_cfg.tensor_parallel_size=2",),
            "value.dtensor_cfg",
            "nemo-rl.models.value.lm-value.init.value-model-pp-x-cp-x-tp-fits",
        ),
        (
            "dtensor",
            ("value.dtensor_cfg.tensor_parallel_size=2", "cluster.gpus_per_node=3"),
            "value.dtensor_cfg",
            "nemo-rl.models.value.lm-value.init.value-model-pp-x-cp-x-tp-divides",
        ),
        (
            "megatron",
            ("value.megatron_cfg.tensor_model_parallel_size=2",),
            "value.megatron_cfg.tensor_model_parallel_size = 2",
            "nemo-rl.models.value.lm-value.init.value-model-pp-x-cp-x-tp-fits",
        ),
        (
            "megatron",
            ("value.megatron_cfg.pipeline_model_parallel_size=2", "cluster.gpus_per_node=3"),
            "value.megatron_cfg.pipeline_model_parallel_size = 2",
            "nemo-rl.models.value.lm-value.init.value-model-pp-x-cp-x-tp-divides",
        ),
        # Non-colocated, the value model trains on the 4 GPUs generation leaves.
        (
            "dtensor",
            (*NON_COLOCATED, "value.dtensor_cfg.tensor_parallel_size=8"),
            "value.dtensor_cfg",
            "nemo-rl.models.value.lm-value.init.value-model-pp-x-cp-x-tp-fits",
        ),
    ],
)
def test_the_value_models_parallelism_divides_its_gpus(
    request: pytest.FixtureRequest,
    stage_name: str,
    settings: tuple[str, ...],
    key: str,
    rule: str,
) -> None:
    stage = request.getfixturevalue(stage_name)
    _refused_at(stage, settings, key, where(rule))


def test_the_value_model_takes_the_gpus_of_its_cluster(dtensor: Stage) -> None:
    make_plan(dtensor, ["value.dtensor_cfg.tensor_parallel_size=2", "cluster.gpus_per_node=4"])
    make_plan(dtensor, [*NON_COLOCATED, "value.dtensor_cfg.tensor_parallel_size=4"])


def test_a_dtensor_value_model_needs_the_v2_worker(dtensor: Stage, megatron: Stage) -> None:
    v1 = ("value.dtensor_cfg._v2=false",)
    _refused_at(
        dtensor,
        v1,
        "value.dtensor_cfg._v2 = False",
        where("nemo-rl.models.value.lm-value.init.dtensor-value-model-uses-v2-worker"),
    )
    make_plan(megatron, ["value.dtensor_cfg._v2=false"])


def test_value_dynamic_batching_on_one_pipeline_stage(megatron: Stage) -> None:
    # Qwen2.5-1.5B's 28 layers on the card, which the critic's two stages split.
    stage = attrs.evolve(megatron, model=attrs.evolve(megatron.model, num_layers=28))
    batching = (
        "value.dynamic_batching.enabled=true",
        "value.megatron_cfg.pipeline_model_parallel_size=2",
        "cluster.gpus_per_node=2",
    )
    key = "value.megatron_cfg.pipeline_model_parallel_size = 2"
    _refused_at(
        stage,
        batching,
        key,
        where("nemo-rl.models.value.lm-value.init.value-dynamic-batching-runs-one-pipeline"),
    )
    make_plan(stage, batching[1:])


def test_value_dynamic_batching_excludes_packing(megatron: Stage) -> None:
    both = ("value.dynamic_batching.enabled=true", "value.sequence_packing.enabled=true")
    _refused_at(
        megatron,
        both,
        "value.sequence_packing.enabled",
        cite_super35(
            "nemo-rl.models.value.lm-value.init.value-dynamic-batching-excludes-sequence-packing",
            "nemo-rl.models.value.lm-value.init.value-sequence-packing-excludes-dynamic-batching",
        ),
    )
    make_plan(megatron, [both[0]])
    make_plan(megatron, [both[1]])


@pytest.mark.parametrize(
    ("setting", "key"),
    [
        ("value.reward_model_cfg.enabled=false", "value.reward_model_cfg.enabled = False"),
        (
            "value.reward_model_cfg.reward_model_type=bradley_terry",
            "value.reward_model_cfg.reward_model_type = 'bradley_terry'",
        ),
    ],
)
def test_a_dtensor_value_model_is_a_regression_head(dtensor: Stage, setting: str, key: str) -> None:
    _refused_at(
        dtensor,
        (setting,),
        key,
        where(
            "nemo-rl.models.value.workers.dtensor-value-worker-v2.init.dtensor-value-model-enabled-regression-reward"
        ),
    )


def test_the_megatron_value_model_needs_no_regression_head(megatron: Stage) -> None:
    # ppo_math_1B_megatron.yaml turns it off: only the DTensor worker reads it.
    assert megatron.config.value.reward_model_cfg.enabled is False
    make_plan(megatron)


def test_a_megatron_value_model_has_no_virtual_pipeline(megatron: Stage) -> None:
    vpp = "value.megatron_cfg.model_overrides={virtual_pipeline_model_parallel_size: 2}"
    key = "value.megatron_cfg.model_overrides.virtual_pipeline_model_parallel_size = 2"
    _refused_at(
        megatron,
        (vpp,),
        key,
        where(
            "nemo-rl.models.value.workers.megatron-value-worker.init.megatron-value-model-has-no-virtual"
        ),
    )
    make_plan(megatron, [vpp.replace("size: 2", "size: 1")])


def test_clearing_the_value_models_cache_warns(dtensor: Stage, megatron: Stage) -> None:
    clear = "value.dtensor_cfg.clear_cache_every_n_steps=4"
    warnings = _warnings(dtensor, clear)
    [warning] = [w for w in warnings if w.startswith("value.dtensor_cfg.clear_cache")]
    assert (
        where(
            "nemo-rl.models.value.workers.dtensor-value-worker-v2.train.emptying-cuda-cache-few-micro-batches"
        )
        in warning
    )
    assert not [w for w in _warnings(megatron, clear) if "clear_cache" in w]


def test_the_policy_layout_holds_on_the_gpus_ppo_trains_on(megatron: Stage) -> None:
    # One node of 8 GPUs, 4 of them generating: TP 8 divides the cluster but not the 4 GPUs
    # left for training, which NeMo-RL's training cluster holds (generation_split.training_gpus).
    tp = "policy.megatron_cfg.tensor_model_parallel_size"
    errors = _errors(megatron, *NON_COLOCATED, f"{tp}=8")
    ours = [e for e in errors if e.startswith("policy.megatron_cfg") and "8 x 1 x 1" in e]
    assert ours and "the 4 GPUs it trains on" in ours[0], errors
    make_plan(megatron, (*NON_COLOCATED, f"{tp}=4"))


def test_the_critics_layout_holds_for_the_policys_model(megatron: Stage) -> None:
    # The critic is built from the policy's model (value.model_name is policy.model_name), so
    # the stage's model card describes it: PP 4 divides the 4 GPUs (lm_value.py's own rule
    # holds) but not the card's 30 layers, which Megatron-Core refuses when it builds the
    # critic. The policy (PP 1) is untouched.
    card = attrs.evolve(megatron.model, num_layers=30)
    stage = attrs.evolve(megatron, model=card)
    pp = "value.megatron_cfg.pipeline_model_parallel_size"
    errors = _errors(stage, "cluster.gpus_per_node=4", f"{pp}=4")
    [error] = [e for e in errors if e.startswith(f"{pp} = 4")]
    assert "30 layers" in error, errors
    assert not [e for e in errors if e.startswith("policy.")], errors
    make_plan(stage, ("cluster.gpus_per_node=4", f"{pp}=2"))
