"""How long Ray's bring-up may take on N nodes: the waits of a Ray stage's job step (issue 42).

A fixed wait that suits 3 nodes times out at 144. The default
(``ClusterProfile.ray_start_timeout_s`` left None) follows the line measured on the local Slurm
(docs/design/measurements.md, "Bring-up by node count", 2026-12-05): submit to "Ray up" =
5.55 s + 2.22 s a node at 4, 8 and 16 nodes, the increments flat (2.35 and 2.16 s a node). There
the nodes share one host's two cores and start one at a time, so the line is an upper model of a
cluster's, whose workers start at once on their own cores; it is doubled for a loaded controller
and GCS, and never below the 300 s every size had before. It bounds a wait, it does not predict
one: 16 nodes wait up to 300 s, 144 up to 651 s.
"""

from __future__ import annotations

import math

# docs/design/measurements.md: the least-squares line through 4, 8 and 16 nodes.
MEASURED_BASE_S = 5.55
MEASURED_PER_NODE_S = 2.22
# The measured line times this: the wait is a bound, and a cluster's GCS is busier than a test's.
MARGIN = 2.0
# What every node count waited before the wait was derived.
FLOOR_S = 300


def ray_up_estimate(num_nodes: int) -> float:
    """Seconds from the job's start to "Ray up" by the measured line (this repository's host)."""
    return MEASURED_BASE_S + MEASURED_PER_NODE_S * num_nodes


def ray_start_timeout(num_nodes: int) -> int:
    """How long the head waits for every node's Ray, and a worker for the head's GCS."""
    if num_nodes < 1:
        raise ValueError(f"{num_nodes} nodes: at least 1")
    return max(FLOOR_S, math.ceil(MARGIN * ray_up_estimate(num_nodes)))


def bringup_line(num_nodes: int, timeout_s: int, *, given: bool, allowance_s: int) -> str:
    """What the plan says of the wait (and whether the start-up allowance covers it)."""
    source = (
        "profile ray_start_timeout_s"
        if given
        else f"derived: {MARGIN:g} x ({MEASURED_BASE_S} s + {MEASURED_PER_NODE_S} s x "
        f"{num_nodes} nodes, measured), at least {FLOOR_S} s"
    )
    line = f"Ray bring-up on {num_nodes} node(s): the head waits up to {timeout_s} s ({source})"
    if timeout_s > allowance_s:
        line += (
            f"; longer than the start-up allowance ({allowance_s} s): a bring-up that slow "
            "leaves the framework's save deadline past the time limit"
        )
    return line
