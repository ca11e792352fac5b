"""Data read before it is registered, and its statistics for the plan (issue 43).

``data import rl`` (NeMo Gym rows) and ``store import`` of JSONL (NeMo Gym rows, or NeMo-RL's SFT
and preference rows: ``datacheck.chat``, the format found from the first row or given) call
:func:`check_files` before the store writes anything; it reads every file once (one progress
bar over all of them) and returns what the version's manifest records under
``meta["content"]``. ``store verify --content`` runs the same checks on a stored version, and
``pipeline plan`` reads the recorded statistics (``datacheck.plan``), never the files.

``data import sft`` (and ``store import`` of a folder holding ``.nv-meta``) reads an Energon
dataset with :func:`check_energon_dataset` (``datacheck.energon``): its metadata, every shard's
headers and the first samples of each; the manifest records it under the key ``"."``.
"""

from __future__ import annotations

import difflib
import json
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from recipekit.datacheck.chat import FORMATS, ChatRows, detect, required_keys
from recipekit.datacheck.energon import FORMAT as ENERGON_FORMAT
from recipekit.datacheck.energon import check_energon, is_energon, shard_bytes
from recipekit.datacheck.gym import FORMAT, GymRows, StageGym, agents_of, load_tokenizer
from recipekit.datacheck.scan import RowFormat, check_file
from recipekit.errors import Issue, RecipeError

__all__ = [
    "ENERGON_FORMAT",
    "FORMAT",
    "FORMATS",
    "StageGym",
    "check_energon_dataset",
    "check_files",
    "check_rl_files",
    "file_format",
    "gym_of_readers",
    "is_energon",
    "jsonl_files",
]

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
    return check_files(files, fmt=FORMAT, gym=gym, tokenizer=tokenizer, what=what)


def file_format(path: Path, shown: str | None = None) -> str:
    """The format of a JSONL file, from its first line: NeMo Gym rows or one of NeMo-RL's SFT
    and preference formats. A RecipeError naming the line when no format fits it."""
    with path.open("rb") as handle:
        first = handle.readline()
    name = shown or str(path)
    try:
        row = json.loads(first)
    except (ValueError, RecursionError):
        return FORMAT  # the format's own check names the line that does not parse
    found = detect(row)
    if found is not None:
        return found
    needs = {FORMAT: ["responses_create_params", "agent_ref"], **required_keys()}
    keys = sorted(k for k in row if isinstance(k, str)) if isinstance(row, dict) else []
    said = "; ".join(f"{fmt} needs {', '.join(wanted)}" for fmt, wanted in needs.items())
    near = sorted(
        {f"{k!r} for {w!r}" for k in keys for ks in needs.values() for w in ks
         if k != w and difflib.get_close_matches(k, [w], n=1)}
    )  # fmt: skip
    hint = f"a misspelling? {', '.join(near)}" if near else "give --format, or fix the rows"
    raise RecipeError(
        [
            Issue(
                f"{name}:1",
                f"fits no format recipekit reads (its keys: {', '.join(keys) or 'none'}): {said}",
                hint=hint,
            )
        ]
    )


def check_files(
    files: Mapping[str, Path],
    *,
    fmt: str | None = None,
    gym: StageGym | None = None,
    tokenizer: Path | None = None,
    what: str = "data check",
) -> dict[str, Any]:
    """Each of ``files`` read whole and checked as ``fmt`` (None: each file's own, found from
    its first row); the statistics by name, as the manifest records them."""
    from recipekit.progress import progress

    rules: dict[str, RowFormat] = {}
    for entry, path in files.items():
        found = fmt or file_format(path, str(path))
        if found not in (FORMAT, *FORMATS):
            raise RecipeError([Issue("--format", f"{found!r} is no format recipekit reads")])
        agents = gym.agents if gym is not None else None
        rules[entry] = GymRows(agents) if found == FORMAT else ChatRows(found)
    loaded, identity = load_tokenizer(tokenizer) if tokenizer is not None else (None, "")
    total = sum(path.stat().st_size for path in files.values())
    content: dict[str, Any] = {}
    with progress(what, total=total, counts_bytes=True, stream=sys.stderr) as bar:
        for entry, path in files.items():
            content[entry] = check_file(
                path,
                rules[entry],
                tokenizer=loaded,
                tokenizer_id=identity,
                bar=bar,
                shown=str(path),
            )
            bar.note(f"{entry}: {content[entry]['rows']} rows")
    if gym is not None and gym.agents is None:
        for stats in content.values():
            if stats["format"] == FORMAT:
                stats["agents_checked"] = f"no: {gym.where} names a config recipekit has not read"
    return content


def check_energon_dataset(root: Path, *, what: str = "data check") -> dict[str, Any]:
    """An Energon dataset's folder read as Energon and Megatron-Bridge read it (one progress bar
    over its shards); its statistics under the key the manifest records them by (``"."``: the
    version's top, where the import places the folder's contents)."""
    from recipekit.progress import progress

    with progress(what, total=shard_bytes(root), counts_bytes=True, stream=sys.stderr) as bar:
        stats = check_energon(root, bar=bar)
        splits = ", ".join(f"{n} {s['samples']}" for n, s in stats["splits"].items())
        bar.note(f"{stats['shards']} shards, samples per split: {splits}")
    return {".": stats}


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
