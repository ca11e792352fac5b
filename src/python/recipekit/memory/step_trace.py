"""A training step's large allocations in the order Megatron-Core makes and frees them, played
through a block-level model of PyTorch's caching allocator: what it reserves beyond what is
allocated at once.

The trace follows Megatron-Core 0.19.2's local layer spec (the calibration harness's): per GPT
layer the pre-norm, the QKV projection, the unfused DotProductAttention (its bf16 raw scores,
their fp32 upcast, the fp32 softmax and its bf16 cast: fused_softmax.py forward_torch_softmax),
the output projection and residual, the MLP (mlp.py; gated: glu's silu output, offset linear
half and product), and in the backward pass each op's gradients allocated before the tensors it
saved are released (autograd frees a saved tensor when its node has run). Full recompute
rebuilds one checkpointed layer just before its backward pass; selective core_attn rebuilds the
scores. The loss keeps the fp32 logits (the vocabulary-parallel cross entropy), and the
optimizer's first step makes Adam's moments (and foreach AdamW's square roots) after the
backward pass, where the freed blocks are.
"""

from __future__ import annotations

import bisect
import math

from recipekit.memory.caching_allocator import (
    OWN_SEGMENT_FROM,
    SEGMENT_ROUNDING,
    SHARED_SEGMENT,
    SMALL_REQUEST,
)

# c10/cuda/CUDACachingAllocator.cpp: every block is a multiple of 512 bytes; a free block is
# split only where the rest is over 1 MiB (large pool).
BLOCK_ROUNDING = 512


class CachingAllocator:
    """The large pool of PyTorch's CUDA caching allocator: best fit over free blocks (the
    smallest that holds the request, then the lowest address), a block split where the rest
    exceeds 1 MiB, freed blocks merged with free neighbours in their segment, a new segment
    (20 MiB for requests under 10 MiB, else the request rounded to 2 MiB) where no free block
    holds a request, and segments never returned."""

    def __init__(self) -> None:
        # Per segment: its blocks, [offset, size, free], in address order.
        self.segments: list[list[list[int]]] = []
        self.free: list[tuple[int, int, int]] = []  # (size, segment, offset), sorted
        self.live: dict[int, tuple[int, int]] = {}  # tensor -> (segment, offset)
        self.reserved = 0
        self.allocated = 0
        self.peak = 0
        self.marks: list[int] = []  # reserved at the end of each step
        self.reserved_before = 0  # reserved when training starts

    def malloc(self, tensor: int, size: float) -> None:
        if size <= SMALL_REQUEST:
            return
        need = -(-int(math.ceil(size)) // BLOCK_ROUNDING) * BLOCK_ROUNDING
        free = self.free
        at = bisect.bisect_left(free, (need, -1, -1))
        if at < len(free):
            block_size, segment, offset = free.pop(at)
            blocks = self.segments[segment]
            # Blocks are in address order and offsets unique: the block that starts there.
            index = bisect.bisect_left(blocks, [offset])
        else:
            segment_size = (
                SHARED_SEGMENT
                if need < OWN_SEGMENT_FROM
                else -(-need // SEGMENT_ROUNDING) * SEGMENT_ROUNDING
            )
            segment, offset, block_size, index = len(self.segments), 0, segment_size, 0
            blocks = [[0, segment_size, 1]]
            self.segments.append(blocks)
            self.reserved += segment_size
        if block_size - need > SMALL_REQUEST:
            blocks[index] = [offset, need, 0]
            blocks.insert(index + 1, [offset + need, block_size - need, 1])
            bisect.insort(free, (block_size - need, segment, offset + need))
        else:
            blocks[index][2], need = 0, block_size
        self.live[tensor] = (segment, offset)
        allocated = self.allocated + need
        self.allocated = allocated
        if allocated > self.peak:
            self.peak = allocated

    def release(self, tensor: int) -> None:
        where = self.live.pop(tensor, None)
        if where is None:
            return
        segment, offset = where
        blocks = self.segments[segment]
        index = bisect.bisect_left(blocks, [offset])
        self.allocated -= blocks[index][1]
        blocks[index][2] = 1
        free = self.free
        # Merge with the free neighbours, taking them out of the free list.
        for neighbour in (index + 1, index - 1):
            if 0 <= neighbour < len(blocks) and blocks[neighbour][2]:
                other = blocks[neighbour]
                del free[bisect.bisect_left(free, (other[1], segment, other[0]))]
                low, high = (index, neighbour) if index < neighbour else (neighbour, index)
                blocks[low] = [blocks[low][0], blocks[low][1] + blocks[high][1], 1]
                del blocks[high]
                index = low
        bisect.insort(free, (blocks[index][1], segment, blocks[index][0]))


# c10/cuda/CUDACachingAllocator.cpp, Note [Expandable Segments]: with expandable_segments:True
# the large pool maps physical memory into its one reserved address range in 20 MiB pages
# (kLargeBuffer; the small pool in 2 MiB ones).
LARGE_PAGE = 20 * 1024**2


class ExpandableSegments:
    """The large pool of PyTorch's caching allocator under ``expandable_segments:True``
    (c10/cuda/CUDACachingAllocator.cpp, Note [Expandable Segments] and the code it names):
    one segment per stream, an address range as large as the GPU of which only the front is
    mapped, in 20 MiB pages. A request takes the smallest free block that holds it
    (``get_free_block``), the free block at the mapped end counted as the size it can grow to,
    so taken only where no other holds the request; a block is split wherever 512 bytes or more
    are left (``should_split``); a freed block merges with its free neighbours, so free space
    is never stranded in separate segments. Where no free block holds a request, the free block
    at the end grows by as many pages as the request lacks (``find_expandable_block``,
    ``map_block``). Pages are unmapped only on an out-of-memory retry or ``empty_cache``, which
    a training step does not reach: reserved memory is the mapped pages, and what it holds
    beyond the allocated peak is the free blocks below the end (holes between live blocks) and
    the last page's rest."""

    def __init__(self) -> None:
        # Its blocks, [offset, size, free], in address order, covering [0, mapped).
        self.blocks: list[list[int]] = []
        self.free: list[tuple[int, int]] = []  # (size, offset), sorted
        self.live: dict[int, int] = {}  # tensor -> offset
        self.reserved = 0
        self.allocated = 0
        self.peak = 0
        self.marks: list[int] = []
        self.reserved_before = 0

    def _tail(self) -> int | None:
        """The offset of the free block at the mapped end, if the last block is free."""
        if self.blocks and self.blocks[-1][2]:
            return self.blocks[-1][0]
        return None

    def malloc(self, tensor: int, size: float) -> None:
        if size <= SMALL_REQUEST:
            return
        need = -(-int(math.ceil(size)) // BLOCK_ROUNDING) * BLOCK_ROUNDING
        free, blocks = self.free, self.blocks
        tail = self._tail()
        at = bisect.bisect_left(free, (need, -1))
        if at < len(free) and free[at][1] == tail:
            # The end block counts as all it can grow to: any other that holds the request first.
            at = at + 1 if at + 1 < len(free) else at
        if at < len(free):
            block_size, offset = free.pop(at)
            index = bisect.bisect_left(blocks, [offset])
        else:
            # Grow the end: the free end block (if any) and the pages the request still lacks.
            start = tail if tail is not None else self.reserved
            have = self.reserved - start
            pages = -(-(need - have) // LARGE_PAGE)
            self.reserved += pages * LARGE_PAGE
            if tail is not None:
                del free[bisect.bisect_left(free, (have, tail))]
                blocks[-1][1] += pages * LARGE_PAGE
            else:
                blocks.append([start, pages * LARGE_PAGE, 1])
            offset, block_size, index = start, self.reserved - start, len(blocks) - 1
        if block_size - need >= BLOCK_ROUNDING:
            blocks[index] = [offset, need, 0]
            blocks.insert(index + 1, [offset + need, block_size - need, 1])
            bisect.insort(free, (block_size - need, offset + need))
        else:
            blocks[index][2], need = 0, block_size
        self.live[tensor] = offset
        self.allocated += need
        self.peak = max(self.peak, self.allocated)

    def release(self, tensor: int) -> None:
        offset = self.live.pop(tensor, None)
        if offset is None:
            return
        blocks, free = self.blocks, self.free
        index = bisect.bisect_left(blocks, [offset])
        self.allocated -= blocks[index][1]
        blocks[index][2] = 1
        for neighbour in (index + 1, index - 1):
            if 0 <= neighbour < len(blocks) and blocks[neighbour][2]:
                other = blocks[neighbour]
                del free[bisect.bisect_left(free, (other[1], other[0]))]
                low, high = (index, neighbour) if index < neighbour else (neighbour, index)
                blocks[low] = [blocks[low][0], blocks[low][1] + blocks[high][1], 1]
                del blocks[high]
                index = low
        bisect.insort(free, (blocks[index][1], blocks[index][0]))


class Trace:
    """Allocations and frees, as tensor ids, played into a CachingAllocator as they come."""

    def __init__(self, allocator: CachingAllocator | ExpandableSegments) -> None:
        self.allocator = allocator
        self.next = 0

    def a(self, size: float) -> int:
        self.next += 1
        self.allocator.malloc(self.next, size)
        return self.next

    def f(self, *tensors: int | None) -> None:
        for tensor in tensors:
            if tensor is not None:
                self.allocator.release(tensor)
