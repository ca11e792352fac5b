"""Derived caches keyed by what they are made from, never by where it was read.

A framework that converts its input before training keeps the conversion for the next run.
NeMo-RL's Megatron backend converts a Hugging Face model to a Megatron checkpoint once and
caches it under ``$NRL_MEGATRON_CHECKPOINT_DIR/model_<the path, '/' as '_'>``
(``nemo_rl/models/megatron/setup.py:571-577`` on super-v3.5-posttraining), and only checks that
``iter_0000000`` exists there. Keyed by the path, the cache is stale as soon as the path names
other bytes: ``/artifacts/super35-sft-model/latest`` after SFT publishes a new version, the
same version re-made after a damaged one, or the same model converted by another NeMo-RL or
Megatron-Bridge, or with other Megatron settings.

So every stage run that converts gets a cache directory of its own kind, keyed by the content
identity of what is converted (the digest of the store version's manifest), the
converter (the framework and its version, the pinned source checkouts) and the conversion's
options (the whole ``policy.megatron_cfg`` and ``hf_config_overrides``: more than the
conversion reads, so a change of, say, the optimizer converts again, but no change that
matters can reuse a conversion). A change of any of them names a new directory, which NeMo-RL
fills; an unchanged one finds its conversion. The directories live in the artifact store
(``/artifacts/.conversions/``), which every node of every stage mounts.

A pipeline keys the cache when it plans the chain, for an input it pins to a version of the
store. An input that a stage of the same submission makes has no manifest yet, and a stage
submitted on its own reads its input's selector when its job starts: the job keys the cache
then, from the version the selector names at that moment (``job_conversion_environment``), so
the same bytes find the same conversion however they were reached; a variable the pipeline
already set is kept.

Inside that directory NeMo-RL names the conversion after the path it was handed (``model_``
and the path with ``/`` as ``_``, setup.py:570-572), so the same bytes reached through another
path (``latest`` in the run that made them, ``v3`` or the run's own folder once a pipeline pins
them) would be converted again beside the first. Before the framework starts, the job links
the name this run's path gives to the conversion already there (``reuse_conversion``): the
directory's key says every conversion in it is of these bytes, by this converter, with these
options.

An HF export (the ``hf-export`` stage) is a stage like any other: its output version is keyed
by its action key, which covers the exported version, the converter's checkout and options.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from recipekit.errors import RecipeError
from recipekit.lineage.refs import ARTIFACTS_ROOT
from recipekit.lineage.store import (
    manifest_digest,
    read_marker,
    resolve_selector,
    stored_input,
    versions,
)

# In the store's top directory, beside the artifacts (a dot: never an artifact's name).
CONVERSIONS = ".conversions"
# NeMo-RL's own variable for where its HF -> Megatron conversions go.
MEGATRON_CONVERSIONS_VARIABLE = "NRL_MEGATRON_CHECKPOINT_DIR"
CONVERSION_FORMAT = 1
# What NeMo-RL's existence check reads in a conversion (setup.py:578-580 on super-v3.5).
CONVERTED_ITERATION = "iter_0000000"
# The separator NeMo-RL puts before the hash of hf_config_overrides in the name (setup.py:576).
OVERRIDES_MARK = "__hfovr_"


def conversion_key(source: str, converter: Any, options: Mapping[str, Any]) -> str:
    """sha256 over what a conversion is made from: the source's content identity, the
    converter's identity and its options."""
    blob = json.dumps(
        {"format": CONVERSION_FORMAT, "source": source, "converter": converter, "options": options},
        sort_keys=True,
        separators=(",", ":"),
        default=str,
    )
    return hashlib.sha256(blob.encode()).hexdigest()


def converted_input(plan: Mapping[str, Any]) -> str | None:
    """The store artifact a NeMo-RL stage on the Megatron backend converts from Hugging Face
    format when it starts (its ``policy.model_name``), or None when it converts nothing.
    ``plan``: the plan as ``plan.json`` holds it (a node reads no other)."""
    if plan["framework"]["name"] != "nemo-rl":
        return None
    policy = plan["config"].get("policy") or {}
    megatron = policy.get("megatron_cfg") or {}
    # A Megatron-format start (pretrained_checkpoint) is read as it is: nothing is converted.
    if not megatron.get("enabled") or policy.get("pretrained_checkpoint"):
        return None
    found = stored_input(str(policy.get("model_name", "")))
    return found[0] if found else None


def conversion_environment(plan: Mapping[str, Any], source: str) -> dict[str, str]:
    """The environment that points the stage's conversion cache at the directory of its key
    (``source``: the content identity of the version converted); {} for a stage that
    converts nothing."""
    if converted_input(plan) is None:
        return {}
    policy = plan["config"].get("policy") or {}
    framework = plan["framework"]
    converter = [framework["name"], framework["version"], *plan.get("code", ())]
    options = {
        "megatron_cfg": policy.get("megatron_cfg") or {},
        "hf_config_overrides": policy.get("hf_config_overrides") or {},
    }
    key = conversion_key(source, converter, options)
    where = f"{ARTIFACTS_ROOT}/{CONVERSIONS}/hf-to-megatron-{key[:24]}"
    return {MEGATRON_CONVERSIONS_VARIABLE: where}


def job_conversion_environment(plan: Mapping[str, Any], root: Path) -> dict[str, str]:
    """For a job submitted on its own (no pipeline set the cache): the cache of the version
    the stage's input names when the job starts, keyed by that version's manifest, in the store
    mounted at ``root``. {} for a stage that converts nothing, or an input the store does not
    hold whole (preflight refuses that one)."""
    artifact = converted_input(plan)
    if artifact is None:
        return {}
    policy = plan["config"].get("policy") or {}
    found = stored_input(str(policy.get("model_name", "")))
    try:
        version = resolve_selector(versions(root, artifact), found[1] if found else "")
    except RecipeError:
        return {}
    marker = None if version is None else read_marker(root / artifact, version.version)
    files = None if marker is None else marker.get("files")
    if files is None:
        return {}
    return conversion_environment(plan, f"manifest:{manifest_digest(files)}")


def reuse_conversion(plan: Mapping[str, Any], directory: Path, log: Callable[[str], None]) -> None:
    """Link the name NeMo-RL gives this run's conversion in ``directory`` (the cache of its
    input's content) to a conversion another path of the same bytes left there, so NeMo-RL
    finds it instead of converting again. Nothing happens for a stage that converts nothing, a
    path that is not there, or a directory that holds no finished conversion."""
    if converted_input(plan) is None:
        return
    model_name = str(plan["config"]["policy"]["model_name"])
    if not os.path.exists(model_name) or not directory.is_dir():
        return  # NeMo-RL names the conversion after the path only when the path exists
    done = sorted(p for p in directory.iterdir() if (p / CONVERTED_ITERATION).is_dir())
    if not done:
        return
    found = done[0]
    # The same options, so the same hf_config_overrides hash after the path's part, if any.
    _, mark, overrides_hash = found.name.partition(OVERRIDES_MARK)
    wanted = directory / f"model_{model_name.replace('/', '_')}{mark}{overrides_hash}"
    if wanted.exists() or wanted.is_symlink():
        return
    try:
        # Relative, so it resolves wherever a node mounts the store.
        wanted.symlink_to(found.name, target_is_directory=True)
    except FileExistsError:
        return  # another node or job of the same bytes linked it first
    log(f"driver: {model_name} was converted before (same content, converter and options): {found}")
