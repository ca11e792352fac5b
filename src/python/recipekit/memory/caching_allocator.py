"""Where PyTorch's CUDA caching allocator puts blocks, for the few placements an estimate needs.

Rules from c10/cuda/CUDACachingAllocator.cpp (torch 2.11, the version measured in
tools/calibration/): a request of at most 1 MiB comes from the small pool (2 MiB segments); one
under 10 MiB from a 20 MiB segment that later requests of that range share; a larger one gets a
segment of its own, rounded up to 2 MiB. A free block is only ever handed out within the segment
that holds it (segments never merge), and a request takes the smallest free block that holds it
(best fit), splitting it. So freed blocks help a later request only where one segment's free
space is at least that request.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

MIB = 1024**2
SMALL_REQUEST = 1 * MIB
SHARED_SEGMENT = 20 * MIB
OWN_SEGMENT_FROM = 10 * MIB
SEGMENT_ROUNDING = 2 * MIB


def segments(requests: Iterable[tuple[float, float]]) -> dict[float, float]:
    """The large-pool segments (size: how many) that ``requests`` (bytes, how many), allocated
    one after the other into an empty cache, take. Small-pool requests are left out: they never
    hold a large block."""
    found: dict[float, float] = {}
    for size, count in requests:
        if size <= SMALL_REQUEST or count <= 0:
            continue
        if size < OWN_SEGMENT_FROM:
            segment, needed = float(SHARED_SEGMENT), count / (SHARED_SEGMENT // size)
        else:
            segment = float(math.ceil(size / SEGMENT_ROUNDING) * SEGMENT_ROUNDING)
            needed = count
        found[segment] = found.get(segment, 0.0) + needed
    return found


def reused(blocks: Mapping[float, float], free: Mapping[float, float]) -> float:
    """Bytes of ``blocks`` (size: how many) that land in the wholly free segments ``free``
    (size: how many) rather than in new ones: largest block first, each into the smallest
    segment space that holds it, whose remainder stays free for smaller blocks. Counts may be
    fractional (a share of a parameter's segments)."""
    spaces = sorted([size, count] for size, count in free.items() if count > 0)
    placed = 0.0
    for block in sorted(blocks, reverse=True):
        wanted = blocks[block]
        for space in list(spaces):
            if wanted <= 0:
                break
            size, count = space
            if size < block or count <= 0:
                continue
            per_space = size // block
            taken = min(wanted, count * per_space)
            placed += taken * block
            wanted -= taken
            used = taken / per_space
            space[1] = count - used
            if size - per_space * block > 0:
                spaces.append([size - per_space * block, used])
                spaces.sort()
    return placed
