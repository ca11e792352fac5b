"""Data read before it is registered, and its statistics for the plan (issue 43).

``data import rl`` and ``store import`` of RL data call :func:`check_rl_files` before the store
writes anything; it reads every file once (one progress bar over all of them) and returns what
the version's manifest records under ``meta["content"]``. ``store verify --content`` runs the
same checks on a stored version, and ``pipeline plan`` reads the recorded statistics
(``datacheck.plan``), never the files.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from recipekit.datacheck.gym import FORMAT, StageGym, agents_of, check_jsonl, load_tokenizer

__all__ = ["FORMAT", "StageGym", "check_rl_files", "gym_of_readers", "jsonl_files"]

# Where the RL stages read their prompts from inside a data version (data.train.data_path =
# RunInput("data", "train.jsonl") in recipes/super35/rl.py).
RL_FILES = ("train.jsonl", "val.jsonl")


def jsonl_files(source: Path) -> dict[str, Path]:
    """The JSONL files ``store import SOURCE`` places in a version, by their name there: SOURCE
    itself, or the ``*.jsonl`` at a folder's top (where the RL stages read them)."""
    if source.is_file():
        return {source.name: source} if source.suffix == ".jsonl" else {}
    if source.is_dir():
        return {p.name: p for p in sorted(source.glob("*.jsonl")) if p.is_file()}
    return {}


def check_rl_files(
    files: Mapping[str, Path],
    *,
    gym: StageGym | None = None,
    tokenizer: Path | None = None,
    what: str = "data check",
) -> dict[str, Any]:
    """Each of ``files`` (its name in the version -> where it is now) read whole and checked
    as NeMo Gym JSONL; the statistics by name, as the manifest records them. A RecipeError
    (one line: file, line, field, rule) where a row would fail the pinned reader."""
    from recipekit.progress import progress

    loaded, identity = load_tokenizer(tokenizer) if tokenizer is not None else (None, "")
    agents = gym.agents if gym is not None else None
    total = sum(path.stat().st_size for path in files.values())
    content: dict[str, Any] = {}
    with progress(what, total=total, counts_bytes=True, stream=sys.stderr) as bar:
        for entry, path in files.items():
            content[entry] = check_jsonl(
                path,
                agents=agents,
                tokenizer=loaded,
                tokenizer_id=identity,
                bar=bar,
                shown=str(path),
            )
    if gym is not None and gym.agents is None:
        for stats in content.values():
            stats["agents_checked"] = f"no: {gym.where} names a config recipekit has not read"
    return content


def gym_of_readers(stages: Iterable[Any]) -> StageGym:
    """What the stages reading one data artifact say of its rows: the agents every one of their
    Gym configs defines (a row must name one each stage knows), None when any is unknown."""
    from recipekit.errors import RecipeError
    from recipekit.keypaths import get_at

    agents: frozenset[str] | None = None
    names: list[str] = []
    for stage in stages:
        try:
            paths = get_at(stage.config, "env.nemo_gym.config_paths")
        except (RecipeError, AttributeError, KeyError, TypeError):
            continue  # a stage without NeMo Gym
        names.append(getattr(stage, "name", "?"))
        found = agents_of(paths) if isinstance(paths, list | tuple) else None
        if found is None:
            return StageGym(None, f"{names[-1]}: env.nemo_gym.config_paths")
        agents = found if agents is None else agents & found
    where = f"{', '.join(names)}: env.nemo_gym.config_paths" if names else ""
    return StageGym(agents, where)
