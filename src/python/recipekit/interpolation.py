"""Config values are data: OmegaConf interpolation only where recipekit itself writes it.

NeMo-RL and Megatron-Bridge load the config with OmegaConf and resolve every ``${...}`` in it:
``${oc.env:WANDB_API_KEY}`` as a W&B run name would publish the key, ``${policy.model_name}``
would make the value another key's. The plan, its hash and ``plan.json`` would then describe
text the framework never reads. So a string a user gives (``--set``, or a recipe's literal
text) holding ``${`` is refused, naming its key, by the section that is given it
(``sections.section``): recipes, variants, overrides and derivations all build sections, so
one check covers every way in.

recipekit's own references stay: an ``Interpolation`` (``run_env.from_env``, an input read
from the environment, ``megatron_bridge.paths``), a ``markers.RunInput`` (replaced by its
artifact's path when the plan is made) and the run's name in the store's paths
(``lineage.store.RUN_PLACEHOLDER``, which the job itself sets).
"""

from __future__ import annotations

from typing import Any

import attrs

from recipekit.errors import join_path
from recipekit.markers import RunInput

OPENS = "${"


class Interpolation(str):
    """Text holding an OmegaConf interpolation that recipekit wrote on purpose, resolved by
    the framework where it runs (``from_env("HF_HOME") + "/data"``). Joined with plain text
    by ``+`` it stays one, so a recipe can build a path from it."""

    __slots__ = ()

    def __add__(self, other: Any) -> Any:
        if isinstance(other, str):
            return Interpolation(str.__add__(self, other))
        return NotImplemented

    def __radd__(self, other: Any) -> Any:
        if isinstance(other, str):
            return Interpolation(str.__add__(other, self))
        return NotImplemented


@attrs.frozen
class Smuggled:
    """A string holding ``${`` that recipekit did not write: where below the key, and the text."""

    path: str
    text: str


def smuggled(value: Any, path: str = "") -> Smuggled | None:
    """The first user string in ``value`` (a string, list or mapping) holding OmegaConf
    interpolation; None when there is none. Sections inside are checked when they are made."""
    if isinstance(value, str):
        if OPENS not in value or isinstance(value, Interpolation | RunInput):
            return None
        return Smuggled(path, value) if OPENS in _without_run_name(value) else None
    if isinstance(value, dict):
        items: Any = ((str(k), v) for k, v in value.items())
    elif isinstance(value, list | tuple):
        items = enumerate(value)
    else:
        return None
    for key, item in items:
        found = smuggled(item, join_path(path, key))
        if found is not None:
            return found
    return None


def _without_run_name(text: str) -> str:
    # Imported here: the store's module is not needed by a section until a string holds "${".
    from recipekit.lineage.store import RUN_PLACEHOLDER

    return text.replace(RUN_PLACEHOLDER, "")


REFUSED = (
    "holds OmegaConf interpolation (${...}), which the framework would resolve when it loads "
    "the config, so the plan would not say what it reads"
)
HINT = (
    "write the value itself; a recipe reads the run's environment with "
    "recipekit.nemo_rl.run_env.from_env(...)"
)
