"""Where a catalogued NeMo-RL rule stands upstream, in the words a message quotes:
``file:line @ version``.

A message names the rule it cites by its catalogue id (``rule_catalogue/nemo-rl*.toml``); the
file and line come from the generated table (``generated/rule_sites.json``, written from each
entry's anchor in the pinned source), so no line is written by hand. ``rules/citation.py``
picks the id of the version a stage runs.
"""

from __future__ import annotations

from recipekit.nemo_rl import NEMO_RL_VERSION, SUPER35_BRANCH
from recipekit.rule_sites import sites

SITES = sites("nemo_rl")

# The catalogue's source label -> the version a message names.
VERSIONS = {
    f"nemo-rl/{NEMO_RL_VERSION}": NEMO_RL_VERSION,
    f"nemo-rl/{SUPER35_BRANCH}": SUPER35_BRANCH,
}


def line_of(rule: str) -> int:
    """The upstream line of a catalogued rule."""
    return SITES[rule][2]


def where(rule: str) -> str:
    """``file:line @ version`` of a catalogued rule."""
    label, file, line = SITES[rule]
    return f"{file}:{line} @ {VERSIONS[label]}"
