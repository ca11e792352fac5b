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
        found = _load_profile(name)
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


def _load_profile(name: str) -> object:
    """A profile file's object; whatever the file raises while it runs (a missing environment
    variable, a file it reads, a recursion) is one line naming the file's line, not a
    traceback."""
    try:
        return load_object(name)
    except RecipeError:
        raise
    except Exception as exc:  # noqa: BLE001 (a profile file is code: anything may fail)
        where = _profile_line(exc, name.partition(":")[0]) or f"--cluster {name}"
        reason = str(exc).splitlines()[0] if str(exc) else ""
        raise RecipeError(
            [Issue(where, f"the profile raised {type(exc).__name__}: {reason}"[:300])]
        ) from None


def _profile_line(exc: BaseException, module: str) -> str:
    """file:line of the profile file's innermost frame in the traceback."""
    import traceback

    ending = module if module.endswith(".py") else module.replace(".", "/") + ".py"
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename.endswith(ending)]
    return f"{frames[-1].filename}:{frames[-1].lineno}" if frames else ""


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
