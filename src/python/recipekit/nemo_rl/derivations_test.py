from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from recipekit.markers import DERIVED
from recipekit.nemo_rl.derivations import RULES, RULES_BY_TARGET
from recipekit.plan import make_plan
from recipes.super3.dapo import dapo_gb200

SEQUENCE_FOLLOWERS = (
    "grpo.reward_shaping.max_response_length",
    "policy.generation.max_new_tokens",
    "policy.generation.vllm_cfg.max_model_len",
    "policy.sequence_packing.train_mb_tokens",
    "policy.sequence_packing.logprob_mb_tokens",
    "policy.dynamic_batching.train_mb_tokens",
)


def _at(config: dict, path: str) -> object:
    for part in path.split("."):
        config = config[part]
    return config


@settings(max_examples=25, deadline=None)
@given(st.integers(min_value=17, max_value=256).map(lambda n: n * 32))
def test_sequence_length_moves_everything_derived_from_it(length: int) -> None:
    # A prompt one token short of the context: super-v3 keeps a prompt as long as the limit,
    # which would leave vLLM nothing to generate (sequence_budget).
    config = make_plan(
        dapo_gb200,
        [f"policy.max_total_sequence_length={length}", f"data.max_input_seq_length={length - 1}"],
    ).framework_config
    for path in SEQUENCE_FOLLOWERS:
        assert _at(config, path) == length, path


def test_an_explicit_value_is_not_moved_by_its_source() -> None:
    config = make_plan(
        dapo_gb200,
        [
            "policy.generation.max_new_tokens=512",
            "policy.max_total_sequence_length=2048",
            "data.max_input_seq_length=1024",
        ],
    ).framework_config
    assert config["policy"]["generation"]["max_new_tokens"] == 512
    assert config["policy"]["generation"]["vllm_cfg"]["max_model_len"] == 2048


@given(st.integers(1, 64), st.sampled_from([1, 2, 4, 8, 16, 32]))
@settings(max_examples=20, deadline=None)
def test_global_batch_is_prompts_times_generations(prompts: int, generations: int) -> None:
    stage = dapo_gb200.with_values(
        {"grpo.num_prompts_per_step": prompts, "grpo.num_generations_per_prompt": generations}
    )
    from recipekit.nemo_rl.derivations import derive

    config, derived = derive(stage.config, stage.hardware, RULES)
    assert config.policy.train_global_batch_size == prompts * generations
    assert "policy.train_global_batch_size" in derived


def test_make_sequence_length_divisible_by_follows_the_training_backend() -> None:
    config = make_plan(
        dapo_gb200,
        [
            "policy.megatron_cfg.tensor_model_parallel_size=2",
            "policy.megatron_cfg.expert_tensor_parallel_size=2",
            "policy.megatron_cfg.context_parallel_size=8",
        ],
    ).framework_config
    assert config["policy"]["make_sequence_length_divisible_by"] == 2


def test_rules_are_in_dependency_order_and_unique() -> None:
    targets = [r.target for r in RULES]
    assert len(targets) == len(set(targets)) == len(RULES_BY_TARGET)
    for i, rule in enumerate(RULES):
        later = set(targets[i + 1 :])
        assert not later & set(rule.sources), rule.target


def test_cluster_follows_the_hardware() -> None:
    assert dapo_gb200.config.cluster.num_nodes is DERIVED
    config = make_plan(dapo_gb200).framework_config
    assert config["cluster"] == {"gpus_per_node": 4, "num_nodes": 5}
