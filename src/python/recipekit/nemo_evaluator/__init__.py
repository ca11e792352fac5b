"""NeMo Evaluator, as recipekit knows it: the run config of nemo-evaluator-launcher.

Everything that changes with a launcher upgrade lives here: the sections (``schema``), the task
names it accepts (``tasks``, over the data in ``task_registry``), the keys that follow others
(``derivations``), the checks (``checks``) and the framework object (``launcher``).
"""

# The last release of the launcher package: NVIDIA-NeMo/Evaluator tag
# nemo-evaluator-launcher-v0.2.6 (commit ab491cbb0413, 2026-05-21). Evaluator's main branch
# (v0.3.0 on) replaced the launcher; the nemotron CLI's eval stages still install this one.
LAUNCHER_VERSION = "0.2.6"
