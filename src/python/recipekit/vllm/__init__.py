"""vLLM, as recipekit's stages run it through NeMo-RL's generation workers.

``generated/`` holds what is read from the pinned sources by ``tools/generate_vllm_kwargs.py``
(never edited by hand; ``generated_test.py`` regenerates it and fails on any difference):
vLLM 0.25.1's engine arguments with their types and declared bounds
(``engine_args_0_25_1``), and how each pinned NeMo-RL's vLLM worker spreads
``policy.generation.vllm_kwargs`` into them (``nemo_rl_workers``). The rules that check
``vllm_kwargs`` against them are NeMo-RL's (``recipekit.nemo_rl.rules.vllm_kwargs``).
"""

VLLM_VERSION = "0.25.1"
# The pinned wheel's label in 3rdparty/reference/manifest.toml.
SOURCE = f"vllm/{VLLM_VERSION}-wheel"
