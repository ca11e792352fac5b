"""Will it fit: per-GPU memory of each phase of a stage, from the model card's architecture.

``estimate`` holds the result (terms, phases, the fit verdict); ``parameters`` counts a hybrid
stack's parameters; ``megatron`` and ``vllm`` estimate a training rank and a serving rank.
Frameworks map their config onto these (``nemo_rl/memory.py``, ``megatron_bridge/memory.py``).
"""
