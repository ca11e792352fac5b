"""Megatron-Core 0.19.2's own rules on the settings recipekit's stages pass it.

Both Megatron-backed frameworks end in Megatron-Core's config classes: NeMo-RL's
``policy.megatron_cfg`` and Megatron-Bridge's ``model.*``/``optimizer.*`` become the fields of a
``TransformerConfig`` (a ``ModelParallelConfig``), an ``OptimizerConfig`` and a
``DistributedDataParallelConfig``, whose ``__post_init__`` refuses some combinations and warns on
others. ``options`` reads the settings of either framework's typed config into one value;
``rules/<topic>`` mirror the checks, each citing its upstream line; ``checks`` lists them per
framework. ``kwargs`` is the mapping from a rendered config to the constructor arguments the
framework passes, which ``tools/record_megatron_verdicts.py`` runs through Megatron-Core itself
(``verdicts/``): the replay test holds recipekit to the framework's verdicts.
"""

MEGATRON_CORE_VERSION = "0.19.2"
# The catalogue's source label (src/python/recipekit/rule_catalogue/megatron-core.toml): the
# wheel 3rdparty/wheels:megatron-core pins by sha256.
SOURCE = f"megatron-core/{MEGATRON_CORE_VERSION}"
