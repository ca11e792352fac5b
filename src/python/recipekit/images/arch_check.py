"""The architecture lint: no recipe or container may point at a one-architecture artifact.

Every stage target ships for linux/amd64 and linux/arm64 (one Pex, one two-platform image), so
an ``x86_64`` wheel URL, an ``_amd64.deb`` or a ``--platform linux/amd64`` pin in ``recipes/``
or ``containers/`` is a GB200 (or B200) job that breaks at start-up. A reference is accepted
when the same file also names its twin for the other architecture (the same text with
``x86_64``/``aarch64`` or ``amd64``/``arm64`` swapped), or when its line says
``arch-lint: allow`` with a reason.

Stdlib only and runnable as a script (``python arch_check.py FILE...``): the Pants plugin runs
this file as it is in the repo (``./pants lint``), and the tests import it.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Iterator
from typing import NamedTuple

# Spellings of one architecture and of its twin.
TWINS = {"x86_64": "aarch64", "aarch64": "x86_64", "amd64": "arm64", "arm64": "amd64"}
_ARCH = r"(?P<arch>x86_64|aarch64|amd64|arm64)"
# Each pattern names one architecture-specific artifact; `arch` is the architecture.
PATTERNS = {
    "wheel": re.compile(r"[\w.+-]*[-_.]" + _ARCH + r"\.whl\b"),
    "debian package": re.compile(r"[\w.+~-]+_" + _ARCH + r"\.deb\b"),
    "url": re.compile(
        r"https?://[^\s\"'<>)]*?(?<![A-Za-z0-9])" + _ARCH + r"(?![A-Za-z0-9])[^\s\"'<>)]*"
    ),
    "platform pin": re.compile(r"--platform[= ]linux/" + _ARCH + r"\b"),
    "apt architecture": re.compile(r"\[arch=" + _ARCH + r"\]"),
}
ALLOW = "arch-lint: allow"


class Finding(NamedTuple):
    path: str
    line: int
    kind: str
    text: str
    arch: str

    def render(self) -> str:
        return (
            f"{self.path}:{self.line}: {self.kind} for {self.arch} only: {self.text} "
            f"(stages run on both architectures: add its {TWINS[self.arch]} twin, or mark the "
            f"line '{ALLOW} <reason>')"
        )


def _twin(text: str, start: int, end: int, arch: str) -> str:
    return text[:start] + TWINS[arch] + text[end:]


def check_text(path: str, text: str) -> Iterator[Finding]:
    for number, line in enumerate(text.splitlines(), start=1):
        if ALLOW in line:
            continue
        # One finding per architecture word: a wheel inside a URL is reported once, as a wheel.
        reported: set[int] = set()
        for kind, pattern in PATTERNS.items():
            for match in pattern.finditer(line):
                arch = match.group("arch")
                start, end = match.span("arch")
                found = match.group(0)
                twin = _twin(found, start - match.start(), end - match.start(), arch)
                if twin not in text and start not in reported:
                    reported.add(start)
                    yield Finding(path, number, kind, found, arch)


def check_files(paths: Iterable[str]) -> list[Finding]:
    findings: list[Finding] = []
    for path in sorted(paths):
        with open(path, encoding="utf-8", errors="replace") as handle:
            findings += check_text(path, handle.read())
    return findings


def main(argv: list[str]) -> int:
    findings = check_files(argv)
    for finding in findings:
        print(finding.render())
    print(f"arch-lint: {len(argv)} files, {len(findings)} one-architecture references")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
