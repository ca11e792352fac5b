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
