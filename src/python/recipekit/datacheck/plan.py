"""What ``pipeline plan`` says of a stage's data from the statistics its import recorded
(issue 43): the manifest's ``meta["content"]``, never the files, so a plan stays fast.

For NeMo Gym rows on NeMo-RL super-v3.5-posttraining, per prompt limit (recipekit's own rule
``nemo_rl/rules/sequence_budget.py`` says the same of the limits themselves):

- ``data.max_input_seq_length``: not applied. ``nemo_gym_data_processor`` takes it and never uses
  it (nemo_rl/data/processors.py:779; the prompt is built server-side by NeMo Gym), so nothing is
  cut or dropped for it. Said, not refused.
- ``env.nemo_gym.policy_max_input_tokens``: NeMo Gym ends a rollout whose prompt outgrows it
  (context_length_exceeded): the row trains on nothing. A warning with the count.
- ``policy.generation.vllm_cfg.max_model_len``: a prompt that fills it leaves vLLM no room and
  NeMo-RL raises (vllm_worker.py:77, vllm_worker_async.py:442 @ super-v3.5-posttraining): refused,
  unless ``policy_max_input_tokens`` is below it, which ends those rollouts first.

Counts are of the message text's tokens (the chat template adds more), so they are at least the
number of prompts past a limit. Without token statistics (no tokenizer at import) lengths are not
compared, and the plan says so. A row's agent is checked against the stage's Gym config from the
recorded rows per agent where the import could not (``store import``, a config it had not read).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from recipekit.datacheck.gym import FORMAT, LONGEST_KEPT, agents_of
from recipekit.errors import Issue

SUPER35 = "super-v3.5-posttraining"
PROCESSOR_CITE = "nemo_rl/data/processors.py:779 @ super-v3.5-posttraining"
VLLM_CITE = "vllm_worker.py:77, vllm_worker_async.py:442 @ super-v3.5-posttraining"


@attrs.frozen
class DataFindings:
    """Refusals (the framework would fail) and notes (what it does with the data)."""

    errors: tuple[Issue, ...] = ()
    notes: tuple[Issue, ...] = ()


def count_over(lengths: Mapping[str, Any], rows: int, limit: int) -> tuple[int, bool]:
    """How many prompts are at least ``limit`` long, and whether the count is exact (from the
    longest kept) or estimated from the percentiles (a lower bound, to 1% of the rows)."""
    longest = list(lengths.get("longest", ()))
    exact = sum(1 for n in longest if n >= limit)
    if exact < len(longest) or len(longest) >= rows or len(longest) < LONGEST_KEPT:
        return exact, True
    percentiles = list(lengths.get("percentiles", ()))
    share = sum(1 for n in percentiles[:-1] if n >= limit) / max(len(percentiles) - 1, 1)
    return max(exact, int(share * rows)), False


def _get(config: Mapping[str, Any], path: str) -> Any:
    value: Any = config
    for part in path.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


def stage_findings(
    stage: str,
    config: Mapping[str, Any],
    version: str,
    content: Mapping[str, Any],
) -> DataFindings:
    """What ``content`` (a data version's recorded statistics, by file) means for one stage's
    framework config at NeMo-RL ``version``."""
    errors: list[Issue] = []
    notes: list[Issue] = []
    if SUPER35 not in version or _get(config, "env.should_use_nemo_gym") is not True:
        return DataFindings()
    paths = _get(config, "env.nemo_gym.config_paths")
    agents = agents_of(paths) if isinstance(paths, list | tuple) else None
    limit_in = _get(config, "data.max_input_seq_length")
    context = _get(config, "policy.generation.vllm_cfg.max_model_len")
    gym_limit = _get(config, "env.nemo_gym.policy_max_input_tokens")
    for name, stats in content.items():
        if not isinstance(stats, Mapping) or stats.get("format") != FORMAT:
            continue
        where = f"{stage}: {name}"
        rows = int(stats.get("rows", 0))
        if agents is not None:
            unknown = {a: n for a, n in stats.get("agents", {}).items() if a not in agents}
            if unknown:
                shown = ", ".join(f"{a!r} ({n} rows)" for a, n in sorted(unknown.items()))
                errors.append(
                    Issue(
                        where,
                        f"rows name agents env.nemo_gym.config_paths does not define: {shown}",
                        hint="add the agent's Gym config to config_paths, or re-import the data",
                    )
                )
        tokens = stats.get("prompt_tokens")
        if not isinstance(tokens, Mapping):
            notes.append(
                Issue(where, "prompt token lengths not recorded (imported without a tokenizer)")
            )
            continue
        longest = tokens.get("max", 0)
        if isinstance(limit_in, int) and longest >= limit_in:
            count, exact = count_over(tokens, rows, limit_in)
            notes.append(
                Issue(
                    where,
                    f"{_count(count, exact)} of {rows} prompts reach data.max_input_seq_length = "
                    f"{limit_in} tokens: NeMo Gym rows are neither cut nor dropped for it (the "
                    f"processor does not use it: {PROCESSOR_CITE})",
                )
            )
        if isinstance(gym_limit, int) and longest > gym_limit:
            count, exact = count_over(tokens, rows, gym_limit + 1)
            notes.append(
                Issue(
                    where,
                    f"{_count(count, exact)} of {rows} prompts exceed "
                    f"env.nemo_gym.policy_max_input_tokens = {gym_limit}: NeMo Gym ends each "
                    "such rollout (context_length_exceeded), which trains on nothing",
                )
            )
        if isinstance(context, int) and longest >= context:
            count, exact = count_over(tokens, rows, context)
            shielded = isinstance(gym_limit, int) and gym_limit < context
            message = (
                f"{_count(count, exact)} of {rows} prompts fill "
                f"policy.generation.vllm_cfg.max_model_len = {context} tokens"
            )
            if shielded:
                notes.append(
                    Issue(where, f"{message}: NeMo Gym ends them first (policy_max_input_tokens)")
                )
            else:
                errors.append(
                    Issue(
                        where,
                        f"{message}: vLLM has no room to generate and NeMo-RL raises ({VLLM_CITE})",
                        hint="drop or shorten them, or raise max_model_len",
                    )
                )
    return DataFindings(tuple(errors), tuple(notes))


def _count(count: int, exact: bool) -> str:
    return f"at least {count}" if exact else f"about {count} or more"


def chain_findings(root: Path, planned: Sequence[Any], actions: Sequence[Any]) -> DataFindings:
    """Each stage that runs, against the statistics of every store version it reads."""
    from recipekit.lineage.store import read_marker

    errors: list[Issue] = []
    notes: list[Issue] = []
    for entry, action in zip(planned, actions, strict=True):
        if not action.runs or entry.plan is None:
            continue
        version = str(getattr(entry.plan.stage.framework, "version", ""))
        for read in action.inputs:
            if read.version is None:
                continue
            marker = read_marker(root / read.ref.name, read.version) or {}
            content = marker.get("meta", {}).get("content")
            if not isinstance(content, Mapping):
                continue
            found = stage_findings(entry.name, entry.plan.framework_config, version, content)
            errors += found.errors
            notes += found.notes
    return DataFindings(tuple(errors), tuple(notes))
