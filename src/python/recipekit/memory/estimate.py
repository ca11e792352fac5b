"""Per-GPU memory of each phase of a stage, as terms that add up, against the GPU's HBM.

A phase is what one GPU holds at its peak while the stage does one thing (Megatron training,
vLLM generation, or, colocated, one after the other with what the framework keeps between).
Each term carries the settings that shrink it, so a layout that does not fit is answered with
its two largest terms and what to change.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any

import attrs

from recipekit.errors import Issue

GIB = 1024**3
# Over this share of HBM the plan warns: allocator fragmentation and framework buffers that no
# estimate sees (NCCL channels, cuBLAS workspaces, CUDA graphs) live in the last tenth.
WARN_FRACTION = 0.90


@attrs.frozen
class Term:
    name: str
    bytes: float
    # The keys that shrink this term, in the framework's own names.
    shrink: tuple[str, ...] = ()
    # How the figure was computed, one short line (shown in JSON and in `--format json`).
    detail: str = ""

    @property
    def gib(self) -> float:
        return self.bytes / GIB


@attrs.frozen
class Phase:
    """One GPU's peak during one part of a stage."""

    name: str
    # Which GPUs this phase runs on ("training GPUs", "generation GPUs", "all GPUs").
    gpus: str
    terms: tuple[Term, ...]
    # What the terms must fit in: the GPU's HBM, or a budget the framework carves out of it.
    limit_gib: float
    limit_name: str = "HBM"
    # Facts worth a line that are not bytes (sequences that fit in the KV cache, say).
    notes: tuple[str, ...] = ()
    # A phase that fills its budget by design (vLLM's KV cache) is only checked for overflow.
    warn_when_full: bool = True

    # Kept once summed: the layout search asks each shared phase of thousands of estimates.
    @functools.cached_property
    def total_bytes(self) -> float:
        return sum(t.bytes for t in self.terms)

    @property
    def fraction(self) -> float:
        return self.total_bytes / (self.limit_gib * GIB)

    @property
    def headroom_gib(self) -> float:
        return self.limit_gib - self.total_bytes / GIB

    def largest(self, count: int = 2) -> list[Term]:
        return sorted(self.terms, key=lambda t: t.bytes, reverse=True)[:count]

    def as_json(self) -> dict[str, Any]:
        return {
            "phase": self.name,
            "gpus": self.gpus,
            "total_gib": round(self.total_bytes / GIB, 2),
            "limit_gib": round(self.limit_gib, 2),
            "limit": self.limit_name,
            "percent": round(100 * self.fraction, 1),
            "headroom_gib": round(self.headroom_gib, 2),
            "terms": [
                {"name": t.name, "gib": round(t.gib, 2), "detail": t.detail} for t in self.terms
            ],
            **({"notes": list(self.notes)} if self.notes else {}),
        }


@attrs.frozen
class MemoryEstimate:
    phases: tuple[Phase, ...]
    # What the estimate leaves out or assumes, said once for the whole stage.
    assumptions: tuple[str, ...] = ()

    @property
    def peak(self) -> Phase:
        """The fullest phase (a vLLM budget, full by design, only when it is alone)."""
        checked = [p for p in self.phases if p.warn_when_full] or list(self.phases)
        return max(checked, key=lambda p: p.fraction)

    @property
    def headroom_gib(self) -> float:
        """The least free HBM of any phase (a vLLM budget, full by design, does not count)."""
        checked = [p for p in self.phases if p.warn_when_full] or list(self.phases)
        return min(p.headroom_gib for p in checked)

    def fits(self) -> bool:
        """No phase is over its limit: ``issues()`` has no error. The layout search asks this of
        thousands of estimates whose messages it never shows."""
        return not any(_over_limit(phase) for phase in self.phases)

    def issues(self) -> tuple[list[Issue], list[Issue]]:
        """(errors, warnings): a phase over HBM stops the plan, one over 90% warns."""
        errors, warnings = [], []
        for phase in self.phases:
            if _over_limit(phase):
                errors.append(_over(phase, "does not fit"))
            elif phase.fraction > WARN_FRACTION and phase.warn_when_full:
                warnings.append(_over(phase, "leaves under 10% of HBM free"))
        return errors, warnings

    def as_json(self) -> dict[str, Any]:
        return {
            "phases": [p.as_json() for p in self.phases],
            **({"assumptions": list(self.assumptions)} if self.assumptions else {}),
        }


def _over_limit(phase: Phase) -> bool:
    return phase.fraction > 1.0


def _over(phase: Phase, verdict: str) -> Issue:
    big = phase.largest(2)
    named = " and ".join(f"{t.name} {t.gib:.1f} GiB" for t in big)
    keys = list(dict.fromkeys(k for t in big for k in t.shrink))
    hint = f"to shrink them change {', '.join(keys)}" if keys else ""
    return Issue(
        f"memory.{phase.name}",
        f"{verdict}: {phase.total_bytes / GIB:.1f} GiB of {phase.limit_gib:.1f} GiB "
        f"({phase.limit_name}) per GPU ({100 * phase.fraction:.0f}%) on {phase.gpus}; "
        f"the largest terms are {named}",
        hint=hint,
    )


def phase_lines(estimate: MemoryEstimate, width: int = 96) -> list[str]:
    """The breakdown as the text plan shows it: a line per phase, then its terms in GiB."""
    lines = []
    for phase in estimate.phases:
        if phase.warn_when_full:
            head = (
                f"{phase.name} on {phase.gpus}: {phase.total_bytes / GIB:.1f} of "
                f"{phase.limit_gib:.1f} GiB ({100 * phase.fraction:.0f}%, "
                f"headroom {phase.headroom_gib:.1f} GiB)"
            )
        else:
            head = (
                f"{phase.name} on {phase.gpus}: {phase.limit_gib:.1f} GiB "
                f"({phase.limit_name}), {100 * phase.fraction:.0f}% used"
            )
        lines.append(head)
        shown = [f"{t.name} {t.gib:.1f}" for t in phase.terms if t.bytes >= GIB / 20]
        lines += _wrapped(", ".join(shown) + " GiB", width, "  ")
        lines += [f"  {note}" for note in phase.notes]
    return lines


def _wrapped(text: str, width: int, indent: str) -> list[str]:
    import textwrap

    return textwrap.wrap(text, width, initial_indent=indent, subsequent_indent=indent)


def terms(*items: Term | None) -> tuple[Term, ...]:
    """The terms that apply (None drops one)."""
    return tuple(t for t in items if t is not None)


def total(items: Iterable[Term]) -> float:
    return sum(t.bytes for t in items)
