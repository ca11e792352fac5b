"""What a user sees when a recipe, an override or a YAML file is wrong.

Every problem is an :class:`Issue` that names the key path, the value and the reason; a
:class:`RecipeError` carries one or more of them. The CLI prints these without a traceback.
"""

from __future__ import annotations

import difflib
import errno
from collections.abc import Iterable, Sequence
from typing import Any

import attrs

_NO_VALUE = object()


@attrs.frozen
class Issue:
    """One problem (or, as a warning, one suspicious setting) at one key path."""

    path: str
    message: str
    value: Any = attrs.field(default=_NO_VALUE, eq=False)
    hint: str = ""

    def render(self) -> str:
        where = self.path or "<recipe>"
        shown = "" if self.value is _NO_VALUE else f" = {_shown(self.value)}"
        text = f"{where}{shown}: {self.message}"
        return f"{text} ({self.hint})" if self.hint else text

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.path, "message": self.message}
        if self.value is not _NO_VALUE:
            out["value"] = self.value
        if self.hint:
            out["hint"] = self.hint
        return out


# A value longer than this is cut in a message (an interpolation can make one of megabytes: a
# string times a number); the JSON form keeps it whole.
SHOWN_CHARS = 200


def _shown(value: Any) -> str:
    text = repr(value)
    if len(text) <= SHOWN_CHARS:
        return text
    return f"{text[: SHOWN_CHARS - 40]}... ({len(text):,} characters)"


class RecipeError(Exception):
    """A recipe, an override or an input file that cannot become a plan."""

    def __init__(self, issues: Sequence[Issue], *, context: str = "") -> None:
        self.issues = tuple(issues)
        self.context = context
        super().__init__(self.render())

    def render(self) -> str:
        head = f"{self.context}: " if self.context else ""
        if len(self.issues) == 1:
            return head + self.issues[0].render()
        lines = [f"{head}{len(self.issues)} problems"]
        lines += [f"  - {issue.render()}" for issue in self.issues]
        return "\n".join(lines)

    def under(self, prefix: str) -> RecipeError:
        """The same issues with their paths placed below ``prefix``."""
        moved = [attrs.evolve(i, path=join_path(prefix, i.path)) for i in self.issues]
        return RecipeError(moved, context=self.context)


class FieldError(ValueError):
    """Raised by a field validator; the section and field name are filled in by the caller."""

    def __init__(self, message: str, value: Any = _NO_VALUE, hint: str = "") -> None:
        self.message = message
        self.value = value
        self.hint = hint
        super().__init__(message)


def join_path(*parts: str | int) -> str:
    text = ""
    for part in parts:
        if part == "" or part is None:
            continue
        if isinstance(part, int):
            text += f"[{part}]"
        elif part.startswith("["):
            text += part
        else:
            text = f"{text}.{part}" if text else str(part)
    return text


def did_you_mean(word: str, choices: Iterable[str], *, what: str = "keys", most: int = 3) -> str:
    """A 'did you mean' hint for a misspelt key (or value: ``what`` names them), the ``most``
    closest, or the list of valid ones when nothing is close."""
    options = sorted(choices)
    close = difflib.get_close_matches(word, options, n=most, cutoff=0.6)
    if close:
        return "did you mean " + " or ".join(repr(c) for c in close) + "?"
    if len(options) <= 12:
        return f"valid {what}: " + ", ".join(options)
    return f"{len(options)} valid {what}, none close to {word!r}"


# What the file system's refusals mean for a user, where strerror is terse or misleading.
_OS_ERROR_TEXT = {
    errno.ENOSPC: "no space left on the device (or no free inode)",
    errno.EDQUOT: "over the disk quota",
    errno.EROFS: "the file system is mounted read-only",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.ENOTDIR: "a file is where a folder should be",
    errno.EISDIR: "a folder is where a file should be",
    errno.ELOOP: "too many levels of links (a link loop?)",
    errno.ENAMETOOLONG: "a name or path is too long",
}


def os_error_reason(exc: OSError) -> str:
    """What an OSError means for a user, without the path."""
    return _OS_ERROR_TEXT.get(exc.errno or 0) or exc.strerror or str(exc)


def os_error_text(exc: OSError) -> str:
    """One line for an OSError: the path it names, then what the refusal means."""
    reason = os_error_reason(exc)
    where = exc.filename if exc.filename is not None else ""
    return f"{where}: {reason}" if where else reason
