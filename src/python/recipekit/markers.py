"""Sentinels that a typed section uses where a plain value cannot say enough.

``UNSET`` means "this key is absent from the framework config": NeMo-RL reads many keys with
``.get()``, and an absent key is not the same as ``null``. ``DERIVED`` means "computed from
another key when the plan is made", the typed form of a YAML ``${...}`` interpolation: it follows
an override of its source, while an explicit value stays put.
"""

from __future__ import annotations

import enum
from typing import Final, Literal


class Marker(enum.Enum):
    UNSET = "unset"
    DERIVED = "derived"

    def __repr__(self) -> str:
        return self.name


UNSET: Final = Marker.UNSET
DERIVED: Final = Marker.DERIVED

Unset = Literal[Marker.UNSET]
Derived = Literal[Marker.DERIVED]


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

    def resolve(self, artifact_dir: str) -> str:
        return f"{artifact_dir}/{self.file}" if self.file else artifact_dir
