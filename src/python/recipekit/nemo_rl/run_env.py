"""``${oc.env:VAR}``: a value NeMo-RL reads from the environment of the run, not recipekit.

NeMo-RL resolves ``${oc.env:HF_HOME}`` when it loads its config on the cluster, so the compiled
config keeps the reference and the job's environment fills it in. A recipe writes
``from_env("HF_HOME") + "/superv3_data/train.jsonl"``: a plain string holding the reference, so
it goes wherever a string does and renders exactly as written.
"""

from __future__ import annotations

import re

from recipekit.errors import Issue, RecipeError
from recipekit.interpolation import Interpolation

# ${oc.env:VAR} or ${oc.env:VAR,default}: OmegaConf's own resolver, which NeMo-RL keeps.
ENV_REFERENCE = re.compile(r"\$\{oc\.env:([A-Za-z_][A-Za-z0-9_]*)(?:,([^${}]*))?\}")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DEFAULT = re.compile(r"[${}]")


def from_env(variable: str, default: str | None = None) -> Interpolation:
    """The text NeMo-RL replaces with ``$variable`` (or ``default`` when it is unset): an
    ``Interpolation``, which a section takes where it refuses ``${...}`` in plain text."""
    if not _NAME.fullmatch(variable):
        raise RecipeError([Issue("from_env", "not an environment variable name", value=variable)])
    if default is None:
        return Interpolation(f"${{oc.env:{variable}}}")
    if _DEFAULT.search(default):
        # A default holding "${" or a brace would be an interpolation of its own.
        raise RecipeError([Issue("from_env", "a default holds no $, { or }", value=default)])
    return Interpolation(f"${{oc.env:{variable},{default}}}")


def split_env(text: str) -> list[str | tuple[str, str | None]]:
    """``text`` as literal pieces and ``(variable, default)`` references, in order."""
    parts: list[str | tuple[str, str | None]] = []
    last = 0
    for match in ENV_REFERENCE.finditer(text):
        if match.start() > last:
            parts.append(text[last : match.start()])
        parts.append((match.group(1), match.group(2)))
        last = match.end()
    if last < len(text):
        parts.append(text[last:])
    return parts
