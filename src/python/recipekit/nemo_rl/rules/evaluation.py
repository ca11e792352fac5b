"""Evaluation's own rules (``examples/run_eval.py``, super-v3.5-posttraining): what the setup of
``nemo_rl/evals/eval.py`` refuses in the eval and generation sections before it starts vLLM.

Each check reads the typed config (the entry point is a NemoRLRun, which has no GRPO
CheckContext). The eval config's generation section is top-level ``generation``, not GRPO's
``policy.generation``, so the vLLM rules GRPO's checks mirror do not read it here.
"""

from __future__ import annotations

from collections.abc import Iterator

from recipekit.errors import Issue
from recipekit.nemo_rl.rules.citation import mirrors_super35
from recipekit.nemo_rl.schema_eval import EvalMasterConfig


@mirrors_super35("nemo-rl.evals.eval.setup.several-answers-per-prompt-need-positive")
def repeated_samples_need_sampling(config: EvalMasterConfig) -> Iterator[Issue]:
    """eval.py, setup: several answers per prompt only differ when decoding samples: a positive
    temperature and top_k other than 1."""
    n, gen = config.eval.num_tests_per_prompt, config.generation
    if n <= 1:
        return
    if gen.temperature <= 0:
        key, value, hint = "generation.temperature", gen.temperature, "above 0"
    elif gen.top_k == 1:
        key, value, hint = "generation.top_k", gen.top_k, "-1 (off) or above 1"
    else:
        return
    yield Issue(
        key,
        f"with eval.num_tests_per_prompt {n} the answers to a prompt must differ, which "
        "greedy decoding cannot give; NeMo-RL's evaluation setup refuses temperature 0 or "
        "top_k 1",
        value=value,
        hint=f"{hint}, or eval.num_tests_per_prompt 1",
    )


@mirrors_super35("nemo-rl.evals.eval.setup.num-tests-per-prompt-least-k")
def k_value_within_the_samples(config: EvalMasterConfig) -> Iterator[Issue]:
    """eval.py, setup: pass@k and cons@k draw k of the num_tests_per_prompt answers."""
    n, k = config.eval.num_tests_per_prompt, config.eval.k_value
    if n < k:
        yield Issue(
            "eval.num_tests_per_prompt",
            f"the metric draws eval.k_value ({k}) of each prompt's answers, so NeMo-RL's "
            "evaluation setup refuses fewer answers than that",
            value=n,
            hint=f"at least {k}, or a smaller eval.k_value",
        )


@mirrors_super35("nemo-rl.evals.eval.setup.evaluation-generates-vllm")
def eval_generates_with_vllm(config: EvalMasterConfig) -> Iterator[Issue]:
    """eval.py, setup: evaluation generates with vLLM only."""
    backend = config.generation.backend
    if backend != "vllm":
        yield Issue(
            "generation.backend",
            f"NeMo-RL's evaluation starts a vLLM engine only; its setup refuses {backend!r}",
            value=backend,
            hint="vllm",
        )


EVAL_ERROR_CHECKS = (
    repeated_samples_need_sampling,
    k_value_within_the_samples,
    eval_generates_with_vllm,
)

__all__ = ["EVAL_ERROR_CHECKS"]
