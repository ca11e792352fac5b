"""Finding a cluster profile: a name from ``recipes/clusters.py``, or ``MODULE:ATTR``.

``FILE.py:ATTR`` works too, for a profile kept outside the repository.
"""

from __future__ import annotations

from recipekit.errors import Issue, RecipeError, did_you_mean
from recipekit.launch.profile import ClusterProfile
from recipekit.loading import load_object

REGISTRY = "recipes.clusters:PROFILES"


def find_profile(name: str) -> ClusterProfile:
    if ":" in name:
        found = load_object(name)
        if not isinstance(found, ClusterProfile):
            raise RecipeError([Issue(f"--cluster {name}", "is not a ClusterProfile")])
        return found
    profiles = load_object(REGISTRY)
    if name not in profiles:
        raise RecipeError(
            [
                Issue(
                    f"--cluster {name}",
                    "no such cluster profile",
                    hint=did_you_mean(name, profiles),
                )
            ]
        )
    profile = profiles[name]
    assert isinstance(profile, ClusterProfile)
    return profile


def default_profile_for(node_name: str) -> ClusterProfile | None:
    """The first registered profile whose nodes are the plan's, for showing a job script."""
    try:
        profiles = load_object(REGISTRY)
    except RecipeError:
        return None
    for profile in profiles.values():
        if profile.node.name == node_name:
            assert isinstance(profile, ClusterProfile)
            return profile
    return None
