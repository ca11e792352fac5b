"""``policy.generation.vllm_kwargs`` against what reads them: NeMo-RL's vLLM worker and vLLM.

The worker spreads them into the call that builds the engine's arguments
(``dict(model=..., gpu_memory_utilization=..., **vllm_kwargs)``, then ``vllm.LLM(**llm_kwargs)``
or, with ``vllm_cfg.async_engine``, ``AsyncEngineArgs(**llm_kwargs)``). So a key the worker
passes itself is a duplicate keyword (a TypeError when the worker starts), a key it writes
itself is silently replaced, a key that is no argument of the engine is a TypeError, and a value
vLLM's config classes refuse fails their pydantic validation. All four are read from the pinned
sources (``recipekit.vllm.generated``, written by ``tools/generate_vllm_kwargs.py``); the vLLM
ones are 0.25.1's, the version super-v3.5-posttraining pins, so only Super 3.5 asks them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from recipekit.errors import Issue, did_you_mean
from recipekit.markers import UNSET, Marker
from recipekit.nemo_rl import NEMO_RL_VERSION, SUPER35_BRANCH
from recipekit.nemo_rl.checks import CheckContext
from recipekit.nemo_rl.keys import has_key, value_of
from recipekit.nemo_rl.rules.citation import on_super35
from recipekit.upstream.declared import declared as declared_class
from recipekit.upstream.values import expected_type, plain

KWARGS = "policy.generation.vllm_kwargs"
AT = "@ vLLM 0.25.1"
# The config class of policy.generation.vllm_cfg at both pinned versions.
VLLM_SETTINGS = "nemo_rl.models.generation.vllm.config:VllmSpecificArgs"


def given_kwargs(ctx: CheckContext) -> dict[str, Any]:
    gen = ctx.generation
    kwargs = value_of(gen, "vllm_kwargs")
    if gen is None or gen.backend != "vllm" or not isinstance(kwargs, dict):
        return {}
    return kwargs


def starts_async_engine(ctx: CheckContext) -> bool:
    """Whether the async engine starts: as set, or as super-v3.5's NeMo Gym runner sets it."""
    from recipekit.nemo_rl.rules.generation import gym_runner_sets_the_server_on

    # (A config with no env section, as a GRPO-less entry point's, runs no Gym.)
    if has_key(ctx.config, "env") and gym_runner_sets_the_server_on(ctx):
        return True
    return ctx.vllm is not None and ctx.vllm.async_engine is True


def worker_of(ctx: CheckContext) -> tuple[str, dict[str, Any]]:
    from recipekit.vllm.generated.nemo_rl_workers import WORKERS

    branch = SUPER35_BRANCH if on_super35(ctx) else NEMO_RL_VERSION
    return branch, WORKERS[branch]


def vllm_kwargs_not_passed_by_nemo_rl(ctx: CheckContext) -> Iterator[Issue]:
    """vllm_worker.py, BaseVllmGenerationWorker._load_model (both versions): the worker passes
    these keywords in
    the call that spreads vllm_kwargs; one given again is a duplicate-keyword TypeError."""
    kwargs = given_kwargs(ctx)
    if not kwargs:
        return
    branch, worker = worker_of(ctx)
    for key in kwargs:
        if key not in worker["passed"]:
            continue
        setting, line = worker["passed"][key]
        yield Issue(
            f"{KWARGS}.{key}",
            "NeMo-RL's vLLM worker passes it itself: a duplicate keyword, a TypeError when the "
            f"worker starts ({worker['file']}:{line} @ {branch})",
            hint=f"set {setting} instead" if setting else "remove it: NeMo-RL sets it",
        )


def vllm_kwargs_replaced_by_nemo_rl(ctx: CheckContext) -> Iterator[Issue]:
    """vllm_worker.py, BaseVllmGenerationWorker._load_model (both versions; the lines are the
    generated table's): a warning; the worker writes
    these keys into the engine's arguments itself, so the user's value is replaced."""
    kwargs = given_kwargs(ctx)
    if not kwargs:
        return
    branch, worker = worker_of(ctx)
    engine = "async" if starts_async_engine(ctx) else "sync"
    for key in kwargs:
        if key not in worker["replaced"] or key in worker["passed"]:
            continue
        condition, reads, file, line, only = worker["replaced"][key]
        if only and only != engine:
            continue
        when = f" when `{condition}`" if condition else ""
        read = f" ({reads})" if reads else ""
        yield Issue(
            f"{KWARGS}.{key}",
            f"NeMo-RL's vLLM worker sets it itself: this value is replaced{when}{read} "
            f"({file}:{line} @ {branch})",
            value=kwargs[key],
        )


def vllm_kwargs_shadow_a_vllm_cfg_key(ctx: CheckContext) -> Iterator[Issue]:
    """A warning: a vllm_kwargs key that NeMo-RL's vLLM settings also declare
    (``policy.generation.vllm_cfg``, VllmSpecificArgs) and that the worker does not pass itself
    reaches vLLM unchanged, while NeMo-RL's own code around the engine keeps reading the
    vllm_cfg key (``kv_cache_dtype`` given here starts an FP8 KV cache whose scales the policy
    never calibrates: NeMo-RL decides that from vllm_cfg.kv_cache_dtype). Keys it passes itself
    are vllm_kwargs_not_passed_by_nemo_rl's errors."""
    kwargs = given_kwargs(ctx)
    if not kwargs:
        return
    branch, worker = worker_of(ctx)
    declared = declared_class(f"nemo-rl/{branch}", VLLM_SETTINGS)
    # (A key the worker writes over is vllm_kwargs_replaced_by_nemo_rl's warning.)
    handled = worker["passed"].keys() | worker["replaced"].keys()
    for key in sorted(kwargs.keys() & declared.keys.keys() - handled):
        own = value_of(ctx.vllm, key, UNSET)
        stated = "absent" if isinstance(own, Marker) else f"{own!r}"
        where = f"{declared.name}, {declared.path}:{declared.keys[key].line} @ {branch}"
        yield Issue(
            f"{KWARGS}.{key}",
            f"vLLM gets this value, but NeMo-RL's own setting is "
            f"policy.generation.vllm_cfg.{key} ({where}), and what NeMo-RL does around the "
            f"engine follows that one ({stated})",
            value=kwargs[key],
            hint=f"set policy.generation.vllm_cfg.{key} instead",
        )


# --- the HTTP server's chat endpoint ----------------------------------------------------------

SERVING = "policy.generation.vllm_cfg.http_server_serving_chat_kwargs"


def _serving_kwargs(ctx: CheckContext) -> dict[str, Any]:
    """The chat endpoint's settings where the async worker starts its HTTP server."""
    from recipekit.nemo_rl.rules.generation import gym_runner_sets_the_server_on

    vllm = ctx.vllm
    serves = has_key(ctx.config, "env") and gym_runner_sets_the_server_on(ctx)
    serves = serves or value_of(vllm, "expose_http_server") is True
    kwargs = value_of(vllm, "http_server_serving_chat_kwargs")
    return kwargs if serves and starts_async_engine(ctx) and isinstance(kwargs, dict) else {}


def serving_chat_kwargs_are_chat_endpoint_arguments(ctx: CheckContext) -> Iterator[Issue]:
    """vllm_worker_async.py (the HTTP server's start) and
    vllm/entrypoints/openai/chat_completion/serving.py @ vLLM 0.25.1: each key the worker neither
    takes out first nor writes over itself is a parameter of OpenAIServingChat, of its declared
    type; another is a TypeError when the server starts."""
    from recipekit.vllm.generated.engine_args_0_25_1 import SERVING_CHAT_PARAMETERS

    kwargs = _serving_kwargs(ctx)
    if not kwargs:
        return
    serving = worker_of(ctx)[1]["serving_chat"]
    where = "vllm/entrypoints/openai/chat_completion/serving.py"
    for key, raw in kwargs.items():
        if key in serving["popped"] or key in serving["replaced"]:
            continue
        if key not in SERVING_CHAT_PARAMETERS:
            yield Issue(
                f"{SERVING}.{key}",
                f"not a parameter of OpenAIServingChat ({where} {AT}): a TypeError when "
                "NeMo-RL's async worker starts its HTTP server",
                hint=did_you_mean(str(key), SERVING_CHAT_PARAMETERS, what="parameters"),
            )
        elif expected := expected_type(plain(raw), SERVING_CHAT_PARAMETERS[key][0]):
            line = SERVING_CHAT_PARAMETERS[key][1]
            yield Issue(
                f"{SERVING}.{key}", f"vLLM takes {expected} ({where}:{line} {AT})", value=raw
            )


def serving_chat_kwargs_replaced_by_nemo_rl(ctx: CheckContext) -> Iterator[Issue]:
    """A warning (vllm_worker_async.py, both versions; the lines are the generated table's): the
    worker writes these keys over the chat endpoint's settings itself."""
    kwargs = _serving_kwargs(ctx)
    if not kwargs:
        return
    branch, worker = worker_of(ctx)
    serving = worker["serving_chat"]
    for key in kwargs.keys() & serving["replaced"].keys():
        yield Issue(
            f"{SERVING}.{key}",
            "NeMo-RL's async worker sets it itself when it starts the HTTP server: this value "
            f"is replaced ({serving['file']}:{serving['replaced'][key]} @ {branch})",
            value=kwargs[key],
        )


ERROR_CHECKS = (vllm_kwargs_not_passed_by_nemo_rl,)
SUPER35_ERROR_CHECKS = (serving_chat_kwargs_are_chat_endpoint_arguments,)
WARNING_CHECKS = (
    vllm_kwargs_replaced_by_nemo_rl,
    vllm_kwargs_shadow_a_vllm_cfg_key,
    serving_chat_kwargs_replaced_by_nemo_rl,
)
