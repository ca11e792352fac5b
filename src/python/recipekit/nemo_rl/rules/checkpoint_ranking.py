"""How NeMo-RL's training loops (GRPO, PPO, SFT, DPO, RM, distillation) rank checkpoints by
``checkpointing.metric_name``: the metric names its source, and a checkpoint ranked by a
validation metric but saved where the loop ran no validation is warned about and left out of
the top-k. The loops save and validate on the same keys, so the rules are written once here;
each rule module says which loop and which upstream line."""

from __future__ import annotations

import difflib
import functools
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs

from recipekit.errors import Issue
from recipekit.generated_tables import sources
from recipekit.markers import given
from recipekit.nemo_rl import SUPER35_TYPES
from recipekit.nemo_rl.keys import value_of

# The prefixes a ranking metric starts with: a training or a validation metric.
METRIC_SOURCES = ("train:", "val:")
# The metric names each pinned loop reports itself (tools/generate_metric_names.py).
REPORTED = Path(__file__).parent.parent / "generated" / "metric_names.json"


@attrs.frozen
class LoopDefaults:
    """A loop's defaults for the keys these rules read, where its section leaves them out
    (each algorithm's pydantic config has its own: SFTConfig, DPOConfig, RMConfig,
    DistillationConfig)."""

    max_num_steps: int
    val_period: int
    val_at_end: bool = False


@attrs.frozen
class Loop:
    """A loop's length and validation schedule with its defaults filled in. These loops have
    no ``val_start_at``: they validate from the first step on."""

    max_num_steps: int
    val_period: int
    val_at_end: bool


def resolved_loop(section: Any, defaults: LoopDefaults) -> Loop:
    """The loop ``section`` (``sft``, ``dpo``, ``rm``, ``distillation``) states, the
    algorithm's default where a key is absent."""
    return Loop(
        max_num_steps=given(section.max_num_steps, defaults.max_num_steps),
        val_period=given(section.val_period, defaults.val_period),
        val_at_end=given(section.val_at_end, defaults.val_at_end),
    )


def metric_without_its_source(checkpointing: Any, who: str, citation: str) -> Iterator[Issue]:
    """The refusal of a ranking metric that names no source; ``who`` names the loop in the
    message ("NeMo-RL", "PPO"), ``citation`` the upstream line that refuses it."""
    metric = checkpointing.metric_name
    if checkpointing.enabled and isinstance(metric, str) and not metric.startswith(METRIC_SOURCES):
        yield Issue(
            "checkpointing.metric_name",
            f"{who} refuses it at the first checkpoint: the name must start with 'train:' or "
            f"'val:' ({citation})",
            value=metric,
            hint=f"e.g. 'val:{metric.split(':')[-1]}'",
        )


def _first_unvalidated_multiple(period: int, val_period: int, val_start_at: int) -> int | None:
    """The first multiple of ``period`` that is no validation step, or None when every one is:
    NeMo-RL validates at step s when val_period > 0, s >= val_start_at and val_period divides
    s. The first multiple is such a step unless val_period divides ``period``, and then every
    multiple is one from val_start_at on."""
    if val_period > 0 and period % val_period == 0 and period >= val_start_at:
        return None
    return period


def _unvalidated_save(checkpointing: Any, loop: Any, name: str) -> tuple[str, object, int] | None:
    """The key, its value and the first step at which the loop (``name``: its section, grpo or
    ppo) saves a checkpoint without having validated, among the saves the config fixes: every
    save_period (and ft_save_period) steps up to max_num_steps, and the last step."""
    start = value_of(loop, "val_start_at")
    start = start if isinstance(start, int) else -1  # absent (super-v3, PPO): from the first on
    last = loop.max_num_steps
    periodic = [
        (f"checkpointing.{key}", period, step)
        for key in ("save_period", "ft_save_period")
        if isinstance(period := value_of(checkpointing, key), int)
        and (step := _first_unvalidated_multiple(period, loop.val_period, start)) is not None
        and step <= last
    ]
    if periodic:
        return min(periodic, key=lambda found: found[2])
    if not loop.val_at_end and _first_unvalidated_multiple(last, loop.val_period, start):
        return f"{name}.val_at_end", False, last
    return None


def unranked_saves(
    checkpointing: Any, loop: Any, name: str, who: str, citation: str
) -> Iterator[Issue]:
    """The warning for the first save a ``val:`` ranking cannot rank; ``who`` names the loop in
    the message ("NeMo-RL", "PPO"), ``citation`` the upstream line that warns."""
    metric = checkpointing.metric_name
    if not checkpointing.enabled or not isinstance(metric, str) or not metric.startswith("val:"):
        return
    found = _unvalidated_save(checkpointing, loop, name)
    if found is None:
        return
    key, value, step = found
    if loop.val_period <= 0:
        when, fix = f"no periodic validation ({name}.val_period <= 0)", f"set {name}.val_period"
    else:
        when, fix = f"validation every {loop.val_period} steps", "save at its multiples"
    yield Issue(
        key,
        f"{who} saves a checkpoint at step {step} but, with {when}, has no validation "
        f"metrics there: it warns and does not rank that checkpoint by {metric} ({citation})",
        value=value,
        hint=(
            f"set {name}.val_at_end true"
            if key == f"{name}.val_at_end"
            else f"{fix}, or rank by a 'train:' metric"
        ),
    )


@functools.cache
def reported_metrics(label: str, loop: str) -> Mapping[str, tuple[str, ...]]:
    """The metric names the loop (``grpo``, ``sft``, ...) of the pinned ``label`` reports
    itself, by prefix (``train``, ``val``)."""
    table = sources(REPORTED)[label]["loops"][loop]
    return {prefix: tuple(table[prefix]) for prefix in ("train", "val")}


def metric_close_to_a_reported_one(
    checkpointing: Any, reported: Mapping[str, tuple[str, ...]], who: str, citation: str
) -> Iterator[Issue]:
    """A warning for a ranking metric that is none of the names the loop reports itself but
    close to one: a typo the loop raises on at its first save, unless the environment, the
    loss or the rollouts report a metric of that name (which only the running job knows)."""
    metric = checkpointing.metric_name
    if not checkpointing.enabled or not isinstance(metric, str) or ":" not in metric:
        return
    prefix, name = metric.split(":", 1)
    names = reported.get(prefix, ())
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.8)
    if name in names or not close:
        return
    yield Issue(
        "checkpointing.metric_name",
        f"{who}'s loop reports a {prefix} metric {close[0]!r}, not {name!r}; unless the "
        f"environment or the loss reports one of that name, it raises at the first checkpoint "
        f"({citation})",
        value=metric,
        hint=f"did you mean '{prefix}:{close[0]}'?",
    )


def misspelt_metric_check(loop: str, who: str, rule: str) -> Callable[[Any], Iterator[Issue]]:
    """``metric_close_to_a_reported_one`` as the warning check of an entry point only
    super-v3.5-posttraining runs (its argument is the config), citing ``rule``."""
    from recipekit.nemo_rl.rules.citation import cite_super35

    def check(config: Any) -> Iterator[Issue]:
        reported = reported_metrics(SUPER35_TYPES, loop)
        yield from metric_close_to_a_reported_one(
            config.checkpointing, reported, who, cite_super35(rule)
        )

    check.__name__ = check.__qualname__ = f"{loop}_checkpoint_metric_is_one_it_reports"
    return check
