"""NeMo-RL, as recipekit knows it: the typed config of its ``super-v3`` branch.

Everything that changes with a NeMo-RL upgrade lives in this package: the sections
(``schema``), the derivations its YAML did with ``${...}`` (``derivations``), the checks that
know its semantics (``checks``) and its YAML loader (``yaml_loader``).
"""

NEMO_RL_VERSION = "super-v3"
