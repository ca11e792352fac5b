"""`./pants test` of one target with every process executed remotely, on BuildGrid and its bot.

tools/remote_cache.execution_grid starts PostgreSQL, BuildGrid with its execution service and a
buildbox bot on loopback (README, "CI at scale"). A clean clone with an empty local store runs
``RECIPEKIT_REMOTE_EXECUTION=grpc://HOST:PORT ./pants --pants-config-files=
pants.remote-execution.toml test TARGET``. Pants' own counters must show every process executed
remotely and none locally; the bot's log must show it ran the test's pytest command; the test
must pass; and once the grid is stopped, no process it started may be left.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from tests.integration.support.checkout import clone_checkout, run_pants
from tools.remote_cache import DEFAULT_BUILDBOX, execution_grid, free_port

BGD = Path("3rdparty.python/bgd.pex")
TARGET = "src/python/recipekit/keypaths_test.py"


def _descendants(root: int) -> set[int]:
    """Every live process below ``root`` (from /proc's parent links)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # gone meanwhile
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found: set[int] = set()
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_pants_test_executes_every_process_on_the_buildgrid_bot(tmp_path: Path) -> None:
    clone = clone_checkout(tmp_path / "clone")
    grid = tmp_path / "grid"
    with execution_grid(free_port(), grid, BGD.resolve(), DEFAULT_BUILDBOX) as address:
        done = run_pants(
            clone,
            "--pants-config-files=pants.remote-execution.toml",
            f"--local-store-dir={tmp_path / 'store'}",
            "--stats-log",
            "test",
            TARGET,
            env={"RECIPEKIT_REMOTE_EXECUTION": address},
        )
        started = _descendants(os.getpid())
    assert done.returncode == 0, done.stderr[-4000:]
    assert re.search(rf"✓ {re.escape(TARGET)}:tests succeeded", done.stderr), done.stderr[-4000:]

    counters = {
        name: int(value)
        for name, value in re.findall(r"^\s+(\w+): (\d+)$", done.stderr, re.MULTILINE)
    }
    assert counters["remote_execution_requests"] > 0
    assert counters["remote_execution_success"] == counters["remote_execution_requests"]
    assert counters["remote_execution_errors"] == 0
    assert counters["local_execution_requests"] == 0
    # The bot's own account: it ran the test's pytest command (Pants' runner Pex, on the file).
    bot_log = (grid / "bot.log").read_text()
    assert re.search(
        rf"Executing command: \./pytest_runner\.pex_pex_shim\.sh .*{re.escape(TARGET)}", bot_log
    ), bot_log[-4000:]

    assert started, "the grid's processes were not seen while it ran"
    assert not {pid for pid in started if _alive(pid)}
