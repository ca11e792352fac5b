"""Lines the launcher writes to a job's log that the integration tests look for, named once.

A test that checks a line is absent (Ray never started, no rank ran) is only as good as the line
it looks for: each marker here is also asserted present in a test where it must appear, so a
reworded log line fails that test instead of quietly passing the negative one.
"""

# recipekit.launch.ray_cluster logs each Ray command it runs, and its stopping, so.
RAY_LINE = "ray: "
# recipekit.launch.entry_point prefixes what a per-GPU rank prints with "[node rank r/n]".
RANK_LINE = " rank "


def preflight_passed(node: str, address: str) -> str:
    """recipekit.launch.job_step: a node's prefix, then preflight's verdict."""
    return f"[{node} {address}] preflight passed"
