"""Waiting on files instead of sleeping: inotify (Linux) wakes a wait when a watched folder
changes, and the condition is checked then, never asked of Slurm in a loop.

A job's end is read from the cluster's jobcomp file (``JobCompType=jobcomp/filetxt``), which
slurmctld appends to as each run of a job ends, a requeued one included (its record says
``PENDING``): waiting on it costs no RPC, where ``scontrol show job`` five times a second costs
the controller and two shared cores a process each.
"""

from __future__ import annotations

import ctypes
import os
import select
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from tests.integration.support.local_slurm import TERMINAL_STATES, LocalSlurm

T = TypeVar("T")

# inotify(7): a file written, closed after writing, created or moved in.
_IN_MODIFY, _IN_CLOSE_WRITE, _IN_MOVED_TO, _IN_CREATE = 0x2, 0x8, 0x80, 0x100
_MASK = _IN_MODIFY | _IN_CLOSE_WRITE | _IN_MOVED_TO | _IN_CREATE
# A wait looks again this often even without an event (a folder created after the watch).
_RECHECK_S = 5.0


class FileEvents:
    """Wakes on any change in the watched folders (not their sub-folders)."""

    def __init__(self) -> None:
        self._libc = ctypes.CDLL(None, use_errno=True)
        self._fd = self._libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self._fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1")
        self._watched: set[Path] = set()

    def watch(self, *folders: Path) -> FileEvents:
        for folder in folders:
            folder.mkdir(parents=True, exist_ok=True)
            if folder in self._watched:
                continue
            if self._libc.inotify_add_watch(self._fd, bytes(folder), _MASK) < 0:
                raise OSError(ctypes.get_errno(), f"inotify_add_watch {folder}")
            self._watched.add(folder)
        return self

    def wait_until(self, condition: Callable[[], T | None], timeout: float, what: str) -> T:
        """``condition()``'s first true value, checked now and after each change."""
        deadline = time.monotonic() + timeout
        while True:
            found = condition()
            if found:
                return found
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"{what}: not after {timeout:.0f} s")
            select.select([self._fd], [], [], min(left, _RECHECK_S))
            try:
                while os.read(self._fd, 65536):
                    pass
            except BlockingIOError:
                pass

    def close(self) -> None:
        os.close(self._fd)


def job_ended(cluster: LocalSlurm, job_id: str) -> Callable[[], str | None]:
    """The job's final state once its last run has ended for good (not requeued)."""

    def ended() -> str | None:
        records = cluster.jobcomp_records(job_id)
        state = records[-1].get("JobState", "").split()[0] if records else ""
        return state if state in TERMINAL_STATES else None

    return ended
