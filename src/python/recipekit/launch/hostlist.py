"""Slurm's compressed host lists (``SLURM_JOB_NODELIST``), expanded without Slurm's clients.

Inside a container image (pyxis, an OCI bundle) ``scontrol`` is usually absent, yet the job step
must know the allocation's nodes. Syntax as ``scontrol show hostnames`` reads it: names separated
by commas outside brackets, each bracket a comma list of numbers or zero-padded ranges
(``gpu[001-003,010]``), several brackets in one name giving their product (``r[1-2]n[1-2]``).
"""

from __future__ import annotations

import re

from recipekit.delimited import split_top_level

_BRACKET = re.compile(r"\[([^\]]*)\]")


def _numbers(spec: str, hostlist: str) -> list[str]:
    out = []
    for item in spec.split(","):
        low, dash, high = item.partition("-")
        if not low.isdigit() or (dash and not high.isdigit()):
            raise ValueError(f"{hostlist!r}: {item!r} is not a number or range")
        width = len(low)
        out += [str(n).zfill(width) for n in range(int(low), int(high or low) + 1)]
    return out


def _expand_name(name: str, hostlist: str) -> list[str]:
    match = _BRACKET.search(name)
    if match is None:
        return [name]
    head, tail = name[: match.start()], name[match.end() :]
    return [
        head + number + rest
        for number in _numbers(match.group(1), hostlist)
        for rest in _expand_name(tail, hostlist)
    ]


def expand_hostlist(hostlist: str) -> list[str]:
    """``n[1-3],m7`` -> ``["n1", "n2", "n3", "m7"]``, in Slurm's order."""
    return [
        host
        for name in split_top_level(hostlist.strip(), "[]")
        if name
        for host in _expand_name(name, hostlist)
    ]
