"""From a plan to a running job: cluster profiles, the Slurm job script, and the job step.

Nothing here knows NeMo-RL's config keys; a framework upgrade does not touch this package.
"""
