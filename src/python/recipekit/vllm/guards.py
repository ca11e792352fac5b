"""vLLM 0.25.1's engine config classes' own checks, replayed on the engine arguments a config
gives.

``generated/config_guards.json`` (``tools/generate_vllm_guards.py``) holds, for each config
class ``EngineArgs.create_engine_config`` builds from the engine's arguments, which field each
argument is handed to, the value a field has where the arguments leave it, and what runs when
the class is built (its ``__post_init__`` and pydantic after-validators) as a program.
``reached`` replays each on the arguments it is given and those defaults
(``recipekit.upstream.replay``); an argument that is not given and whose value vLLM computes,
or that the caller marks unknown, has no value, so a check that reads it is not evaluated.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs

from recipekit.upstream import conditions
from recipekit.upstream.replay import constant_defaults, described, programs, replay

TABLE = Path(__file__).parent / "generated" / "config_guards.json"
AT = "@ vLLM 0.25.1"


def tables() -> dict[str, dict[str, Any]]:
    """Class name -> its arguments, defaults and program (``generated/config_guards.json``)."""
    return programs(TABLE)


@attrs.frozen
class Broken:
    """A check of a vLLM config class that the arguments fail (``warns``: one that logs a
    warning), and the arguments it read that were given."""

    config: str
    warns: bool
    raised: str
    where: str
    condition: str
    read: tuple[str, ...]
    hint: str

    def message(self) -> str:
        does = "warns" if self.warns else f"raises {self.raised}"
        return (
            f"vLLM {'warns' if self.warns else 'refuses it'}: {self.config} {does} where "
            f"`{self.condition}` ({self.where} {AT})"
        )


def built_with(name: str, given: Mapping[str, Any]) -> dict[str, Any]:
    """The keyword arguments the engine builds the class ``name`` with, as far as the table
    tells: each field handed an engine argument, that argument's value in ``given`` or else its
    default where that is a constant."""
    arguments: dict[str, str] = tables()[name]["arguments"]
    defaults = {f: v for f, v in constant_defaults(TABLE, name).items() if f in arguments}
    return defaults | {f: given[a] for f, a in arguments.items() if a in given}


def reached(given: Mapping[str, Any], unknown: Collection[str] = ()) -> Iterator[Broken]:
    """Each check of the config classes that the engine arguments ``given`` fail, where no
    hand-written rule mirrors it and it reads an argument given; ``unknown``: arguments whose
    value the caller cannot tell (NeMo-RL passes them from what it computes)."""
    for name, table in tables().items():
        arguments: dict[str, str] = table["arguments"]
        values = {
            field: value
            for field, value in constant_defaults(TABLE, name).items()
            if arguments.get(field) not in unknown
        }
        own = {f: given[a] for f, a in arguments.items() if a in given}
        for found in replay(table["program"], values | own):
            where, shown, mirrored = described(found.step)
            read = tuple(arguments[f] for f in conditions.names(shown) if f in own)
            if mirrored or not read:
                continue
            yield Broken(
                name,
                found.step[0] == "warn",
                str(found.step[2]) if found.step[0] == "guard" else "",
                where,
                shown,
                read,
                f"given: {conditions.given(shown, found.values)}",
            )
