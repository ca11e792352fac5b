"""Pipelines of stages: plan a chain in dependency order, submit it with Slurm dependencies,
and show where each stage's job and artifact versions stand."""
