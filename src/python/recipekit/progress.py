"""What a long command is doing while it runs: a bar on a terminal, timestamped lines otherwise.

On a terminal (stderr is a TTY, not in CI, not ``TERM=dumb``) :func:`progress` shows a ``rich``
progress bar: bytes done of the total and the rate for a copy, or a spinner and the elapsed time
for a wait with nothing to count. Anywhere else (a pipe, a CI log, a job's log) it writes plain
lines, each stamped with UTC time: one when the work starts, one at most every ``every_s``
seconds while it runs, and one when it ends (or fails). Everything goes to stderr, so stdout
(``--format json``) is the same with or without it. ``rich`` is imported only when a bar is drawn.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

import attrs

CI_VARIABLES = ("CI", "GITHUB_ACTIONS")
PLAIN_EVERY_S = 10.0


def on_terminal(stream: TextIO, environ: dict[str, str] | os._Environ[str] | None = None) -> bool:
    """Whether ``stream`` gets a live bar: a TTY, outside CI, on a terminal that can redraw."""
    env = os.environ if environ is None else environ
    in_ci = any(env.get(name, "").lower() not in ("", "0", "false") for name in CI_VARIABLES)
    isatty = getattr(stream, "isatty", lambda: False)
    return bool(isatty()) and not in_ci and env.get("TERM", "") != "dumb"


def human_bytes(count: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(count) < 1024 or unit == "TiB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024
    raise AssertionError("unreachable")


def tree_bytes(path: Path) -> int:
    """The bytes of the regular files at or under ``path`` (links not followed)."""
    if path.is_file() and not path.is_symlink():
        return path.stat().st_size
    total = 0
    for folder, _, files in os.walk(path):
        for name in files:
            file = Path(folder, name)
            if not file.is_symlink():
                total += file.stat().st_size
    return total


def utc_stamp() -> str:
    """Now, in UTC, to the second (``2026-12-05T06:23:28Z``)."""
    # Imported here: lineage.store, on the plan path, imports this module (plan under 0.3 s).
    from datetime import UTC, datetime

    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@attrs.define
class _Plain:
    """Timestamped lines: start, every ``every_s`` seconds of progress, end."""

    what: str
    total: int | None
    counts_bytes: bool
    stream: TextIO
    every_s: float
    started: float = attrs.field(factory=time.monotonic)
    done: int = 0
    last_line: float = attrs.field(factory=time.monotonic)

    def line(self, text: str) -> None:
        self.stream.write(f"{utc_stamp()} {self.what}: {text}\n")
        self.stream.flush()

    def amount(self, count: float) -> str:
        return human_bytes(count) if self.counts_bytes else f"{count:.0f}"

    def so_far(self) -> str:
        elapsed = max(time.monotonic() - self.started, 1e-9)
        if not self.counts_bytes and not self.total and not self.done:
            return f"{elapsed:.0f} s"
        text = self.amount(self.done)
        if self.total:
            text += f" of {self.amount(self.total)} ({100 * self.done / self.total:.0f}%)"
        if self.counts_bytes:
            text += f", {human_bytes(self.done / elapsed)}/s"
        return text + f", {elapsed:.0f} s"

    def start(self) -> None:
        self.line("started" + (f" ({self.amount(self.total)})" if self.total else ""))

    def advance(self, amount: int) -> None:
        self.done += amount
        self.tick()

    def tick(self) -> None:
        now = time.monotonic()
        if now - self.last_line >= self.every_s:
            self.last_line = now
            self.line(self.so_far())

    def note(self, text: str) -> None:
        self.line(text)

    def set_total(self, total: int) -> None:
        self.total = total

    def stop(self, failed: bool) -> None:
        self.line(("failed after " if failed else "done: ") + self.so_far())


@attrs.define
class _Bar:
    """A ``rich`` bar (or a spinner when there is nothing to count) on a terminal."""

    what: str
    total: int | None
    counts_bytes: bool
    stream: TextIO
    live: Any = None
    task: Any = None

    def start(self) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            MofNCompleteColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
            TransferSpeedColumn,
        )

        columns: list[Any] = [SpinnerColumn(), TextColumn("{task.description}")]
        if self.counts_bytes:
            columns += [BarColumn(), DownloadColumn(binary_units=True), TransferSpeedColumn()]
        elif self.total:
            columns += [BarColumn(), MofNCompleteColumn()]
        columns += [TimeElapsedColumn(), TextColumn("{task.fields[note]}")]
        console = Console(file=self.stream, force_terminal=True)
        self.live = Progress(*columns, console=console, transient=False)
        self.live.start()
        self.task = self.live.add_task(self.what, total=self.total, note="")

    def advance(self, amount: int) -> None:
        self.live.advance(self.task, amount)

    def tick(self) -> None:
        self.live.refresh()

    def note(self, text: str) -> None:
        self.live.update(self.task, note=text)

    def set_total(self, total: int) -> None:
        self.live.update(self.task, total=total)

    def stop(self, failed: bool) -> None:
        if failed:
            self.live.update(self.task, note="failed")
        self.live.stop()


class _Silent:
    """Nothing shown: a caller that is not a command (a test, a library use) asked for quiet."""

    def start(self) -> None:
        pass

    def advance(self, amount: int) -> None:
        pass

    def tick(self) -> None:
        pass

    def note(self, text: str) -> None:
        pass

    def set_total(self, total: int) -> None:
        pass

    def stop(self, failed: bool) -> None:
        pass


@attrs.frozen
class Tracker:
    """What the work tells as it goes: bytes or items done, or a short note."""

    _shown: _Plain | _Bar | _Silent

    def advance(self, amount: int = 1) -> None:
        self._shown.advance(amount)

    def tick(self) -> None:
        """Nothing counted, time passed (a wait): the plain lines still come every so often."""
        self._shown.tick()

    def note(self, text: str) -> None:
        self._shown.note(text)

    def set_total(self, total: int) -> None:
        """The work's size, learnt once it started (a child process that counts first)."""
        self._shown.set_total(total)


@contextlib.contextmanager
def progress(
    what: str,
    *,
    total: int | None = None,
    counts_bytes: bool = False,
    stream: TextIO | None = None,
    terminal: bool | None = None,
    every_s: float = PLAIN_EVERY_S,
    silent: bool = False,
) -> Iterator[Tracker]:
    """Show ``what`` is being done for as long as the block runs.

    ``total``: how many bytes (``counts_bytes``) or items the work is, None when unknown (a
    wait). ``terminal`` overrides the choice :func:`on_terminal` makes for ``stream`` (stderr).
    ``silent``: show nothing (the same code run where nobody watches).
    """
    out = sys.stderr if stream is None else stream
    bar = on_terminal(out) if terminal is None else terminal
    shown: _Plain | _Bar | _Silent
    if silent:
        shown = _Silent()
    elif bar:
        shown = _Bar(what, total, counts_bytes, out)
    else:
        shown = _Plain(what, total, counts_bytes, out, every_s)
    shown.start()
    failed = True
    try:
        yield Tracker(shown)
        failed = False
    finally:
        shown.stop(failed)
