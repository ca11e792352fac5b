"""Source checkouts a stage mounts into its container, pinned by commit.

For code a stage's image does not ship yet (a framework's recipes at a newer commit, say), a
stage mounts a pinned checkout into its image. A stage names the checkout it needs
(:class:`CodeCheckout`); the cluster profile says where that checkout lives on shared storage
(``code_checkouts``); the job mounts it; ``submit`` and preflight check that it is at the
pinned commit.
"""

from __future__ import annotations

from pathlib import Path

import attrs

from recipekit.validators import absolute_path, matching, single_line


@attrs.frozen
class CodeCheckout:
    """A repository at one commit, mounted at ``mount`` in the stage's container."""

    # The key a cluster profile's ``code_checkouts`` uses for its path on shared storage.
    name: str = attrs.field(validator=single_line)
    # owner/name on GitHub, for messages and provenance.
    repository: str = attrs.field(validator=single_line)
    commit: str = attrs.field(
        validator=matching(r"[0-9a-f]{7,40}", "a commit is 7 to 40 lower-case hex digits")
    )
    # Where the container sees it.
    mount: str = attrs.field(validator=absolute_path)

    def as_json(self) -> dict[str, str]:
        return attrs.asdict(self)

    def __str__(self) -> str:
        return f"{self.repository}@{self.commit}"


def head_commit(checkout: Path) -> str | None:
    """The commit a git checkout is at, read from ``.git`` (no git binary needed: containers
    may lack one); None if ``checkout`` is not a git checkout."""
    git = checkout / ".git"
    if git.is_file():  # a worktree or submodule: "gitdir: PATH"
        pointer = git.read_text().strip().removeprefix("gitdir:").strip()
        git = (checkout / pointer).resolve()
    head_file = git / "HEAD"
    if not head_file.is_file():
        return None
    head = head_file.read_text().strip()
    if not head.startswith("ref:"):
        return head
    ref = head.removeprefix("ref:").strip()
    if (git / ref).is_file():
        return (git / ref).read_text().strip()
    packed = git / "packed-refs"
    if packed.is_file():
        for line in packed.read_text().splitlines():
            sha, _, name = line.partition(" ")
            if name == ref:
                return sha
    return None


def checkout_problem(path: Path, wanted: CodeCheckout) -> str | None:
    """Why ``path`` is not ``wanted`` at its commit; None when it is."""
    if not path.is_dir():
        return f"{path} does not exist ({wanted} should be checked out there)"
    head = head_commit(path)
    if head is None:
        return f"{path} is not a git checkout ({wanted} should be checked out there)"
    if not head.startswith(wanted.commit):
        return f"{path} is at {head[:12]}, not at the pinned {wanted.commit} of {wanted.repository}"
    return None
