"""recipekit's Pants plugin: `stage_launcher` (a stage's launcher Pex, booted by `/bin/sh`),
`stage_artifacts` (every artifact of one training stage) and
`arch-lint` (no one-architecture artifact in recipes/ or containers/).

Loaded from pants.toml ([GLOBAL] pythonpath + backend_packages). Pants 2.17 runs it on CPython
3.9; the work itself is done by the stage launcher Pex (`artifacts` sub-command), so the image
code lives once, in src/python/recipekit/images, and is tested there.
"""

from recipekit_images import arch_lint, launcher
from recipekit_images import rules as stage_rules
from recipekit_images.target_types import StageArtifactsTarget, StageLauncherTarget


def target_types():
    return [StageLauncherTarget, StageArtifactsTarget]


def rules():
    return [*launcher.rules(), *stage_rules.rules(), *arch_lint.rules()]
