"""Artifact references: which version of a named artifact a stage reads.

A reference is written ``NAME:SELECTOR``, where the selector is one of

- ``latest`` (the default when there is no ``:``): the newest version;
- ``vN``: W&B's version number, for pinning (``super35-rl-rlvr-model:v3``);
- ``step-N``: the version saved at training step N, for a *selected step* (RLVR step 120 as
  the MOPD student). The tracker tags every checkpoint it publishes with the alias ``step-N``,
  so the same text resolves in W&B (``run.use_artifact("super35-rl-rlvr-model:step-120")``).

Anything else after the ``:`` is rejected: a misspelt ``:lastest`` would otherwise resolve to
nothing, or in W&B to an alias somebody once set by hand.
"""

from __future__ import annotations

import re
from typing import Any

import attrs

from recipekit.errors import FieldError, Issue, RecipeError, did_you_mean
from recipekit.validators import single_line_problem

# W&B's own rule for artifact names (letters, digits, '-', '_', '.'); recipekit also refuses a
# leading or trailing separator, which W&B accepts but nobody means. Each is matched whole
# (fullmatch): "$" alone also matches before a final newline, and a name is a folder's name.
_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,126}[A-Za-z0-9])?")
_VERSION = re.compile(r"v(0|[1-9][0-9]*)")
_STEP = re.compile(r"step-(0|[1-9][0-9]*)")
LATEST = "latest"


def artifact_name_problem(name: object) -> str:
    """Why ``name`` is not a valid artifact name, or "" when it is."""
    if not isinstance(name, str):
        return f"an artifact name is a string, not {type(name).__name__}"
    if not name:
        return "an artifact name cannot be empty"
    problem = single_line_problem(name)
    if problem:
        return f"an artifact name {problem}"
    if ":" in name or "/" in name:
        return "an artifact name has no ':' or '/' (the version goes after ':' in a reference)"
    if len(name) > 128:
        return f"an artifact name has at most 128 characters, this one has {len(name)}"
    if not _NAME.fullmatch(name):
        return (
            "an artifact name uses letters, digits, '-', '_' and '.', and starts and ends "
            "with a letter or digit"
        )
    return ""


def _check_name(_: Any, __: Any, value: str) -> None:
    problem = artifact_name_problem(value)
    if problem:
        raise FieldError(problem, value)


def _check_selector(_: Any, __: Any, value: str) -> None:
    if value == LATEST or _VERSION.fullmatch(value) or _STEP.fullmatch(value):
        return
    problem = single_line_problem(value)
    if problem:
        raise FieldError(f"a version {problem}", value)
    raise FieldError(
        "a version is 'latest', 'vN' (a W&B version) or 'step-N' (a selected training step)",
        value,
        hint=did_you_mean(value, [LATEST]) if value[:1] not in "vs" else "",
    )


@attrs.frozen
class ArtifactRef:
    """A named artifact at one version: ``super35-sft-model:latest``."""

    name: str = attrs.field(validator=_check_name)
    selector: str = attrs.field(default=LATEST, validator=_check_selector)

    @classmethod
    def at_version(cls, name: str, version: int) -> ArtifactRef:
        return cls(name, f"v{version}")

    @classmethod
    def at_step(cls, name: str, step: int) -> ArtifactRef:
        return cls(name, f"step-{step}")

    @property
    def version(self) -> int | None:
        found = _VERSION.fullmatch(self.selector)
        return int(found.group(1)) if found else None

    @property
    def step(self) -> int | None:
        """The selected training step, when the reference names one."""
        found = _STEP.fullmatch(self.selector)
        return int(found.group(1)) if found else None

    def __str__(self) -> str:
        return f"{self.name}:{self.selector}"


# Where a job sees its input artifacts: the cluster profile mounts its artifact store here, one
# directory per name and version (``/artifacts/super35-sft-model/latest``), so a plan names
# the version it was pinned to and changes when the pin does.
ARTIFACTS_ROOT = "/artifacts"


def artifact_path(ref: ArtifactRef) -> str:
    return f"{ARTIFACTS_ROOT}/{ref.name}/{ref.selector}"


def parse_ref(text: str, *, path: str = "") -> ArtifactRef:
    """``NAME[:latest|:vN|:step-N]`` -> ArtifactRef; a RecipeError naming ``path`` otherwise."""
    name, sep, selector = text.strip().partition(":")
    try:
        return ArtifactRef(name, selector if sep else LATEST)
    except FieldError as exc:
        raise RecipeError([Issue(path, exc.message, value=text, hint=exc.hint)]) from None


@attrs.frozen
class ExternalInput:
    """An input that is not an artifact: a path from the environment, or data a framework ships.

    The recipe's ``pretrain`` reads its checkpoint from ``SUPER35_INIT_CHECKPOINT``; long-context
    SFT reads Megatron-Bridge's built-in dataset.
    """

    description: str
    env_var: str = ""

    def __str__(self) -> str:
        return f"${{{self.env_var}}}" if self.env_var else f"({self.description})"


InputSource = ArtifactRef | ExternalInput
