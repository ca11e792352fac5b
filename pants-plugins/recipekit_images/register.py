"""recipekit's Pants plugin: `stage_artifacts` (every artifact of one training stage) and
`arch-lint` (no one-architecture artifact in recipes/ or containers/).

Loaded from pants.toml ([GLOBAL] pythonpath + backend_packages). Pants 2.17 runs it on CPython
3.9; the work itself is done by the stage launcher Pex (`artifacts` sub-command), so the image
code lives once, in src/python/recipekit/images, and is tested there.
"""

from recipekit_images import arch_lint
from recipekit_images import rules as stage_rules
from recipekit_images.target_types import StageArtifactsTarget


def target_types():
    return [StageArtifactsTarget]


def rules():
    return [*stage_rules.rules(), *arch_lint.rules()]
