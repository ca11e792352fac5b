"""recipekit: typed, validated training recipes that compile to framework configs and jobs.

The public API is re-exported here; modules are the rooms of the house: ``sections`` and
``nemo_rl.schema_super_v3`` (typed config), ``nemo_rl.derivations`` and ``nemo_rl.checks``
(validation), ``plan`` (compile), ``report`` (render), ``cli`` (launchers).
"""

__version__ = "0.1.0"
