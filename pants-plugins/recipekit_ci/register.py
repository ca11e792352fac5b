"""The CI definition's own checks: `actionlint` over .github/workflows in `./pants lint`."""

from recipekit_ci import actionlint


def rules():
    return actionlint.rules()
