"""Sentinels that a typed section uses where a plain value cannot say enough.

``UNSET`` means "this key is absent from the framework config": NeMo-RL reads many keys with
``.get()``, and an absent key is not the same as ``null``. ``DERIVED`` means "computed from
another key when the plan is made", the typed form of a YAML ``${...}`` interpolation: it follows
an override of its source, while an explicit value stays put.
"""

from __future__ import annotations

import enum
from typing import Any, Final, Literal, TypeVar

T = TypeVar("T")
D = TypeVar("D")


class Marker(enum.Enum):
    UNSET = "unset"
    DERIVED = "derived"

    def __repr__(self) -> str:
        return self.name


UNSET: Final = Marker.UNSET
DERIVED: Final = Marker.DERIVED

Unset = Literal[Marker.UNSET]
Derived = Literal[Marker.DERIVED]


def given(value: T | Unset, default: D) -> T | D:
    """``value`` where the key is set; where it is absent, ``default``: what the framework does
    without it (or None, where a reader only shows it)."""
    return default if value is UNSET else value


def is_set(value: object) -> bool:
    """A key the config gives a value: neither absent (UNSET), left to be derived (DERIVED)
    nor null."""
    return value is not None and not isinstance(value, Marker)


def given_at(section: object, *names: str) -> Any:
    """The value at ``section.<names...>``; None where a step is absent (UNSET, None, or a key
    that this schema version does not have). For what a plan shows, not what it decides."""
    value: Any = section
    for name in names:
        if value is None or value is UNSET:
            return None
        value = getattr(value, name, None)
    return None if value is UNSET else value


class RunInput(str):
    """The path of one of the stage's input artifacts, by role (``model``, ``data``,
    ``teacher_<name>``): a string key that follows the stage's lineage.

    Like the ``${art:model,path}`` of Nemotron's YAML, it is resolved when the plan is made, so
    ``--set run.model=super35-sft-model:v3`` moves every key that reads ``RunInput("model")``.
    Unresolved it reads ``${run.model}``.
    """

    role: str

    def __new__(cls, role: str, file: str = "") -> RunInput:
        text = f"${{run.{role}}}" + (f"/{file}" if file else "")
        made = super().__new__(cls, text)
        made.role = role
        made.file = file
        return made

    file: str

    def __getnewargs__(self) -> tuple[str, str]:  # type: ignore[override]
        # A copy or a pickle is made again from the role and file; from the text alone it
        # would read the text as a role ("${run.${run.model}}").
        return self.role, self.file

    def resolve(self, artifact_dir: str) -> str:
        return f"{artifact_dir}/{self.file}" if self.file else artifact_dir
