"""PyTorch, as NeMo-RL's DTensor workers use it: the optimizer and LR schedulers they build by
name from ``policy.optimizer`` and ``policy.scheduler``, spreading each section's ``kwargs``.

``generated/`` holds what ``tools/generate_torch_optim.py`` reads from the pinned wheel (never
edited by hand; ``generated_test.py`` regenerates it and fails on any difference): every class
``torch.optim`` and ``torch.optim.lr_scheduler`` export, with its constructor's parameters and
the guards it raises on. The rules that check the sections against it are NeMo-RL's
(``recipekit.nemo_rl.rules.torch_optim``).
"""

TORCH_VERSION = "2.11.0"
# The pinned wheel's label in 3rdparty/reference/manifest.toml.
SOURCE = f"torch/{TORCH_VERSION}-wheel"
