"""Progress seen both ways: a rich bar on a real pseudo-terminal, plain timestamped lines on a
pipe or in CI; nothing on stdout either way."""

from __future__ import annotations

import io
import os
import pty
import re
import subprocess
import sys

import pytest

from recipekit.progress import on_terminal, progress

STAMP = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"
# A copy of 3 x 1 MiB, as a command would report it.
SCRIPT = """
import time
from recipekit.progress import progress
with progress("store import demo", total=3 * 2**20, counts_bytes=True, every_s=0) as bar:
    for _ in range(3):
        time.sleep(0.05)
        bar.advance(2**20)
print("stdout stays clean")
"""


def _run_on_pty(environ: dict[str, str], *args: str) -> tuple[str, str]:
    """Run SCRIPT (or ``args``, a Python command line) with stderr on a pseudo-terminal;
    (stdout, what the terminal received)."""
    leader, follower = pty.openpty()
    env = {**environ, "PYTHONPATH": os.pathsep.join(sys.path), "TERM": "xterm"}
    with subprocess.Popen(
        [sys.executable, *(args or ("-c", SCRIPT))],
        stdout=subprocess.PIPE,
        stderr=follower,
        env=env,
    ) as child:
        os.close(follower)
        received = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            received += chunk
        stdout = child.stdout.read() if child.stdout else b""
        assert child.wait() == 0, received.decode(errors="replace")
    os.close(leader)
    return stdout.decode(), received.decode(errors="replace")


def _without_ci() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("CI", "GITHUB_ACTIONS")}


def test_a_terminal_gets_a_bar_with_bytes_and_rate() -> None:
    stdout, terminal = _run_on_pty(_without_ci())
    assert stdout == "stdout stays clean\n"
    assert "━" in terminal  # rich's bar
    assert "3.0/3.0 MiB" in terminal  # bytes done of the total
    assert re.search(r"\d+(\.\d+)? [kMG]i?B/s", terminal)  # the rate (rich: decimal units)
    assert "\x1b[" in terminal  # redrawn in place
    assert not re.search(STAMP, terminal)


def test_in_ci_a_terminal_gets_plain_lines() -> None:
    _, terminal = _run_on_pty({**_without_ci(), "CI": "true"})
    assert "━" not in terminal and "\x1b[" not in terminal
    assert re.search(rf"{STAMP} store import demo: started \(3\.0 MiB\)", terminal)
    assert re.search(rf"{STAMP} store import demo: done: 3\.0 MiB of 3\.0 MiB \(100%\)", terminal)


def test_plain_lines_are_timestamped_and_say_how_far() -> None:
    out = io.StringIO()
    with progress("fetch", total=4, stream=out, every_s=0) as bar:
        bar.advance(1)
        bar.advance(3)
    lines = out.getvalue().splitlines()
    assert all(re.match(rf"{STAMP} fetch: ", line) for line in lines), lines
    assert lines[0].endswith("started (4)")
    assert "1 of 4 (25%)" in lines[1]
    assert "done: 4 of 4 (100%)" in lines[-1]


def test_a_failure_is_said_and_raised() -> None:
    out = io.StringIO()
    with pytest.raises(RuntimeError), progress("lock", stream=out, every_s=0):
        raise RuntimeError("registry down")
    assert re.search(rf"{STAMP} lock: failed after \d+ s$", out.getvalue().strip())


def test_a_pipe_is_not_a_terminal() -> None:
    read, write = os.pipe()
    with os.fdopen(write, "w") as stream:
        assert not on_terminal(stream, environ={})
    os.close(read)


# A real command: `recipekit layout` on the guide's DAPO stage moved to three B200 nodes
# (about two thousand candidates priced, a few seconds).
LAYOUT = [
    "-c",
    "from recipekit.cli.recipekit_cli import main; main()",
    "layout", "recipes.super3.dapo:dapo_gb200", "--nodes", "3", "--node", "B200", "--top", "2",
]  # fmt: skip


def test_recipekit_layout_on_a_terminal_shows_a_bar_and_its_table_stays_on_stdout() -> None:
    stdout, terminal = _run_on_pty(_without_ci(), *LAYOUT)
    assert stdout.startswith("dapo-gb200 on 3 x B200 ")
    assert "layout dapo-gb200: pricing" in terminal and "━" in terminal
    assert re.search(r"(\d+)/\1", terminal)  # every candidate priced, of the total
    assert "fit in memory" in terminal
    assert not re.search(STAMP, terminal)


def test_recipekit_layout_off_a_terminal_writes_timestamped_lines() -> None:
    done = subprocess.run([sys.executable, *LAYOUT], capture_output=True, text=True, env={
        **_without_ci(), "PYTHONPATH": os.pathsep.join(sys.path)
    }, check=True)  # fmt: skip
    assert done.stdout.startswith("dapo-gb200 on 3 x B200 ")
    lines = done.stderr.splitlines()
    assert all(re.match(rf"{STAMP} layout dapo-gb200: ", line) for line in lines), lines
    assert re.match(rf"{STAMP} layout dapo-gb200: pricing: started \((\d+)\)$", lines[0])
    total = lines[0].rsplit("(", 1)[1].rstrip(")")
    assert f"pricing: done: {total} of {total} (100%)" in done.stderr
    assert "planning the best: done: 2 of 2 (100%)" in done.stderr
