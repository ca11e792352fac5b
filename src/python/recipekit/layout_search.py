"""``recipekit layout``: the layouts of a stage that pass every check and fit, best first.

Each candidate the framework proposes (``Framework.layout_candidates``: Megatron-Core sizes,
vLLM's TP, the generation/training split) is first priced by the memory estimate alone, which
is arithmetic; those that fit are ranked by a communication proxy, then by headroom, and planned
in that order with every check of the plan until ``top`` pass. A proposal the stage refuses (a
value its section refuses, or a check of its plan) is counted, grouped by the key of its first
issue (``SearchResult.refused``), so a framework proposing layouts its own plan refuses shows.

Pricing makes no candidate's config (``_Pricing``): thousands of candidates set a few keys to
combinations of a few values, so each (key, value) is checked once where its section checks it
on the value alone, and the framework's pricer estimates the recipe's own config for each layout,
computing once what layouts share. It equals making and estimating each candidate's config
(``recipes/layout_candidates_test.py`` holds the search to that, stage by stage).

The communication proxy, lower is better (a proxy, not a model of time):
- a tensor-, context- or expert-parallel group that leaves the NVLink domain: +1 each
  (all-reduce, ring attention's key/value exchange and all-to-all traffic on every layer would
  cross InfiniBand; a context-parallel group spans TP x CP ranks, Megatron-Core placing TP
  innermost);
- the 1F1B pipeline bubble, (PP - 1) / (PP - 1 + m) for m micro-batches a step (Narayanan et
  al. 2021).
Inside NVLink, the recipe's own choices stand: among layouts of equal cost the one that changes
the fewest keys ranks first, so a stage moved to another cluster keeps what still works.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import attrs

from recipekit.errors import Issue, RecipeError
from recipekit.hardware import Hardware
from recipekit.keypaths import checked_alone, with_values
from recipekit.markers import given_at
from recipekit.memory.estimate import MemoryEstimate
from recipekit.memory.megatron import lower_bound
from recipekit.memory.switches import worker_environment
from recipekit.parallelism import ParallelLayout
from recipekit.plan import Plan, make_plan, resolve_run_inputs
from recipekit.stage import Stage


@attrs.frozen
class Candidate:
    overrides: dict[str, Any]
    # The plan made with them, every check passed.
    plan: Plan
    # The layout the framework proposed (its plan's layout must be the same).
    proposed: Any
    headroom_gib: float
    communication: float

    @property
    def memory(self) -> MemoryEstimate:
        assert self.plan.memory is not None
        return self.plan.memory

    def assignments(self) -> list[str]:
        return [f"{key}={_yaml_value(value)}" for key, value in self.overrides.items()]


@attrs.frozen
class Refusal:
    """Proposals the stage refused (its sections, or its plan's checks), grouped by the key of
    the first issue: a layout the framework proposes and its own plan refuses shows here."""

    key: str
    count: int
    # One of them, rendered: what the user would read from `plan --set ...`.
    example: str

    def as_json(self) -> dict[str, Any]:
        return {"key": self.key, "count": self.count, "example": self.example}


@attrs.frozen
class SearchResult:
    stage: Stage
    candidates: tuple[Candidate, ...]
    tried: int
    fitting: int
    seconds: float
    # The search ran on other hardware than the recipe's.
    moved: bool = False
    # Proposals refused when setting their values or planning them, most first.
    refused: tuple[Refusal, ...] = ()

    @property
    def refused_count(self) -> int:
        return sum(r.count for r in self.refused)

    def as_json(self) -> dict[str, Any]:
        hw = self.stage.hardware
        return {
            "stage": self.stage.name,
            "hardware": {"node": hw.node.name, "num_nodes": hw.num_nodes},
            "tried": self.tried,
            "fit_in_memory": self.fitting,
            "refused": [r.as_json() for r in self.refused],
            "candidates": [
                {
                    "overrides": c.overrides,
                    "layout": c.plan.layout.as_json(),
                    "headroom_gib": round(c.headroom_gib, 2),
                    "communication": c.communication,
                    "memory": c.memory.as_json(),
                }
                for c in self.candidates
            ],
        }


def search(
    stage: Stage,
    hardware: Hardware | None = None,
    *,
    top: int = 10,
    show_progress: bool = False,
) -> SearchResult:
    """The ``top`` best layouts of ``stage`` (on ``hardware``, when given). ``show_progress``:
    say how far the pricing and the planning are on stderr (``recipekit.progress``): a stage
    whose fitting layouts its plan refuses is planned candidate by candidate, which can take
    tens of seconds."""
    from recipekit.progress import progress

    started = time.perf_counter()
    moved = hardware is not None and hardware != stage.hardware
    if hardware is not None:
        stage = attrs.evolve(stage, hardware=hardware)
    framework, hw, model = stage.framework, stage.hardware, stage.model
    config, _ = resolve_run_inputs(stage)
    config, _ = framework.derive(config, hw)
    base, _, _ = framework.check(config, hw, model)
    priced: list[tuple[float, int, float, dict[str, Any], Any]] = []
    refusals = _Refusals()
    # Listed first (cheap: sizes, no pricing) so that the progress has a total.
    candidates = list(framework.layout_candidates(base, hw, model))
    tried = len(candidates)
    what = f"layout {stage.name}"
    recipe = _RecipeValues(config)
    # Priced at the estimate's lower bound (no allocator simulation, a second or so a
    # candidate): what it refuses the full estimate refuses too, and each layout shown is
    # planned below, so estimated in full, before it counts as fitting. Priced, as planned,
    # inside the stage's environment (its allocator settings change the estimate).
    with (
        progress(f"{what}: pricing", total=tried, silent=not show_progress) as bar,
        lower_bound(),
        worker_environment(stage.environment),
    ):
        pricing = _Pricing(framework, config, hw, model)
        for layout, overrides in candidates:
            bar.advance()
            try:
                estimate = pricing.estimate(layout, overrides)
            except RecipeError as exc:
                refusals.add(exc)  # a value its section refuses
                continue
            if estimate is None or not estimate.fits():
                continue
            proxy = communication(layout, hw, framework.microbatches(config, layout.parallel))
            changes = sum(recipe[k] != v for k, v in overrides.items())
            priced.append((round(proxy, 3), changes, -estimate.headroom_gib, overrides, layout))
        bar.note(f"{len(priced)} fit in memory")
    # Cheapest communication first; among equals, the fewest changes to the recipe, then the
    # most headroom.
    priced.sort(key=lambda item: item[:3])
    found: list[Candidate] = []
    wanted = min(top, len(priced))
    with progress(f"{what}: planning the best", total=wanted, silent=not show_progress) as bar:
        for proxy, _, negative_headroom, overrides, layout in priced:
            try:
                plan = make_plan(stage, [f"{k}={_yaml_value(v)}" for k, v in overrides.items()])
            except RecipeError as exc:
                refusals.add(exc)
                continue
            changed = {k: v for k, v in overrides.items() if recipe[k] != v}
            headroom = plan.memory.headroom_gib if plan.memory else -negative_headroom
            found.append(Candidate(changed, plan, layout, headroom, proxy))
            bar.advance()
            if len(found) == top:
                break
    seconds = time.perf_counter() - started
    return SearchResult(stage, tuple(found), tried, len(priced), seconds, moved, refusals.grouped())


class _Pricing:
    """Each candidate's memory estimate, as ``framework.memory`` estimates the recipe's config
    with the candidate's overrides set (``with_values``), without making that config.

    - The estimate reads every size from the layout, none from the config's size keys
      (``Framework.memory``), so the framework's pricer (``layout_pricer``) estimates the
      recipe's own config, keeping what the layouts share.
    - ``with_values`` refuses a candidate's values with the issues of each value its section
      refuses, in the candidate's order. A candidate sets a few keys to combinations of a few
      values each, and where a key's value is accepted or refused on that value alone
      (``keypaths.checked_alone``), each (key, value) is set once, alone.
    """

    def __init__(self, framework: Any, config: Any, hardware: Hardware, model: Any) -> None:
        self._config = config
        self._price: Callable[[Any], MemoryEstimate | None] = framework.layout_pricer(
            config, hardware, model
        )
        self._alone: dict[str, bool] = {}
        self._issues: dict[tuple[str, type, Any], list[Issue]] = {}

    def estimate(self, layout: Any, overrides: dict[str, Any]) -> MemoryEstimate | None:
        """The estimate of ``layout``; RecipeError where a section refuses an override."""
        issues = self._issues_of(overrides)
        if issues:
            raise RecipeError(issues)
        return self._price(layout)

    def _issues_of(self, overrides: dict[str, Any]) -> list[Issue]:
        found: list[Issue] = []
        try:
            for key, value in overrides.items():
                if key not in self._alone:
                    self._alone[key] = checked_alone(self._config, key)
                if not self._alone[key]:
                    return self._set_together(overrides)
                # By type too: True and 1 are equal keys, not equal values to a section.
                seen = (key, type(value), value)
                issues = self._issues.get(seen)
                if issues is None:
                    issues = self._issues[seen] = self._set_together({key: value})
                found += issues
        except TypeError:  # a value that cannot be a dictionary key (a list): set them all
            return self._set_together(overrides)
        return found

    def _set_together(self, overrides: dict[str, Any]) -> list[Issue]:
        try:
            with_values(self._config, overrides)
        except RecipeError as exc:
            return list(exc.issues)
        return []


class _RecipeValues(dict[str, Any]):
    """The recipe's value at each key asked for (``_lookup``), looked up once."""

    def __init__(self, config: Any) -> None:
        super().__init__()
        self._config = config

    def __missing__(self, key: str) -> Any:
        value = self[key] = _lookup(self._config, key)
        return value


class _Refusals:
    """The refused proposals, counted by the key of each one's first issue."""

    def __init__(self) -> None:
        self._by_key: dict[str, tuple[int, str]] = {}

    def add(self, error: RecipeError) -> None:
        first = error.issues[0] if error.issues else None
        key = first.path if first is not None else ""
        count, example = self._by_key.get(key, (0, first.render() if first else str(error)))
        self._by_key[key] = (count + 1, example)

    def grouped(self) -> tuple[Refusal, ...]:
        return tuple(
            Refusal(key, count, example)
            for key, (count, example) in sorted(
                self._by_key.items(), key=lambda item: (-item[1][0], item[0])
            )
        )


def communication(layout: Any, hardware: Hardware, microbatches: int) -> float:
    """The proxy of ``layout`` (module docstring), a step running ``microbatches`` micro-batches
    per data-parallel rank (the framework's ``microbatches``)."""
    node = hardware.node
    domain = node.gpus_per_node * node.nvlink_domain_nodes
    p: ParallelLayout = layout.parallel
    cost = float(p.tp > domain) + float(p.tp * p.cp > domain) + float(p.ep * p.etp > domain)
    if p.pp > 1:
        cost += (p.pp - 1) / (p.pp - 1 + microbatches)
    return cost


def _lookup(config: Any, key: str) -> Any:
    """The config's value at ``key``; None where the key is unset or not in its schema."""
    return given_at(config, *key.split("."))


def _yaml_value(value: Any) -> str:
    if value is None:
        return "null"
    return str(value).lower() if isinstance(value, bool) else str(value)


def table(result: SearchResult) -> Iterator[str]:
    """The candidates as a table, then the change to the recipe for the best one."""
    stage = result.stage
    hw = stage.hardware
    yield (
        f"{stage.name} on {hw.num_nodes} x {hw.node.name} ({hw.gpus_per_node} x "
        f"{hw.node.gpu.model}, {hw.node.gpu.hbm_gib} GiB): {result.tried} layouts tried, "
        f"{result.fitting} fit in memory, {len(result.candidates)} pass every check "
        f"({result.seconds:.2f} s)"
    )
    if result.refused:
        yield f"{result.refused_count} refused by the stage's checks:"
        for refusal in result.refused:
            yield f"  {refusal.count} at {refusal.key or '<recipe>'}, e.g. {refusal.example}"
    if not result.candidates:
        yield "no layout fits: see the memory of the closest in `plan --set ...`"
        return
    yield ""
    header = ("#", "layout", "peak phase", "peak %", "headroom GiB", "comm")
    rows = [header]
    for index, candidate in enumerate(result.candidates, 1):
        peak = candidate.memory.peak
        rows.append(
            (
                str(index),
                _layout_text(candidate.plan.layout),
                peak.name,
                f"{100 * peak.fraction:.0f}",
                f"{candidate.headroom_gib:.1f}",
                f"{candidate.communication:.2f}",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    for row in rows:
        yield "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
    best = result.candidates[0]
    yield ""
    if not best.overrides and not result.moved:
        yield "the best is the recipe's own layout"
        return
    yield "the best as a change to the recipe:"
    yield f"  {_variable(stage.name)}.with_values("
    yield "      {"
    for key, value in best.overrides.items():
        yield f"          {key!r}: {value!r},"
    yield "      },"
    if result.moved:
        yield f"      hardware=Hardware({_node_constant(hw)}, num_nodes={hw.num_nodes}),"
    yield "  )"


def _variable(name: str) -> str:
    return name.replace("-", "_")


def _node_constant(hardware: Hardware) -> str:
    return f"{hardware.node.name.upper()}_NODE"


def _layout_text(layout: Any) -> str:
    p: ParallelLayout = layout.parallel
    dp = p.whole_groups
    text = f"TP{p.tp} PP{p.pp} CP{p.cp} EP{p.ep} ETP{p.etp}"
    nodes = getattr(layout, "nodes", None)
    if nodes is None or isinstance(nodes, int):
        return f"{text} DP{dp}"
    if not nodes.colocated:
        return (
            f"gen {nodes.generation_nodes} nodes vTP{layout.vllm_tensor_parallel} | train "
            f"{nodes.training_nodes} nodes {text} DP{dp}"
        )
    return f"colocated vTP{layout.vllm_tensor_parallel} | {text} DP{dp}"
