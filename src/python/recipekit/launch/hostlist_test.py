from __future__ import annotations

import pytest

from recipekit.launch.hostlist import expand_hostlist

CASES = {
    "n1": ["n1"],
    "n[1-3],m7": ["n1", "n2", "n3", "m7"],
    "gpu[008-011,020]": ["gpu008", "gpu009", "gpu010", "gpu011", "gpu020"],
    "r[1-2]n[1-2]": ["r1n1", "r1n2", "r2n1", "r2n2"],
    "a-b[9-10],d": ["a-b9", "a-b10", "d"],
}


@pytest.mark.parametrize(("hostlist", "hosts"), CASES.items())
def test_expands_like_scontrol(hostlist: str, hosts: list[str]) -> None:
    # Debian's scontrol 22.05 (`scontrol show hostnames`) gave these, compared by hand (2026-12).
    assert expand_hostlist(hostlist) == hosts


@pytest.mark.parametrize("bad", ["n[1-2", "n[a-b]", "n[1-]"])
def test_refuses_malformed_lists(bad: str) -> None:
    with pytest.raises(ValueError, match="n\\["):
        expand_hostlist(bad)
