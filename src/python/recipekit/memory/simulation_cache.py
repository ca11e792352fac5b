"""The allocator simulation's results, kept on disk by what they were computed from.

Playing a Super 3.5 stage's step through the caching-allocator model (``step_trace``) takes
tens of thousands of block operations: most of a ``plan`` process of a Megatron-Bridge stage,
for a result that depends only on the model, the setup and the simulation's own code. So the
result is stored under a key of all three, and the next plan of the same shape reads it:

- the key hashes the simulation's arguments (their attrs ``repr``: every field, exact floats)
  with the source of the modules that compute it, so an edit of the model is a new key;
- a result is written to a temporary file and renamed into place: a reader sees a whole
  result or none, and concurrent plans write the same bytes;
- the directory is ``$RECIPEKIT_CACHE_DIR``, else ``$XDG_CACHE_HOME/recipekit``, else
  ``~/.cache/recipekit``; where it cannot be read or written, the result is computed and the
  plan goes on (a cache is never a reason to fail).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

VARIABLE = "RECIPEKIT_CACHE_DIR"
# The modules whose code computes a simulated step (megatron: what is allocated in which
# order; step_trace and caching_allocator: what the allocator does with it).
_SOURCES = ("megatron.py", "step_trace.py", "caching_allocator.py")


def cache_dir() -> Path:
    explicit = os.environ.get(VARIABLE)
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "recipekit"


@functools.cache
def _code_digest() -> str:
    digest = hashlib.sha256()
    for name in _SOURCES:
        digest.update(Path(__file__).with_name(name).read_bytes())
    return digest.hexdigest()


def cached_pair(
    arguments: tuple[object, ...], compute: Callable[[], tuple[float, float]]
) -> tuple[float, float]:
    """``compute()``, or the result a plan stored for the same ``arguments`` and code."""
    try:
        key = hashlib.sha256(f"{_code_digest()}\n{arguments!r}".encode()).hexdigest()
    except OSError:  # the sources are not readable (a zipped install): no key, no cache
        return compute()
    path = cache_dir() / "allocator" / f"{key}.json"
    try:
        first, second = json.loads(path.read_text())
        return float(first), float(second)
    except (OSError, ValueError, TypeError):
        pass
    result = compute()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".", suffix=".tmp")
        try:
            with os.fdopen(fd, "w") as out:
                json.dump(list(result), out)
            os.replace(temporary, path)
        except BaseException:
            os.unlink(temporary)
            raise
    except OSError:
        pass
    return result
