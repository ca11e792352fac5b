"""Rules NeMo-RL's vLLM workers state when they start: the metrics logger, speculative decoding
switched off, and the compilation settings handed on to vLLM."""

from __future__ import annotations

from collections.abc import Iterator

from recipekit.errors import Issue
from recipekit.markers import UNSET
from recipekit.nemo_rl.checks import CheckContext
from recipekit.nemo_rl.keys import value_of
from recipekit.nemo_rl.rules.citation import mirrors
from recipekit.nemo_rl.rules.vllm_kwargs import KWARGS, given_kwargs

VLLM = "policy.generation.vllm_cfg"


def _async_vllm(ctx: CheckContext) -> bool:
    """vLLM with its async engine: only then does NeMo-RL start its async worker."""
    gen, vllm = ctx.generation, ctx.vllm
    return gen is not None and gen.backend == "vllm" and vllm is not None and vllm.async_engine


@mirrors(
    v3="nemo-rl.v3.models.generation.vllm.vllm-worker-async.start-vllm-metrics-logger.vllm-metrics-logger-needs-polling-interval",
    v35="nemo-rl.models.generation.vllm.vllm-worker-async.start-vllm-metrics-logger.vllm-metrics-logger-needs-polling-interval",
)
def vllm_metrics_logger_needs_an_interval(ctx: CheckContext) -> Iterator[Issue]:
    """vllm_worker_async.py, _start_vllm_metrics_logger (both versions): the async worker's metrics
    logger polls vLLM every vllm_metrics_logger_interval seconds and has no default."""
    vllm = ctx.vllm
    if (
        _async_vllm(ctx)
        and vllm is not None
        and vllm.enable_vllm_metrics_logger is True
        and vllm.vllm_metrics_logger_interval is UNSET
    ):
        yield Issue(
            f"{VLLM}.vllm_metrics_logger_interval",
            "NeMo-RL's vLLM worker refuses enable_vllm_metrics_logger without it",
            hint="set it, in seconds (NeMo-RL's configs use 0.5)",
        )


@mirrors(
    v35="nemo-rl.models.generation.vllm.vllm-worker.load-model.speculative-decoding-switched-off-runs-better"
)
def disabled_speculation_wants_prefix_caching(ctx: CheckContext) -> Iterator[Issue]:
    """vllm_worker.py, BaseVllmGenerationWorker._load_model (super-v3.5): a warning;
    num_speculative_tokens 0 drops the drafter, and then prefix caching switched off costs
    generation speed.

    Unset, NeMo-RL turns prefix caching on for GPUs of compute capability 8 and newer, which
    every recipekit node is; so only an explicit false warns.
    """
    spec = given_kwargs(ctx).get("speculative_config")
    vllm = ctx.vllm
    if (
        isinstance(spec, dict)
        and spec.get("num_speculative_tokens") == 0
        and vllm is not None
        and value_of(vllm, "enable_prefix_caching") is False
    ):
        yield Issue(
            f"{VLLM}.enable_prefix_caching",
            "NeMo-RL warns: speculative decoding is off (num_speculative_tokens 0), so prefix "
            "caching would speed generation up",
            value=False,
        )


@mirrors(
    v35="nemo-rl.models.generation.vllm.vllm-worker-async.create-engine.compilation-config-use-inductor-deprecated-favour"
)
def compilation_use_inductor_is_deprecated(ctx: CheckContext) -> Iterator[Issue]:
    """vllm_worker_async.py, VllmAsyncGenerationWorkerImpl._create_engine (super-v3.5): a warning;
    vLLM 0.12 replaced compilation_config.use_inductor by compilation_config.backend, which NeMo-RL
    translates."""
    compilation = given_kwargs(ctx).get("compilation_config")
    if _async_vllm(ctx) and isinstance(compilation, dict) and "use_inductor" in compilation:
        yield Issue(
            f"{KWARGS}.compilation_config.use_inductor",
            "NeMo-RL's async vLLM worker warns it is deprecated: use compilation_config.backend "
            "(inductor or eager)",
            value=compilation["use_inductor"],
        )


@mirrors(
    v3="nemo-rl.v3.models.generation.vllm.vllm-worker-async.start-vllm-metrics-logger.metrics-logger-interval-positive",
    v35="nemo-rl.models.generation.vllm.vllm-worker-async.start-vllm-metrics-logger.metrics-logger-interval-positive",
)
def vllm_metrics_logger_interval_is_positive(ctx: CheckContext) -> Iterator[Issue]:
    """vllm_worker_async.py, _start_vllm_metrics_logger (both versions): the polling interval is a
    positive number of seconds (the schema admits 0)."""
    vllm = ctx.vllm
    if not _async_vllm(ctx) or vllm is None or vllm.enable_vllm_metrics_logger is not True:
        return
    interval = vllm.vllm_metrics_logger_interval
    if isinstance(interval, int | float) and interval <= 0:
        yield Issue(
            f"{VLLM}.vllm_metrics_logger_interval",
            "NeMo-RL's vLLM worker refuses it: it must be a positive number of seconds",
            value=interval,
            hint="NeMo-RL's configs use 0.5",
        )


ERROR_CHECKS = (
    vllm_metrics_logger_needs_an_interval,
    vllm_metrics_logger_interval_is_positive,
)
SUPER35_WARNING_CHECKS = (
    disabled_speculation_wants_prefix_caching,
    compilation_use_inductor_is_deprecated,
)
