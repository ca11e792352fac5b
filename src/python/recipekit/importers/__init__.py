"""Importers: a framework's own config files read as typed recipekit recipes.

``nemo_rl_yaml`` reads a NeMo-RL YAML (``recipekit import-yaml``) and ``module_writer`` writes
the recipe module; ``yaml_comments`` carries the YAML's comments over; ``data_paths`` walks the
plain data a YAML loader returns. Importers use recipekit's public names only.
"""
