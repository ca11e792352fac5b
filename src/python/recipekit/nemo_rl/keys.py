"""The keys a NeMo-RL version has, as the rules ask for them.

One rule set serves every pinned NeMo-RL version (super-v3, super-v3.5-posttraining, whose
schema is main's), and their sections differ: a key one version declares is no attribute of the
other's section. A rule reads such a key with :func:`value_of`, which gives the stated absent
value where the stage's version does not declare it, and refuses a name that no pinned version
declares at all: a misspelt key is an error the first time the rule runs (and in
``rule_probes_test``, which reads every literal name a rule passes), not a probe that reads
None on every version and never fires.
"""

from __future__ import annotations

import functools
import keyword
from typing import Any, TypeVar, overload

import attrs

from recipekit.errors import did_you_mean
from recipekit.nemo_rl import SUPER35_TYPES, SUPER_V3_TYPES
from recipekit.upstream.declared import table

T = TypeVar("T")

# The pinned sources whose config classes the sections of each version model (the main schema
# models super-v3.5-posttraining's).
PINNED = (SUPER_V3_TYPES, SUPER35_TYPES)

# Keys of recipekit's sections that no pinned config class declares (each section's
# ``undeclared_keys`` says why it states them) and that a rule reads where one version's
# section lacks them. rule_probes_test checks each is a field of some section and still
# undeclared upstream.
UNDECLARED = frozenset(
    {
        # env: NeMo-RL reads them (grpo.py, nemo_gym.py) without declaring them; main only.
        "should_use_nemo_gym",
        "policy_max_input_tokens",
        "thinking_tags",
    }
)


class UnknownKeyError(AttributeError):
    """A rule asked for a key no pinned NeMo-RL version declares (a recipekit bug)."""


@overload
def value_of(section: object, key: str) -> Any: ...
@overload
def value_of(section: object, key: str, absent: T) -> Any | T: ...
def value_of(section: object, key: str, absent: object = None) -> Any:
    """The value of ``key`` (the field name: ``_x`` is written ``x``) of ``section``, or
    ``absent`` where it has none: the stage's version does not declare the key, or the section
    itself is absent (None, UNSET, or a value that is no section). A mapping is a section no
    recipekit class states (a key the version's table declares, ``trtllm_cfg``): its keys are
    read as written. A key that no pinned version declares raises :class:`UnknownKeyError`."""
    cls = type(section)
    if (cls, key) not in _ASKED:
        _check(cls, key)
    if isinstance(section, dict):
        return section.get(key, absent)
    return getattr(section, key, absent)


def has_key(section: object, key: str) -> bool:
    """Whether ``section``'s version declares ``key`` (a field of its section class; a key a
    mapping holds), the name checked as :func:`value_of` checks it."""
    cls: type = type(section)
    if (cls, key) not in _ASKED:
        _check(cls, key)
    return key in section if isinstance(section, dict) else key in _fields(cls)


# (class, key) pairs already checked: a rule asks the same few dozen at every plan.
_ASKED: set[tuple[type, str]] = set()


def _check(cls: type, key: str) -> None:
    if key not in _fields(cls) and key not in declared_keys():
        hint = did_you_mean(key, sorted(declared_keys()))
        raise UnknownKeyError(
            f"no pinned NeMo-RL version ({', '.join(PINNED)}) declares a key {key!r}"
            + (f" ({hint})" if hint else "")
        )
    _ASKED.add((cls, key))


@functools.cache
def _fields(cls: type) -> frozenset[str]:
    return frozenset(attrs.fields_dict(cls)) if attrs.has(cls) else frozenset()


@functools.cache
def declared_keys() -> frozenset[str]:
    """Every key some pinned version declares, by the field name a section gives it, and the
    keys of :data:`UNDECLARED`. (The tables are those the sections were built from: read once.)"""
    keys = {key for label in PINNED for cls in table(label).classes.values() for key in cls.keys}
    return frozenset({*UNDECLARED, *map(field_name, keys)})


def field_name(key: str) -> str:
    """The field a section gives the upstream key ``key`` (``_x`` -> ``x``, ``from`` ->
    ``from_``), as recipekit.sections names the keys it adds."""
    name = key.lstrip("_") if key.startswith("_") else key
    return f"{name}_" if keyword.iskeyword(name) or not name.isidentifier() else name
