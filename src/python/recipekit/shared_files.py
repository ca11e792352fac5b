"""Files on shared storage that several processes (and hosts) write: whole or not at all, and
one writer at a time where an update reads what it replaces."""

from __future__ import annotations

import fcntl
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def write_whole(target: Path, text: str, mode: int = 0o644) -> Path:
    """Write ``target`` whole or not at all: a uniquely named temporary file beside it, then a
    rename, so a reader never sees half a file and two writers never share a temporary."""
    handle, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w") as out:
            out.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


@contextmanager
def exclusive(lock_file: Path, *, wait: bool = True) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``lock_file`` (created if missing) for the block: other
    processes, on this host or another that shares the storage, wait for it. Without ``wait``,
    a lock another holds is a BlockingIOError at once."""
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_file, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
