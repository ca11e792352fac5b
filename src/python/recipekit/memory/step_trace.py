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


class Trace:
    """Allocations and frees, as tensor ids, played into a CachingAllocator as they come."""

    def __init__(self, allocator: CachingAllocator) -> None:
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
