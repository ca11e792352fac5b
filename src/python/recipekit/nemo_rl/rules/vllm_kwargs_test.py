"""policy.generation.vllm_kwargs checked against NeMo-RL's vLLM worker and vLLM 0.25.1's
engine arguments, as read from the pinned sources (recipekit.vllm.generated)."""

# The catalogued checks these tests break, which the rule catalogue's meta-test finds by name:
# vllm_kwargs_not_passed_by_nemo_rl, given_arguments_are_engine_arguments,
# given_config_mappings_hold_their_fields, vllm_kwargs_shadow_a_vllm_cfg_key,
# serving_chat_kwargs_are_chat_endpoint_arguments, serving_chat_kwargs_replaced_by_nemo_rl.

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
import yaml

from recipekit.errors import Issue
from recipekit.nemo_rl import NEMO_RL_VERSION, SUPER35_BRANCH
from recipekit.nemo_rl.checks import CheckContext
from recipekit.nemo_rl.rules import vllm_kwargs
from recipekit.nemo_rl.rules.conftest import Plan
from recipekit.nemo_rl.rules.vllm_engine import worker_engine
from recipekit.upstream.declared import declared
from recipekit.vllm.generated import engine_args_0_25_1 as engine
from recipekit.vllm.generated.nemo_rl_workers import WORKERS
from recipekit.vllm.rules.arguments import (
    given_arguments_are_engine_arguments,
    given_config_mappings_hold_their_fields,
)
from recipes.super3.dapo import dapo_h100
from recipes.super35.rl import rlvr

KWARGS = "policy.generation.vllm_kwargs"


def _mine(found: list[str], key: str) -> list[str]:
    return [e for e in found if e.startswith(f"{KWARGS}.{key}")]


def _passed_at(branch: str, key: str) -> str:
    """``file:line @ branch`` of the keyword the branch's worker passes itself, as the
    generated table of the pinned workers has it."""
    worker = WORKERS[branch]
    return f"{worker['file']}:{worker['passed'][key][1]} @ {branch}"


def _replaced_at(branch: str, key: str) -> str:
    """``file:line @ branch`` where the branch's worker writes the key itself."""
    _, _, file, line, _ = WORKERS[branch]["replaced"][key]
    return f"{file}:{line} @ {branch}"


def _bounded_at(key: str) -> str:
    """Where vLLM 0.25.1 declares the key's bounds (the generated engine arguments)."""
    return f"{(engine.ENGINE_ARGS | engine.ASYNC_ENGINE_ARGS)[key][3]} @ vLLM 0.25.1"


def test_a_key_nemo_rl_passes_itself_is_refused_naming_the_setting(refused: Plan) -> None:
    found = _mine(
        refused(rlvr, f"{KWARGS}={{gpu_memory_utilization: 0.5}}"), "gpu_memory_utilization"
    )
    assert len(found) == 1
    assert "duplicate keyword" in found[0]
    assert _passed_at(SUPER35_BRANCH, "gpu_memory_utilization") in found[0]
    assert "set policy.generation.vllm_cfg.gpu_memory_utilization instead" in found[0]


def test_super_v3_reads_its_own_worker(refused: Plan) -> None:
    found = _mine(
        refused(dapo_h100, f"{KWARGS}.gpu_memory_utilization=0.5"), "gpu_memory_utilization"
    )
    assert found and _passed_at(NEMO_RL_VERSION, "gpu_memory_utilization") in found[0]
    # super-v3 also passes logprobs_mode itself, from no setting of its own.
    found = _mine(refused(dapo_h100, f"{KWARGS}.logprobs_mode=raw_logits"), "logprobs_mode")
    assert found and "remove it: NeMo-RL sets it" in found[0]


def test_a_misspelt_key_gets_did_you_mean(refused: Plan) -> None:
    found = _mine(refused(rlvr, f"{KWARGS}.max_num_seq=8"), "max_num_seq")
    assert found and "not an argument of AsyncEngineArgs" in found[0]
    assert "did you mean 'max_num_seqs'?" in found[0]


@pytest.mark.parametrize(
    ("override", "reason"),
    [
        ("max_num_seqs=0", f"must be >= 1 ({_bounded_at('max_num_seqs')})"),
        ("watermark=1.0", f"must be >= 0 and < 1 ({_bounded_at('watermark')})"),
        ("mamba_ssm_cache_dtype=fp64", "one of 'auto', 'float32', 'float16', 'bfloat16'"),
        ("max_num_seqs=many", "vLLM takes an integer or null"),
        ("disable_custom_all_reduce=[true]", "vLLM takes true or false"),
        ("cudagraph_capture_sizes=[1, 2, x]", "a list of an integer"),
    ],
)
def test_values_outside_the_declared_types_and_bounds_are_refused(
    refused: Plan, override: str, reason: str
) -> None:
    key = override.split("=")[0]
    found = _mine(refused(rlvr, f"{KWARGS}.{override}"), key)
    assert found and reason in found[0], found


def test_a_mapping_for_a_config_class_is_checked_key_by_key(refused: Plan, errors: Plan) -> None:
    # compilation_config becomes vLLM's CompilationConfig, a pydantic dataclass that forbids
    # extra fields: a misspelt key is refused with the fields it has, a value by its type.
    found = _mine(refused(rlvr, f"{KWARGS}.compilation_config={{cudagraph_mod: FULL}}"), "comp")
    assert found and "not a field of CompilationConfig, vllm/config/compilation.py" in found[0]
    assert "forbids extra fields" in found[0] and "did you mean 'cudagraph_mode'" in found[0]
    found = _mine(refused(rlvr, f"{KWARGS}.eplb_config={{window_size: 0}}"), "eplb_config")
    assert found and "must be > 0 (vllm/config/parallel.py:" in found[0]
    found = _mine(refused(rlvr, f"{KWARGS}.eplb_config={{use_async: sometimes}}"), "eplb_config")
    assert found and "vLLM takes true or false" in found[0]
    # A known key of a right type passes, and so does a key the async worker takes out of
    # the mapping before vLLM sees it (use_inductor: NeMo-RL warns it is deprecated).
    assert not _mine(errors(rlvr, f"{KWARGS}.eplb_config={{window_size: 100}}"), "eplb")
    assert not _mine(errors(rlvr, f"{KWARGS}.compilation_config={{use_inductor: false}}"), "c")
    # Read from the workers: only the async one takes it out (the sync engine, vllm.LLM,
    # would refuse it).
    popped = WORKERS[SUPER35_BRANCH]["popped"]["compilation_config"]["use_inductor"]
    assert popped[0].endswith("vllm_worker_async.py") and popped[2] == "async"


def test_a_key_nemo_rl_replaces_warns(warned: Plan) -> None:
    found = _mine(warned(rlvr, f"{KWARGS}.distributed_executor_backend=mp"), "distributed")
    assert found and "this value is replaced (" in found[0]
    assert _replaced_at(SUPER35_BRANCH, "distributed_executor_backend") in found[0]
    found = _mine(warned(rlvr, f"{KWARGS}.logprobs_mode=raw_logits"), "logprobs_mode")
    assert (
        found
        and "replaced when `logprobs_mode is not None` (policy.generation.vllm_cfg" in found[0]
    )


@pytest.mark.parametrize(
    ("stage", "branch"), [(rlvr, SUPER35_BRANCH), (dapo_h100, NEMO_RL_VERSION)]
)
def test_a_key_of_nemo_rls_own_vllm_settings_warns(
    warned: Plan, errors: Plan, stage: Any, branch: str
) -> None:
    # kv_cache_dtype is a vllm_cfg key the worker does not pass: vLLM would start an FP8 KV
    # cache that NeMo-RL, reading vllm_cfg.kv_cache_dtype ('auto'), never calibrates.
    found = _mine(warned(stage, f"{KWARGS}={{kv_cache_dtype: fp8}}"), "kv_cache_dtype")
    line = declared(f"nemo-rl/{branch}", vllm_kwargs.VLLM_SETTINGS).keys["kv_cache_dtype"].line
    assert len(found) == 1, found
    assert f"nemo_rl/models/generation/vllm/config.py:{line} @ {branch}" in found[0]
    assert "follows that one ('auto')" in found[0]
    assert "set policy.generation.vllm_cfg.kv_cache_dtype instead" in found[0]
    # A key the worker passes is refused, one it replaces warns so: neither warns twice.
    ctx = _ctx(branch, {"max_model_len": 64, "kv_cache_dtype": "fp8"}, async_engine=False)
    shadowed = vllm_kwargs.vllm_kwargs_shadow_a_vllm_cfg_key(ctx)
    assert [i.path for i in shadowed] == [f"{KWARGS}.kv_cache_dtype"]
    replaced = _mine(warned(rlvr, f"{KWARGS}.logprobs_mode=raw_logits"), "logprobs_mode")
    assert len(replaced) == 1 and "replaced" in replaced[0]


def test_the_shipped_stages_have_no_such_issue(warned: Plan, errors: Plan) -> None:
    for stage in (rlvr, dapo_h100):
        assert not [e for e in errors(stage) if e.startswith(KWARGS)]
        assert not [w for w in warned(stage) if w.startswith(KWARGS)]


# --- the HTTP server's chat endpoint (http_server_serving_chat_kwargs) ---------------------------

SERVING = "policy.generation.vllm_cfg.http_server_serving_chat_kwargs"


def test_chat_endpoint_settings_are_its_parameters(errors: Plan) -> None:
    # rlvr serves its Gym agents over the async worker's HTTP server.
    [typo] = errors(rlvr, f"{SERVING}.enable_auto_tool=true")
    assert typo.startswith(f"{SERVING}.enable_auto_tool: not a parameter of OpenAIServingChat")
    assert "did you mean 'enable_auto_tools'" in typo
    [wrong] = errors(rlvr, f"{SERVING}.enable_auto_tools=3")
    line = engine.SERVING_CHAT_PARAMETERS["enable_auto_tools"][1]
    assert f"serving.py:{line} @ vLLM 0.25.1" in wrong
    # The worker takes chat_template_kwargs out first (vLLM's older name), so it is no
    # parameter of vLLM's and still plans; so does a real one.
    assert errors(rlvr, f"{SERVING}.chat_template_kwargs={{enable_thinking: true}}") == []
    assert errors(rlvr, f"{SERVING}.tool_parser=qwen3_coder") == []


def test_a_chat_endpoint_setting_the_worker_writes_over_warns(warned: Plan) -> None:
    serving = WORKERS[SUPER35_BRANCH]["serving_chat"]
    found = [w for w in warned(rlvr, f"{SERVING}.models=x") if w.startswith(f"{SERVING}.models")]
    assert found and f"{serving['file']}:{serving['replaced']['models']}" in found[0]


# --- every key the pinned upstream example configs give -----------------------------------------


def _ctx(branch: str, kwargs: dict[str, Any], async_engine: bool) -> CheckContext:
    config = type("Config", (), {"nemo_rl_branch": branch})()
    return cast(
        CheckContext,
        SimpleNamespace(
            config=config,
            generation=SimpleNamespace(backend="vllm", vllm_kwargs=kwargs),
            vllm=SimpleNamespace(async_engine=async_engine),
            vllm_engine=lambda: worker_engine(branch, kwargs, async_engine),
        ),
    )


def _example_kwargs(root: Path) -> list[tuple[str, dict[str, Any]]]:
    found = []

    def walk(node: object, file: str) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "vllm_kwargs" and isinstance(value, dict) and value:
                    found.append((file, value))
                else:
                    walk(value, file)
        elif isinstance(node, list):
            for item in node:
                walk(item, file)

    for path in sorted(root.rglob("*.yaml")):
        walk(yaml.safe_load(path.read_text()), str(path.relative_to(root)))
    return found


ARGUMENT_CHECKS = (given_arguments_are_engine_arguments, given_config_mappings_hold_their_fields)


def _issues(ctx: CheckContext, super35: bool) -> list[Issue]:
    checks = [*vllm_kwargs.ERROR_CHECKS, *vllm_kwargs.WARNING_CHECKS]
    if super35:
        checks += [*vllm_kwargs.SUPER35_ERROR_CHECKS, *ARGUMENT_CHECKS]
    return [issue for check in checks for issue in check(ctx)]


def test_the_sync_worker_takes_llm_parameters_the_async_one_does_not() -> None:
    # vllm.LLM(**llm_kwargs) binds its own parameters and drops the deprecated swap_space;
    # AsyncEngineArgs(**llm_kwargs) takes neither.
    kwargs = {"chat_template": "t.jinja", "swap_space": 4, "compilation_config": 3}
    assert not _issues(_ctx(SUPER35_BRANCH, kwargs, async_engine=False), super35=True)
    found = {i.path for i in _issues(_ctx(SUPER35_BRANCH, kwargs, async_engine=True), True)}
    assert found == {f"{KWARGS}.chat_template", f"{KWARGS}.swap_space"}


@pytest.mark.parametrize("async_engine", [False, True])
def test_every_example_config_key_passes(reference_dir: Path, async_engine: bool) -> None:
    # main's and super-v3's example configs, each key and value as the worker would get it
    # (super-v3's with its own worker only: it does not run vLLM 0.25.1).
    cases = [
        (SUPER35_BRANCH, reference_dir / "nemo-rl/main"),
        (NEMO_RL_VERSION, reference_dir / "nemo-rl/super-v3"),
    ]
    seen = 0
    for branch, root in cases:
        for file, kwargs in _example_kwargs(root):
            seen += len(kwargs)
            ctx = _ctx(branch, kwargs, async_engine)
            found = _issues(ctx, branch == SUPER35_BRANCH)
            assert not found, f"{file}: {[i.render() for i in found]}"
    assert seen > 100
