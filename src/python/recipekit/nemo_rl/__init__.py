"""NeMo-RL, as recipekit knows it: the typed configs of its ``super-v3`` and ``main`` branches.

Everything that changes with a NeMo-RL upgrade lives in this package: the sections, one module
per version (``schema_super_v3``, ``schema_main``; ``schema_common`` and the per-algorithm
``schema_*`` modules widen them for NeMo-RL's other entry points), the derivations its YAML did
with ``${...}`` (``derivations``, ``derivations_main``), the checks that know its semantics
(``checks``), the framework objects (``framework``: GRPO; ``algorithms``: every entry point) and
its YAML loader (``yaml_loader``).
"""

NEMO_RL_VERSION = "super-v3"
