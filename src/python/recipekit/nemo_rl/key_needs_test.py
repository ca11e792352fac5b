"""Keys a feature needs (nemo_rl.checks.key_needs, tools/generate_key_needs.py): the table is
what the pinned sources give, a stage that turns a feature on without the key it reads is
warned, naming the upstream line the table records, and no shipped stage nor any of NeMo-RL's
own example configs is. The keys every run reads (tools/every_run.py): a stage of the table's
entry point that leaves one out is refused, one of another entry point is not."""

from __future__ import annotations

import functools
import importlib
from pathlib import Path
from typing import Any

import pytest

from recipekit.errors import RecipeError
from recipekit.markers import UNSET
from recipekit.nemo_rl import SUPER35_TYPES, SUPER_V3_TYPES
from recipekit.nemo_rl.checks.key_needs import (
    _shown,
    every_run,
    holds,
    missing,
    missing_keys,
    pairs,
    unread_keys,
)
from recipekit.plan import make_plan
from recipekit.stage import Stage
from tools import generate_key_needs as generator
from tools.generated_modules import reference_dir, stale_outputs

SUPER35, SUPER3 = SUPER35_TYPES, SUPER_V3_TYPES


def _label(stage: Stage) -> str:
    return "nemo-rl/" + str(stage.framework.version).split("@")[0]


def _stages() -> list[Stage]:
    """Every NeMo-RL GRPO stage in recipes/, once (a module re-exports some by name)."""
    found: dict[str, Stage] = {}
    for module in ("recipes.super35.rl", "recipes.super35.teachers", "recipes.super35.mopd",
                   "recipes.super3.dapo"):  # fmt: skip
        for value in vars(importlib.import_module(module)).values():
            if isinstance(value, Stage) and "super-v3" in str(
                getattr(value.framework, "version", "")
            ):
                found[value.name] = value
    return list(found.values())


def test_the_table_is_what_the_generator_writes() -> None:
    stale = stale_outputs(generator.generate, [SUPER35, SUPER3])
    assert not stale, f"stale: run python3 {generator.TOOL}"


def test_a_logger_turned_on_without_its_section_is_warned_at_the_line_that_reads_it() -> None:
    from recipes.super35.rl import rlvr

    rendered = make_plan(rlvr).framework_config
    assert not [w for w in missing_keys(rendered, SUPER35) if w.path == "logger.swanlab"]
    switched = rendered | {"logger": rendered["logger"] | {"swanlab_enabled": True}}
    (warning,) = (w.render() for w in missing_keys(switched, SUPER35) if w.path == "logger.swanlab")
    (pair,) = (p for p in pairs(SUPER35) if p["needs"] == ["swanlab"] and p["at"] == [["logger"]])
    assert warning.startswith("logger.swanlab: is absent, and NeMo-RL reads it without a default")
    where = f"{pair['file']}:{pair['line']} @ super-v3.5-posttraining"
    assert where in warning
    assert "where logger.swanlab_enabled (Logger.__init__" in warning
    # Its runner builds the logger on every run, which the replay of the runner follows: the
    # plan refuses it there (recipekit.upstream.runners), at the same read.
    with pytest.raises(RecipeError) as refused:
        make_plan(rlvr, ["logger.swanlab_enabled=true"])
    [error] = [i.render() for i in refused.value.issues]
    assert error.startswith("logger.swanlab: required key is missing") and where in error


@pytest.mark.parametrize("stage", _stages(), ids=lambda s: s.name)
def test_no_shipped_stage_lacks_a_key_its_features_need(stage: Stage) -> None:
    assert not list(missing_keys(make_plan(stage).framework_config, _label(stage)))


# A stage of each runner the table reads: the shipped GRPO stages, and NeMo-RL's own example
# config of each other runner as import-yaml makes it.
RUNNER_STAGES = {
    (SUPER35, "examples/nemo_gym/run_grpo_nemo_gym.py"): "recipes.super35.rl:rlvr",
    (SUPER3, "examples/run_grpo.py"): "recipes.super3.dapo:dapo_h100",
    (SUPER35, "examples/run_sft.py"): "main/examples/configs/sft.yaml",
    (SUPER35, "examples/run_dpo.py"): "main/examples/configs/dpo.yaml",
    (SUPER35, "examples/run_ppo.py"): "main/examples/configs/ppo_math_1B.yaml",
}


def _every_run_cases() -> list[tuple[str, str, dict[str, Any]]]:
    """Each key of each runner's table, with the first read of it the refusal names."""
    found: dict[tuple[str, str, str], dict[str, Any]] = {}
    for label in (SUPER35, SUPER3):
        for entry, reads in every_run(label).items():
            for read in reads:
                found.setdefault((label, entry, ".".join([*read["at"], *read["needs"]])), read)
    return [(label, entry, read) for (label, entry, _), read in found.items()]


def _runner_stage(label: str, entry: str, tmp_path: Path) -> Stage:
    from recipekit.loading import load_object
    from recipekit.nemo_rl.rules.conftest import imported_stage

    where = RUNNER_STAGES[(label, entry)]
    if where.endswith(".yaml"):
        config = reference_dir() / "nemo-rl" / where
        if not config.is_file():
            pytest.skip(f"{config} is not here")
        return imported_stage(config, tmp_path)
    stage = load_object(where)
    assert isinstance(stage, Stage)
    return stage


def _issues(stage: Stage) -> list[Any]:
    try:
        make_plan(stage, check_pins=False)
    except RecipeError as exc:
        return list(exc.issues)
    return []


def test_every_run_reads_the_keys_a_run_cannot_start_without() -> None:
    # Read from the pinned sources: each runner's setup and CheckpointManager.__init__.
    assert set(RUNNER_STAGES) == {(lb, e) for lb in (SUPER35, SUPER3) for e in every_run(lb)}
    for label in (SUPER35, SUPER3):
        for entry, reads in every_run(label).items():
            found = {(".".join(r["at"]), r["needs"][0]) for r in reads}
            assert ("checkpointing", "keep_top_k") in found, entry


@pytest.mark.parametrize(
    ("label", "entry", "read"),
    _every_run_cases(),
    ids=lambda v: v.rsplit("/", 1)[-1] if isinstance(v, str) else ".".join(v["at"] + v["needs"]),
)
def test_a_stage_without_a_key_every_run_reads_is_refused_at_it(
    label: str, entry: str, read: dict[str, Any], tmp_path: Path
) -> None:
    stage = _runner_stage(label, entry, tmp_path)
    assert stage.framework.entry_point == entry
    path = ".".join([*read["at"], *read["needs"]])
    assert path not in {i.path for i in _issues(stage)}
    [issue] = [i.render() for i in _issues(stage.with_values({path: UNSET})) if i.path == path]
    assert f"{read['file']}:{read['line']} @ " in issue and "KeyError" in issue
    # The same config for another runner, which reaches other code: the table says nothing.
    config = make_plan(stage, check_pins=False).framework_config
    section = config
    for key in read["at"]:
        section = section[key]
    del section[read["needs"][0]]
    assert [i.path for i in unread_keys(config, label, entry)] == [path]
    assert not list(unread_keys(config, label, "examples/run_rm.py"))


@functools.cache
def _examples(label: str) -> list[tuple[str, dict[str, Any]]]:
    from recipekit.nemo_rl.yaml_loader import expand

    # super-v3.5-posttraining's schema is main's; the mirror has main's example configs.
    root = reference_dir() / ("nemo-rl/main" if label == SUPER35 else label) / "examples"
    found = []
    for path in sorted([*root.glob("configs/grpo*.yaml"), *root.glob("nemo_gym/**/*.yaml")]):
        try:
            config = expand(path)
        except Exception:  # noqa: BLE001 - a file that is no GRPO config
            continue
        if isinstance(config, dict) and "grpo" in config and "policy" in config:
            found.append((str(path.relative_to(root)), config))
    return found


@pytest.mark.parametrize("label", [SUPER35, SUPER3])
def test_nemo_rls_own_example_configs_lack_no_key_they_turn_on(label: str) -> None:
    examples = _examples(label)
    if not examples:
        pytest.skip(f"no {label} example configs under {reference_dir()}")
    assert len(examples) >= 10
    warned = {name: [i.render() for i in missing_keys(config, label)] for name, config in examples}
    assert not {name: issues for name, issues in warned.items() if issues}
    entry = next(e for e in every_run(label) if "grpo" in e)
    refused = {name: [i.render() for i in unread_keys(c, label, entry)] for name, c in examples}
    assert not {name: issues for name, issues in refused.items() if issues}


def test_conditions_read_as_python_reads_them() -> None:
    section = {"a": {"enabled": True, "n": 3}, "b": None, "c": "fp8_e4m3"}
    assert holds(section, "section['a']['enabled']")
    assert holds(section, "'n' in section['a']") and not holds(section, "'m' in section['a']")
    assert holds(section, "section['a'].get('m', True)")
    assert holds(section, "section['a']['n'] > 2")
    assert holds(section, "section['b'] is None")
    assert holds(section, "'x' in section or not 'x' in section")
    assert holds(section, "section['x']") is None  # a key the config lacks: unknown
    assert holds(section, "section['c'] > 2") is None  # what does not compare: unknown


def test_a_condition_is_shown_with_its_key_paths() -> None:
    when = "'async_grpo' in section['grpo'] and section['grpo'].get('n', 0) > 1"
    assert _shown(when, "") == "grpo.async_grpo is set and grpo.n > 1"
    assert _shown("not 'swanlab' in section", "logger") == "not logger.swanlab is set"
    assert _shown("section['swanlab_enabled']", "logger") == "logger.swanlab_enabled"


_MODULE = """
def setup(cfg, other):
    if cfg["feature_enabled"]:
        use(cfg["feature"])                      # a pair
    if cfg.get("level", 0) > 1 and cfg["extra"]["x"]:
        pass                                     # a pair: extra needs level > 1
    if other["feature_enabled"]:
        use(cfg["feature"])                      # another object's condition: dropped
    if "feature" in cfg:
        use(cfg["feature"])                      # guarded by itself: a pair whose condition
                                                 # is false where it is absent
    for item in cfg["items"]:
        if cfg["feature_enabled"]:
            use(cfg["feature"])                  # under a loop: dropped
    use(cfg["required_key"])                     # no condition: not a pair


def fills(cfg):
    if cfg["feature_enabled"]:
        cfg["feature"] = {}
        use(cfg["feature"])                      # assigned in its function: dropped
"""


def test_the_generator_keeps_only_the_reads_it_can_read_exactly() -> None:
    keys = {
        ("feature_enabled",): True,
        ("feature",): False,
        ("level",): False,
        ("extra",): False,
        ("extra", "x"): True,
        ("items",): True,
        ("required_key",): True,
    }
    found = sorted(generator.module_pairs("m.py", _MODULE, keys), key=lambda p: p["line"])
    assert [(p["line"], p["needs"]) for p in found] == [(4, ["feature"]), (5, ["extra", "x"]),
                                                        (10, ["feature"])]  # fmt: skip
    by_line = {p["line"]: p for p in found}
    assert by_line[4]["when"] == "section['feature_enabled']"
    assert by_line[5]["when"] == "section.get('level', 0) > 1"
    assert by_line[4]["at"] == [[]] and by_line[4]["scope"] == "setup"
    config: dict[str, Any] = {"feature_enabled": True, "level": 2, "items": []}
    assert [i.path for i in missing(config, found, SUPER35)] == ["feature", "extra"]


_FLAGGED = """
class Policy:
    def __init__(self, config, other):
        if config["feature_enabled"]:
            self.use_feature = True
        else:
            self.use_feature = False
        if not config["feature_enabled"]:
            self.plain = True
        else:
            self.plain = False
        if other["feature_enabled"]:
            self.foreign = True
        else:
            self.foreign = False
        self.twice = False
        if config["feature_enabled"]:
            self.twice = True
        else:
            self.twice = False
        self.cfg = config

    def run(self):
        if self.use_feature:
            use(self.cfg["feature"])             # a pair: the flag is feature_enabled
        if not self.plain:
            use(self.cfg["extra"])               # a pair: not (not feature_enabled)
        if self.foreign:
            use(self.cfg["feature"])             # another object's flag: dropped
        if self.twice:
            use(self.cfg["feature"])             # a flag assigned a third time: dropped
"""


def test_a_flag_init_sets_from_the_config_stands_for_its_test() -> None:
    # Policy.__init__ keeps use_dynamic_batches from config["dynamic_batching"]["enabled"] and
    # the config as self.cfg; its methods read self.cfg["dynamic_batching"]["train_mb_tokens"]
    # under the flag (lm_policy.py).
    keys: dict[tuple[str, ...], bool] = {
        ("feature_enabled",): True,
        ("feature",): False,
        ("extra",): False,
    }
    found = sorted(generator.module_pairs("m.py", _FLAGGED, keys), key=lambda p: p["line"])
    lines = _FLAGGED.splitlines()
    kept = [n for n, line in enumerate(lines, 1) if "# a pair" in line]
    assert [(p["line"], p["needs"], p["scope"]) for p in found] == [
        (kept[0], ["feature"], "Policy.run"),
        (kept[1], ["extra"], "Policy.run"),
    ]
    assert found[0]["when"] == "section['feature_enabled']"
    assert found[1]["when"] == "not not section['feature_enabled']"
    config: dict[str, Any] = {"feature_enabled": True}
    assert [i.path for i in missing(config, found, SUPER35)] == ["feature", "extra"]
    assert not list(missing({"feature_enabled": False}, found, SUPER35))
