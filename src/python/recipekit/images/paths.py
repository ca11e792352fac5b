"""Where the launcher layer puts things inside a stage image.

A contract between the image (``stage_image``, ``artifacts``) and the job that runs it
(``launch.job_script``, ``launch.preflight``): kept apart so that planning and rendering a job
do not load the image-building code.
"""

from __future__ import annotations

LAUNCHER_DIR = "/opt/recipekit"
# The launcher Pex, unzipped (a loose Pex runs as `python3 DIR`): its third-party wheels and
# bootstrap in one layer that only a lockfile change alters, its sources in another.
LAUNCHER_PEX = f"{LAUNCHER_DIR}/launcher"
PLAN_DIR = f"{LAUNCHER_DIR}/plan"
