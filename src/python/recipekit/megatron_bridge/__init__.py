"""Megatron-Bridge, as recipekit knows it: a recipe function plus typed overrides.

Everything that changes with a Megatron-Bridge upgrade lives in this package: the sections
(``schema``), the keys that follow others (``derivations``), the layout and the checks that know
Megatron-Core's rules (``layout``, ``checks``), the plan rows (``summary``) and the runner it
targets (``framework``).
"""

# The recipe, "Containers": pretrain and SFT run in the NeMo 26.08 container
# (nvcr.io/nvidia/nemo:26.08), with a pinned Megatron-Bridge commit mounted into it until a
# public image ships the Super-VL recipes (megatron.bridge.recipes.nemotronh_multimodal).
MEGATRON_BRIDGE_VERSION = "nemo:26.08"
