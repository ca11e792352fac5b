"""The generated modules are what tools/generate_vllm_kwargs.py writes from the pinned sources
today, and what they hold answers the questions the vllm_kwargs rules ask."""

from __future__ import annotations

from pathlib import Path

from recipekit.vllm.generated import engine_args_0_25_1 as engine
from recipekit.vllm.generated import nemo_rl_workers
from tools import generate_vllm_kwargs as generator


def test_each_generated_module_is_what_the_tool_writes(reference_dir: Path) -> None:
    for path, text in generator.generate(reference_dir).items():
        committed = (generator.CHECKOUT / path).read_text()
        assert committed == text, f"{path} is stale: run python3 {generator.TOOL}"


def test_a_config_field_default_gives_its_bounds() -> None:
    # gpu_memory_utilization: float = CacheConfig.gpu_memory_utilization, whose pydantic
    # Field(gt=0, le=1) applies; max_num_seqs (default None) is SchedulerConfig's, passed on.
    text, bounds, _, where = engine.ENGINE_ARGS["gpu_memory_utilization"]
    assert (text, bounds) == ("float", {"gt": 0.0, "le": 1.0})
    assert where.startswith("vllm/config/cache.py:")
    assert engine.ENGINE_ARGS["max_num_seqs"][:2] == ("int | None", {"ge": 1.0})
    assert engine.ENGINE_ARGS["mamba_ssm_cache_dtype"][0].startswith("Literal['auto', 'float32'")
    assert "enable_log_requests" in engine.ASYNC_ENGINE_ARGS
    assert "chat_template" in engine.LLM_PARAMETERS and "swap_space" in engine.LLM_DROPPED


def test_each_worker_names_what_it_passes_and_replaces() -> None:
    for branch in ("super-v3", "super-v3.5-posttraining"):
        worker = nemo_rl_workers.WORKERS[branch]
        assert worker["passed"]["gpu_memory_utilization"][0] == (
            "policy.generation.vllm_cfg.gpu_memory_utilization"
        )
        assert worker["passed"]["trust_remote_code"][0] == ""
        # Set on every path (super-v3: in both branches of an if).
        assert worker["replaced"]["distributed_executor_backend"][0] == ""
        # Writes that keep the user's value (speculation switched off, hf_overrides made a
        # dict) are not replacements.
        assert "speculative_config" not in worker["replaced"]
        assert "hf_overrides" not in worker["replaced"]
    # super-v3 passes logprobs_mode itself; super-v3.5 replaces it when vllm_cfg sets one.
    assert "logprobs_mode" in nemo_rl_workers.WORKERS["super-v3"]["passed"]
    replaced = nemo_rl_workers.WORKERS["super-v3.5-posttraining"]["replaced"]["logprobs_mode"]
    assert replaced[:2] == ("logprobs_mode is not None", "policy.generation.vllm_cfg.logprobs_mode")


def test_a_passed_keyword_is_as_it_is_only_where_the_worker_passes_its_setting() -> None:
    for branch in ("super-v3", "super-v3.5-posttraining"):
        as_is = nemo_rl_workers.WORKERS[branch]["as_is"]
        # self.tensor_parallel_size = self.cfg["vllm_cfg"]["tensor_parallel_size"], passed on.
        assert "tensor_parallel_size" in as_is and "max_model_len" in as_is
        # Derived: expert_parallel_size > 1; a local the worker may reassign; a resolver call.
        assert "enable_expert_parallel" not in as_is
        assert "load_format" not in as_is
        assert "enable_prefix_caching" not in as_is
