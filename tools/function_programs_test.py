"""The function replay (``tools/function_programs.py`` writes the programs,
``recipekit.upstream.replay`` runs them) against CPython running the same functions.

A small pinned tree of a runner and its helpers is written to a folder, read as programs, and
replayed on a config; the same source is then run by Python on the same config. Where the
replay reports a failure, Python fails there first; where it reports none, Python fails only
at a check the replay says it cannot tell (after code it does not follow)."""

from __future__ import annotations

import ast
import copy
import importlib.util
import sys
import textwrap
import types
from pathlib import Path
from typing import Any

import pytest

from recipekit.upstream import conditions
from recipekit.upstream.replay import Reached, described, replay
from recipekit.upstream.runners import MASTER
from tools.config_programs import Pinned
from tools.every_run import Modules
from tools.function_programs import MASTER as WRITTEN_MASTER
from tools.function_programs import Functions, _unchanged

RUN_X = "examples/run_x.py"
# What the replay runs: the file's __main__ block, which calls main.
SCRIPT = "examples.run_x:__main__"
HELPERS = """
import copy
import importlib
from typing import NamedTuple


def normalise(cfg):
    cfg["b"] = cfg["a"] * 2
    return cfg


def check(cfg, least=1):
    assert cfg["a"] >= least


def enabled(cfg):
    return cfg.get("on", False)


def opaque(cfg):
    for key in list(cfg):
        cfg[key] = 100


def split(cfg):
    return cfg["s"], load_more()


def load_more():
    return [n for n in range(3)]


def switched(cfg):
    return bool(cfg.get("on2", False))


class Logger:
    def __init__(self, cfg):
        self.prefix = ""

    def log(self, params: "Mapping[str, int]") -> None:
        for key in params:
            print(self.prefix, key)


def gym_on(cfg):
    flag = bool(cfg.get("gym", True))
    if not flag:
        return False
    return True


class Holder:
    def __init__(self, cfg):
        assert cfg["a"] != 10


def first_positive(cfg):
    for value in cfg["vals"]:
        if value > 0:
            return value
    raise ValueError("no positive value")


class Builder:
    # Builds a worker as NeMo-RL's RayWorkerBuilder does: by its dotted path, on a copy of
    # what it was handed.

    def __init__(self, dotted, *args, **kwargs):
        self.dotted, self.args, self.kwargs = dotted, args, kwargs

    def create(self):
        module, _, name = self.dotted.rpartition(".")
        cls = getattr(importlib.import_module(module), name)
        return cls(*copy.deepcopy(self.args), **copy.deepcopy(self.kwargs))


class WorkerImpl:
    def __init__(self, cfg, scale=1):
        assert cfg.get("w", 0) * scale != 2
        cfg["w"] = 5


class Worker(WorkerImpl):
    pass


LIMIT = 11


def options(cfg):
    return dict(cfg.get("opts", {}), n=2, **{"m": 1})


def engine(cfg):
    # As NeMo-RL's vLLM worker builds the engine's arguments: what it passes itself, then
    # what the config adds, on a copy.
    extra = copy.deepcopy(cfg.get("eng", {}))
    made = dict(model="m", size=2, **extra)
    return made


class Swapper:
    def __init__(self, cfg, other):
        self.cfg = cfg
        if load_more():  # true, which the replay cannot tell
            self.cfg = other
        self.tweak()

    def tweak(self):
        self.cfg["w3"] = 5


class Base:
    def __init__(self, cfg):
        self.cfg = cfg
        self.check()

    def check(self):
        assert self.cfg.get("o", 0) != 1


class Child(Base):
    def check(self):
        assert self.cfg.get("o", 0) != 2


class Static(Base):
    @staticmethod
    def check():
        print("no check")


class Derived(Base):
    def __init__(self, cfg):
        super().__init__(cfg)
        assert self.cfg.get("o", 0) != 3


def bounded(cfg):
    assert cfg.get("m", 0) < LIMIT


class Settings(NamedTuple):
    size: int
    extra: dict
    fallback: int = 4


def settings_of(cfg):
    return Settings(cfg.get("size", 1), extra=load_more())


def peek(cfg):
    for key in ("x", "y"):
        if key in cfg and cfg.get(key) is not None:
            yield key, cfg[key]


class Keeper:
    def __init__(self, cfg):
        self.cfg = cfg
        self.k = cfg.get("k", 0)
        self.validate()

    def validate(self):
        assert self.cfg.get("j", 0) != 1
        assert self.k != 1


REGISTRY = {"x1": object, "x2": dict}
ADDED = {"y1": 1}


HANDED = {"z1": 1}


def register(name):
    ADDED[name] = 2


def fill(table):
    table["z2"] = 2


def register_handed():
    fill(table=HANDED)


def lookup(cfg):
    if cfg.get("reg", "x1") not in REGISTRY:
        raise ValueError("not registered")
    assert cfg.get("add", "y1") in ADDED
    assert cfg.get("handed", "z1") in HANDED


class Box:
    @staticmethod
    def limit(cfg):
        assert cfg["a"] != 9
        return cfg["a"]
"""

RUNNER = """
from replay_fixture.helpers import (
    LIMIT,
    Box,
    Child,
    Builder,
    Derived,
    Static,
    Keeper,
    Swapper,
    bounded,
    options,
    Holder,
    Logger,
    check,
    enabled,
    engine,
    first_positive,
    gym_on,
    lookup,
    peek,
    settings_of,
    normalise,
    opaque,
    split,
    switched,
)


class MasterConfig(dict):
    pass


def load():
    return {}


def main(config):
    config = MasterConfig(**config)
    section = config["s"]
    other = section
    normalise(other)
    assert section["b"] < 10
    check(section, least=2)
    if enabled(section) and section["c"] > 3:
        raise ValueError("c")
    limit = section["a"]
    logger = Logger(config)
    logger.log(config)
    first, more = split(config)
    assert first["a"] != 7

    def inner():
        assert section["a"] != 8

    def later():
        assert config["t"]["d"] != 2

    inner()
    tasks = {"later": later}
    for task in tasks.values():
        task()
    Box.limit(section)
    factory = None
    make = factory if factory is not None else Holder
    make(section)
    assert not switched(section)
    assert gym_on(section)
    if "vals" in section:
        assert first_positive(section) != 6
    path = "replay_fixture.helpers.Worker" if section["a"] != 5 else "replay_fixture.helpers.Box"
    Builder(path, section, scale=2).create()
    Keeper(config.get("u", {}))
    for key, value in peek(section):
        print(key, value)
    assert section.get("z", 0) != 3
    made = settings_of(section)
    assert made.size * made.fallback != 8
    bounded(section)
    Child(config.get("v", {}))
    Derived(config.get("v2", {}))
    Static(config.get("v3", {}))
    assert options(section)["n"] * section.get("q", 0) != 4
    assert engine(section)["size"] != 3
    if section.get("swap"):
        Swapper(config.get("x1", {}), section)
        assert section.get("w3", 0) == 5
    assert section.get("m2", 0) != LIMIT
    popped = section.pop("p", 0)
    assert popped != 4
    assert section.get("p", 0) != 5
    try:
        assert section.get("tf", 0) != 6
    finally:
        print("checked")
    lookup(section)
    assert section.get("w", 0) != 5
    if section.get("hold"):
        opaque(section)
    assert config["s"]["b"] < 9
    assert limit != 4
    assert config["t"]["d"] != 0
    assert config["t"].get("e", 0) < 5


if __name__ == "__main__":
    main(load())
"""


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("pinned")
    (root / "replay_fixture").mkdir()
    (root / "replay_fixture" / "helpers.py").write_text(textwrap.dedent(HELPERS))
    (root / "examples").mkdir()
    (root / RUN_X).write_text(textwrap.dedent(RUNNER))
    return root


@pytest.fixture(scope="module")
def programs(tree: Path) -> dict[str, list[Any]]:
    texts = {str(p.relative_to(tree)): p.read_text() for p in tree.rglob("*.py")}
    # A label no catalogue entry has: nothing here is mirrored by a hand-written check.
    pinned = Pinned(tree, "nemo-rl", (), "synthetic")
    functions = Functions(Modules(texts), pinned, ("replay_fixture.helpers:Builder",))
    assert functions.runner(RUN_X) == SCRIPT
    return {name: entry["program"] for name, entry in functions.kept().items()}


@pytest.fixture(scope="module")
def module(tree: Path) -> types.ModuleType:
    # Python runs the same files, under names no other test's modules have.
    sys.path.insert(0, str(tree))
    try:
        spec = importlib.util.spec_from_file_location("replay_fixture_run_x", tree / RUN_X)
        assert spec is not None and spec.loader is not None
        run_x = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(run_x)
    finally:
        sys.path.remove(str(tree))
    return run_x


def _replayed(programs: dict[str, list[Any]], config: dict[str, Any]) -> list[Reached]:
    values = {MASTER: conditions.tracked(copy.deepcopy(config))}
    return replay(programs[SCRIPT], values, programs)


def _python(module: types.ModuleType, config: dict[str, Any]) -> tuple[str, int] | None:
    """(the exception, the line of the runner or helper it came from), None where main runs."""
    try:
        module.main(copy.deepcopy(config))
    except (AssertionError, ValueError, KeyError, TypeError) as exc:
        tb = exc.__traceback__
        while tb is not None and tb.tb_next is not None:
            tb = tb.tb_next
        assert tb is not None
        return type(exc).__name__, tb.tb_lineno
    return None


def _line(found: Reached) -> int:
    return int(described(found.step)[0].rpartition(":")[2])


def test_the_runner_starts_from_the_master_config_it_builds() -> None:
    assert MASTER == WRITTEN_MASTER


GOOD = {"s": {"a": 3}, "t": {"d": 1}}


@pytest.mark.parametrize(
    ("case", "config"),
    [
        ("passes", GOOD),
        # normalise writes b = 2a through another name for the same mapping: 12 >= 10.
        ("a write through an alias", {"s": {"a": 6}, "t": {"d": 1}}),
        # check's default is overridden by the call's keyword: 1 < 2.
        ("a keyword binds", {"s": {"a": 1}, "t": {"d": 1}}),
        # enabled returns True, and the second operand reads c.
        ("a returned value decides", {"s": {"a": 3, "on": True, "c": 5}, "t": {"d": 1}}),
        # The second operand reads a key the section does not have: Python's KeyError.
        ("a missing key", {"s": {"a": 3, "on": True}, "t": {"d": 1}}),
        # limit is read before anything changes it.
        ("a saved value", {"s": {"a": 4}, "t": {"d": 1}}),
        ("a missing section", {"s": {"a": 3}}),
        ("a later check", {"s": {"a": 3}, "t": {"d": 0}}),
        # None ordered with a number: Python's TypeError, at the check that orders it.
        ("a None ordered", {"s": {"a": 3}, "t": {"d": 1, "e": None}}),
        # An item a function returns in a tuple, the others unknown.
        ("an unpacked item", {"s": {"a": 7}, "t": {"d": 1}}),
        # A function main defines itself, called by name: it reads main's names.
        ("a nested function", {"s": {"a": 8}, "t": {"d": 1}}),
        # One handed on in a table of tasks, which runs it.
        ("a nested function handed on", {"s": {"a": 3}, "t": {"d": 2}}),
        # A static method called on its class.
        ("a static method", {"s": {"a": 9}, "t": {"d": 1}}),
        # A name set to one of two callables: the test picks the class that is built.
        ("a picked class", {"s": {"a": 10}, "t": {"d": 1}}),
        # A constant a function returns in a branch: the branch's test decides.
        ("a returned constant", {"s": {"a": 3, "gym": False}, "t": {"d": 1}}),
        # What a function returns, converted: its result decides.
        ("a converted result", {"s": {"a": 3, "on2": True}, "t": {"d": 1}}),
        # A loop may return: what comes after it may not run.
        ("a loop that returns", {"s": {"a": 3, "vals": [1]}, "t": {"d": 1}}),
        # A worker built by its dotted path runs its base's __init__, on a copy of the
        # section (what it stores stays its own: "passes" holds that).
        ("a worker", {"s": {"a": 3, "w": 1}, "t": {"d": 1}}),
        # Another class named: no worker's check.
        ("another class built", {"s": {"a": 5, "w": 1}, "t": {"d": 1}}),
        # What a constructor stores on the object it builds reads back in its methods.
        ("a method of the object being built", {"s": {"a": 3}, "t": {"d": 1}, "u": {"j": 1}}),
        ("an attribute of the object being built", {"s": {"a": 3}, "t": {"d": 1}, "u": {"k": 1}}),
        # A loop over what a pinned function reads out of the section, which it leaves as it
        # is (read from its source): the section stays known.
        ("a section read in a loop", {"s": {"a": 3, "x": 1, "z": 3}, "t": {"d": 1}}),
        # A NamedTuple a function builds and returns: its fields, given or defaulted, read back.
        ("a record's fields", {"s": {"a": 3, "size": 2}, "t": {"d": 1}}),
        # A module's constant, read where it is defined and where it is imported.
        ("a module's constant", {"s": {"a": 3, "m": 11}, "t": {"d": 1}}),
        ("an imported constant", {"s": {"a": 3, "m2": 11}, "t": {"d": 1}}),
        # The base's __init__ calls a method the class built overrides: the override runs,
        # not the base's own check (the object's class picks it).
        ("an overridden method", {"s": {"a": 3}, "t": {"d": 1}, "v": {"o": 2}}),
        ("an overridden method's base", {"s": {"a": 3}, "t": {"d": 1}, "v": {"o": 1}}),
        # super().__init__ builds the object its caller holds, and the base's method runs on it
        # (the class built does not override it); the caller reads what it stored after.
        ("a base's __init__ through super()", {"s": {"a": 3}, "t": {"d": 1}, "v2": {"o": 1}}),
        ("after super().__init__", {"s": {"a": 3}, "t": {"d": 1}, "v2": {"o": 3}}),
        # The class built makes the method static: the base's check does not run on it.
        ("a static override", {"s": {"a": 3}, "t": {"d": 1}, "v3": {"o": 1}}),
        # dict(mapping, key=value, **more), evaluated.
        ("a dict built with keywords", {"s": {"a": 3, "q": 2}, "t": {"d": 1}}),
        # A keyword the config's mapping hands a call that names it too: Python's TypeError
        # where the call is made, not the check after it (copy.deepcopy, evaluated).
        ("a keyword handed twice", {"s": {"a": 3, "eng": {"size": 3}}, "t": {"d": 1}}),
        ("a keyword handed once", {"s": {"a": 3, "eng": {"other": 3}}, "t": {"d": 1}}),
        # An object that may hold the section after a branch the replay cannot decide changes
        # it through a method: the section is not judged as it was.
        ("a value a built object may hold", {"s": {"a": 3, "swap": True}, "t": {"d": 1}}),
        # dict.pop with a default: what it returns is the key's value; the key is gone after
        # (not judged as it was).
        ("a popped value", {"s": {"a": 3, "p": 4}, "t": {"d": 1}}),
        ("a popped key", {"s": {"a": 3, "p": 5}, "t": {"d": 1}}),
        # try/finally catches nothing: a check in its body fails the run.
        ("a check in try/finally", {"s": {"a": 3, "tf": 6}, "t": {"d": 1}}),
        # A name its module's dict literal does not hold, whatever the values are.
        ("a name the registry lacks", {"s": {"a": 3, "reg": "x3"}, "t": {"d": 1}}),
    ],
)
def test_the_replay_fails_where_python_does(
    programs: dict[str, list[Any]], module: types.ModuleType, case: str, config: dict[str, Any]
) -> None:
    found = _replayed(programs, config)
    verdict = _python(module, config)
    if verdict is None:
        assert found == [], case
    else:
        assert found, f"{case}: Python fails with {verdict}, the replay finds nothing"
        kind = "fails" if verdict[0] in ("KeyError", "TypeError") else "guard"
        assert (found[0].step[0], _line(found[0])) == (kind, verdict[1]), case


def test_what_code_it_does_not_follow_may_change_is_not_judged(
    programs: dict[str, list[Any]], module: types.ModuleType
) -> None:
    # opaque() (a loop the replay does not follow) sets b to 100 through the section: Python
    # fails at the check after it; the replay, which cannot tell, says nothing of b there.
    config = {"s": {"a": 3, "hold": True}, "t": {"d": 1}}
    assert _python(module, config) is not None
    assert _replayed(programs, config) == []


def test_a_registry_code_adds_to_is_not_judged_by_its_literal(
    programs: dict[str, list[Any]], module: types.ModuleType
) -> None:
    # register() adds to ADDED, so its literal is not all it may hold: Python fails here (no
    # call registered y2), but the replay does not claim to know.
    config = {"s": {"a": 3, "add": "y2"}, "t": {"d": 1}}
    assert _python(module, config) is not None
    assert _replayed(programs, config) == []
    # One handed to a call, by keyword, which may fill it.
    config = {"s": {"a": 3, "handed": "z2"}, "t": {"d": 1}}
    assert _python(module, config) is not None
    assert _replayed(programs, config) == []


def test_a_refusal_names_the_config_key_a_name_was_read_from(
    programs: dict[str, list[Any]],
) -> None:
    [found] = _replayed(programs, {"s": {"a": 4}, "t": {"d": 1}})
    assert conditions.keyed("limit", found.values) == "s.a"
    found, *_ = _replayed(programs, {"s": {"a": 6}, "t": {"d": 1}})
    assert conditions.keyed("section['b']", found.values) == "s.b"
    missing, *_ = _replayed(programs, {"s": {"a": 3}})
    assert missing.step[:3] == ["fails", "KeyError", "t"]
    # A function's result is the key it returned (bool(cfg.get("on2")): s.on2).
    [switched] = _replayed(programs, {"s": {"a": 3, "on2": True}, "t": {"d": 1}})
    [result] = conditions.read(switched.step[1])  # not not _rN
    assert conditions.keyed(result, switched.values) == "s.on2"
    # A constant returned in a branch is about the key the branch's test read.
    [gym] = _replayed(programs, {"s": {"a": 3, "gym": False}, "t": {"d": 1}})
    [result] = conditions.read(gym.step[1])  # not _rN
    assert conditions.keyed(result, gym.values) == "s.gym"
    # An attribute the object being built stored from a key is about that key.
    [kept] = _replayed(programs, {"s": {"a": 3}, "t": {"d": 1}, "u": {"k": 1}})
    assert conditions.keyed("self.k", kept.values) == "u.k"


def test_a_read_only_argument_stays_known(programs: dict[str, list[Any]]) -> None:
    """Logger.log(params: Mapping) loops over what it is handed (code the walk does not
    follow): declared read-only, the config stays known, and the checks after it judge."""
    found = _replayed(programs, {"s": {"a": 3}, "t": {"d": 0}})
    assert found and found[0].step[0] == "guard"


@pytest.mark.parametrize(
    ("body", "unchanged"),
    [
        ("if 'a' in cfg and cfg.get('a'):\n    return cfg['a']['b']", True),
        ("for k in ('a',):\n    yield k, cfg[k]", True),
        ("assert len(cfg) > 1 and not cfg.get('x')", True),
        ("cfg['a'] = 1", False),
        ("cfg['a']['b'] = 1", False),
        ("cfg.update({})", False),
        ("cfg['a'].append(1)", False),
        ("other(cfg['a'])", False),
        ("alias = cfg", False),
        ("section = cfg.get('a') or {}", False),
        ("return [cfg['a']]", False),
        ("return cfg", False),
        ("return cfg.get('a') or cfg", False),
    ],
)
def test_what_a_function_leaves_unchanged_is_read_from_its_source(
    body: str, unchanged: bool
) -> None:
    fn = ast.parse(f"def f(cfg):\n{textwrap.indent(body, '    ')}\n").body[0]
    assert isinstance(fn, ast.FunctionDef)
    assert ("cfg" in _unchanged(fn)) is unchanged
