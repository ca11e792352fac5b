"""NeMo-RL's pydantic config classes' validators, read from the pinned source
(tools/generate_nemo_rl_guards.py) and replayed on the rendered config: refused at the key; and
held to NeMo-RL's own classes, built by pydantic from the pinned module itself.

# The catalogued check these tests break, which the rule catalogue's meta-test finds by name:
# config_validators_hold.
"""

from __future__ import annotations

import ast
import importlib.util
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from recipekit.nemo_rl.config_guards import reached, tables
from recipekit.nemo_rl.rules.conftest import imported_stage, plan_errors
from recipekit.rule_sites import sites
from recipekit.stage import Stage
from recipekit.upstream.anchors import rule_sites
from recipes.super35.rl import rlvr
from tools import generate_nemo_rl_guards as generator
from tools.config_programs import Pinned, catalogue_gaps
from tools.generated_modules import stale_outputs

SINGLE_CONTROLLER = "nemo-rl/main/examples/configs/grpo_math_1B_megatron_single_controller.yaml"
CONFIG = "nemo_rl.algorithms.single_controller_utils.config"
RF = "async_rl.rollout_failure"
ROUTER = "async_rl.generation_router"


def test_the_generated_table_is_what_the_tool_writes() -> None:
    stale = stale_outputs(generator.generate, [generator.LABEL])
    assert not stale, f"{stale} stale: run python3 {generator.TOOL}"


def test_the_catalogue_names_the_generic_check_for_what_the_replay_evaluates() -> None:
    pinned = Pinned(Path(), "nemo-rl", generator.GENERIC, generator.LABEL)
    assert not catalogue_gaps(tables(), pinned)


@pytest.fixture(scope="module")
def single_controller(reference_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Stage:
    example = reference_dir / SINGLE_CONTROLLER
    if not example.is_file():
        pytest.skip(f"{example} is not here")
    return imported_stage(example, tmp_path_factory.mktemp("single_controller"))


def _errors(stage: Stage, *overrides: str) -> list[str]:
    # The example asks for 2-GPU nodes, which the imported stage's hardware refuses: not ours.
    return [e for e in plan_errors(stage, *overrides) if not e.startswith("cluster.")]


def _line(rule: str) -> str:
    _, file, line = sites("nemo_rl")[f"nemo-rl.algorithms.{rule}"]
    return f"{file}:{line}"


def test_the_single_controllers_async_rl_is_a_key_of_its_config(single_controller: Stage) -> None:
    # The runner's own MasterConfig declares async_rl: the example plans with it, and a value
    # its declared type refuses (a PositiveFloat) is refused.
    assert _errors(single_controller) == []
    [error] = _errors(single_controller, f"{ROUTER}.backend_timeout_s=-1")
    assert error.startswith(f"{ROUTER}.backend_timeout_s = -1: expected")


SC = "single-controller-utils.config"


@pytest.mark.parametrize(
    ("overrides", "key", "rule"),
    [
        (
            (f"{ROUTER}.enabled=true", f"{ROUTER}.backend_timeout_s=900"),
            f"{ROUTER}.backend_timeout_s",
            f"{SC}.async-rl-config.check-router-deadline-fits-inside-the-rollout."
            "router-deadline-within-rollout-deadline",
        ),
        (
            (f"{RF}.max_backoff_s=0.5",),
            f"{RF}.max_backoff_s",
            f"{SC}.rollout-failure-config.check-consistent.max-backoff-least-backoff-base",
        ),
        (
            (f"{RF}.on_dropped_prompt=replace", f"{RF}.replacement_reserve_prompts=0"),
            f"{RF}.replacement_reserve_prompts",
            f"{SC}.rollout-failure-config.check-consistent.replace-needs-reserve-prompts",
        ),
        (
            (f"{ROUTER}.port_range_low=7000",),
            f"{ROUTER}.port_range_low",
            f"{SC}.generation-router-config.check-port-range.port-range-ordered",
        ),
        (
            ("async_rl.stall_watchdog.stall_timeout_s=10",),
            "async_rl.stall_watchdog.stall_timeout_s",
            f"{SC}.watchdog-config.check-consistent.stall-timeout-above-interval",
        ),
    ],
)
def test_a_validator_the_config_breaks_is_refused_at_its_key(
    single_controller: Stage, overrides: tuple[str, ...], key: str, rule: str
) -> None:
    found = _errors(single_controller, f"{RF}.nemo_gym.rollout_timeout_s=600", *overrides)
    line = _line(rule)
    assert [e for e in found if e.startswith(f"{key} = ") and line in e], found
    assert all("NeMo-RL refuses the config when it loads" in e for e in found), found


def test_what_the_validators_accept_plans(single_controller: Stage) -> None:
    kept = (
        f"{ROUTER}.enabled=true",
        f"{ROUTER}.backend_timeout_s=300",
        f"{RF}.nemo_gym.rollout_timeout_s=600",
        f"{RF}.max_backoff_s=0.5",
        f"{RF}.backoff_base_s=0.25",
        f"{RF}.on_dropped_prompt=replace",
    )
    assert _errors(single_controller, *kept) == []


def test_an_interpolated_value_is_not_judged() -> None:
    # The job resolves ${...} (one recipekit writes): a check that reads it says nothing.
    broken = {"rollout_failure": {"max_backoff_s": 0.5}}
    assert [path for path, _, _ in reached(broken, f"{CONFIG}:AsyncRLConfig")] == [
        "rollout_failure"
    ]
    opaque = {"rollout_failure": {"max_backoff_s": "${grpo.backoff}"}}
    assert list(reached(opaque, f"{CONFIG}:AsyncRLConfig")) == []


def test_grpos_reward_penalties_are_validated_on_super35() -> None:
    line = _line(
        "grpo.reward-penalty-config.require-unwanted-token-ids-when-penalized."
        "unwanted-penalty-needs-token-ids"
    )
    [error] = plan_errors(rlvr, "reward_penalties.penalize_unwanted_tokens=true")
    assert error.startswith("reward_penalties.penalize_unwanted_tokens = True") and line in error
    kept = "reward_penalties={penalize_unwanted_tokens: true, token_ids: {unwanted: [7]}}"
    assert plan_errors(rlvr, kept) == []


# --- NeMo-RL's own verdict: the pinned module, built by pydantic ---------------------------------


# file -> where it is pinned, for the modules the verdict loads.
_PINNED: dict[str, Path] = {}


class _Stub(types.ModuleType):
    """A module the pinned file imports that the verdict does not need: every name is Any."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return Any


@pytest.fixture(scope="module")
def pinned_module(reference_dir: Path) -> Iterator[types.ModuleType]:
    """single_controller_utils/config.py (and the sampler module it types async_rl.sampler
    with) as pydantic runs them, the other NeMo-RL modules they import stubbed."""
    root = reference_dir / generator.LABEL
    real = {
        "nemo_rl.algorithms.async_utils.staleness_sampler": "async_utils/staleness_sampler.py",
        CONFIG: "single_controller_utils/config.py",
    }
    saved = dict(sys.modules)
    stubs = [
        "nemo_rl.algorithms.async_utils.replay_buffer",
        "nemo_rl.data_plane.interfaces",
        "nemo_rl.algorithms.grpo",
        "nemo_rl.algorithms.loss",
        "nemo_rl.data",
        "nemo_rl.distributed.virtual_cluster",
        "nemo_rl.models.policy",
        "nemo_rl.utils.checkpoint",
        *real,
    ]
    try:
        for name in stubs:
            parts = name.split(".")
            for end in range(1, len(parts) + 1):
                stub = _Stub(".".join(parts[:end]))
                stub.__path__ = []
                sys.modules.setdefault(".".join(parts[:end]), stub)
        module = None
        for name, file in real.items():
            spec = importlib.util.spec_from_file_location(name, root / "nemo_rl/algorithms" / file)
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            spec.loader.exec_module(module)
        assert module is not None
        _PINNED.update({generator.module_file(n): root / generator.module_file(n) for n in real})
        yield module
    finally:
        sys.modules.clear()
        sys.modules.update(saved)


# async_rl values that break or keep each validator the replay evaluates, and some it does not.
CASES: dict[str, dict[str, Any]] = {
    "defaults": {},
    "router-deadline-broken": {
        "generation_router": {"enabled": True, "backend_timeout_s": 500.0},
        "rollout_failure": {"nemo_gym": {"rollout_timeout_s": 400.0}},
    },
    "router-deadline-kept": {
        "generation_router": {"enabled": True, "backend_timeout_s": 300.0},
        "rollout_failure": {"nemo_gym": {"rollout_timeout_s": 400.0}},
    },
    "router-off": {
        "generation_router": {"backend_timeout_s": 500.0},
        "rollout_failure": {"nemo_gym": {"rollout_timeout_s": 400.0}},
    },
    "backoff-broken": {"rollout_failure": {"max_backoff_s": 0.5}},
    "backoff-kept": {"rollout_failure": {"max_backoff_s": 0.5, "backoff_base_s": 0.25}},
    "replace-attempts-broken": {
        "rollout_failure": {"on_dropped_prompt": "replace", "max_replacement_attempts": 0}
    },
    "shrink-attempts-kept": {"rollout_failure": {"max_replacement_attempts": 0}},
    "replace-reserve-broken": {
        "rollout_failure": {"on_dropped_prompt": "replace", "replacement_reserve_prompts": 0}
    },
    "probe-broken": {"generation_fleet_health": {"probe_timeout_s": 5.0}},
    "probe-kept": {"generation_fleet_health": {"probe_timeout_s": 4.0}},
    "ports-broken": {"generation_router": {"port_range_low": 6099}},
    "connect-broken": {"generation_router": {"connect_timeout_s": 700.0}},
    "watchdog-broken": {"stall_watchdog": {"interval_s": 600.0}},
    "watchdog-kept": {"stall_watchdog": {"interval_s": 599.0}},
    # The replay does not follow a loop or getattr in a comprehension: NeMo-RL refuses these,
    # the replay says nothing (never the other way).
    "stall-below-rollout": {
        "stall_watchdog": {"stall_timeout_s": 100.0},
        "rollout_failure": {"nemo_gym": {"rollout_timeout_s": 60.0}},
    },
    "renamed-block": {"watchdog": {"interval_s": 10.0}},
}


UNFOLLOWED = ("stall-below-rollout", "renamed-block")


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_replay_agrees_with_nemo_rls_own_classes(
    case: str, pinned_module: types.ModuleType
) -> None:
    """Where NeMo-RL builds the config, the replay refuses nothing; where it refuses, the
    replay's first refusal is the model pydantic names (its error's location) and the raise
    NeMo-RL's message comes from, or (a check the replay does not follow) none at all."""
    import pydantic

    given = CASES[case]
    found = list(reached(given, f"{CONFIG}:AsyncRLConfig"))
    try:
        pinned_module.AsyncRLConfig(**given)
    except pydantic.ValidationError as exc:
        [error] = exc.errors()
    else:
        assert found == [] and not case.endswith("broken"), (case, found)
        return
    assert case.endswith("broken") or case in UNFOLLOWED, (case, error)
    if case in UNFOLLOWED:
        assert found == [], (case, found)
        return
    path, _, first = found[0]
    assert path == ".".join(str(part) for part in error["loc"]), (case, path, error)
    assert _message_start(first.step[3]) in error["msg"], (case, first.step, error["msg"])


def _message_start(where: str) -> str:
    """The constant text a raise at ``where`` (file:line) begins its message with."""
    file, line = where.rsplit(":", 1)
    [site] = [s for s in rule_sites(_PINNED[file].read_text()) if s.line == int(line)]
    raised = ast.parse(site.text).body[0]
    assert isinstance(raised, ast.Raise) and isinstance(raised.exc, ast.Call)
    message = raised.exc.args[0]
    first = message.values[0] if isinstance(message, ast.JoinedStr) else message
    assert isinstance(first, ast.Constant)
    return str(first.value)
