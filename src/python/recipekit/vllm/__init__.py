"""vLLM 0.25.1's own rules, for every framework that starts its engine.

``engine.py`` is what a framework starts the engine with (its context's ``vllm_engine()``);
``rules/`` are vLLM's checks on it, one module per config class, and ``checks.py`` their tuples;
``guards.py`` replays the config classes' own checks, read from the wheel. ``generated/`` holds
what is read from the pinned sources (never edited by hand; ``generated_test.py`` regenerates it
and fails on any difference): the engine arguments with their types and declared bounds
(``engine_args_0_25_1``), and how each pinned NeMo-RL's vLLM worker builds them
(``nemo_rl_workers``), which NeMo-RL's side (``recipekit.nemo_rl.rules.vllm_engine``,
``vllm_kwargs``) reads.
"""

VLLM_VERSION = "0.25.1"
# The pinned wheel's label in 3rdparty/reference/manifest.toml.
SOURCE = f"vllm/{VLLM_VERSION}-wheel"
