"""What every run of an entry point reads (tools/every_run.py), on a small package written here:
each kind of read and call it keeps, and each it drops."""

from __future__ import annotations

from typing import Any

from recipekit.upstream.classes import UpstreamSource
from recipekit.upstream.declared import DeclaredTable
from tools.every_run import Package, reads

CONFIG = """
from typing import NotRequired, TypedDict

class Ckpt(TypedDict):
    enabled: bool
    keep: NotRequired[int]
    fmt: NotRequired[str]
    period: NotRequired[int]
    filled: NotRequired[int]
    later: NotRequired[int]
    loop: NotRequired[int]
    guarded: NotRequired[int]
    passed: NotRequired[int]
    finish: NotRequired[int]
    attr: NotRequired[int]

class Gen(TypedDict):
    colocated: NotRequired[dict]

class Master(TypedDict):
    checkpointing: Ckpt
    generation: Gen
    teacher_generation: Gen
"""
SETUP = """
from pkg.config import Ckpt, Master, Gen
from pkg import helpers

class Manager:
    def __init__(self, config: Ckpt):
        self.config = config
        self.keep = config["keep"]            # kept: every run constructs a Manager
        self.read_fmt()

    def read_fmt(self):
        return self.config["fmt"]             # kept: a method __init__ always calls

    def sometimes(self):
        return self.config["period"]          # dropped: nothing always calls it

    def finish(self):
        return self.config["finish"]          # kept: setup calls it on its Manager

def setup(master):                            # typed by its caller's argument
    manager = Manager(master["checkpointing"])
    manager.finish()
    helpers.fill(master["checkpointing"])
    helpers.passed(master.checkpointing)      # a pydantic-style field is its class too
    gen: Gen = master["generation"]
    gen["colocated"]                          # dropped: Gen stands at two key paths
    ckpt = master["checkpointing"]
    ckpt["filled"]                            # dropped: fill() writes the key
    for _ in range(3):
        ckpt["loop"]                          # dropped: a loop may not run
    try:
        ckpt["guarded"]                       # dropped: the KeyError is caught
    except KeyError:
        pass
    if ckpt["enabled"]:
        return
    ckpt["later"]                             # dropped: the return above may come first
"""
HELPERS = """
def fill(cfg):
    cfg["filled"] = 1

def passed(cfg):
    return cfg["passed"]                      # kept: cfg is what setup passes
"""
ENTRY = """
from pkg.config import Master
from pkg.setup import setup

def main():
    config = Master(**load())                 # a config class's constructor types the name
    setup(config)
"""


def _table() -> DeclaredTable:
    def keys(**types: str) -> dict[str, Any]:
        return {k: {"type": "int", "nested": [t] if t else []} for k, t in types.items()}

    ckpt = {
        k: {"type": "int"}
        for k in ("keep", "fmt", "period", "filled", "later", "loop", "passed", "finish")
    }
    classes = {
        "pkg.config:Master": {
            "keys": {
                k: {**v, "required": True}
                for k, v in keys(
                    checkpointing="pkg.config:Ckpt",
                    generation="pkg.config:Gen",
                    teacher_generation="pkg.config:Gen",
                ).items()
            }
        },
        "pkg.config:Ckpt": {
            "keys": {
                "enabled": {"type": "bool", "required": True},
                **ckpt,
                "guarded": {"type": "int"},
            }
        },
        "pkg.config:Gen": {"keys": {"colocated": {"type": "dict[str, Any]"}}},
    }
    return DeclaredTable.from_json({"source": "pkg", "commit": "0", "classes": classes})


def test_only_reads_every_run_makes_of_keys_it_may_lack_are_kept() -> None:
    files = {
        "pkg.config": CONFIG,
        "pkg.setup": SETUP,
        "pkg.helpers": HELPERS,
        "examples.run": ENTRY,
    }
    texts = {
        "pkg/config.py": CONFIG,
        "pkg/setup.py": SETUP,
        "pkg/helpers.py": HELPERS,
        "examples/run.py": ENTRY,
    }
    package = Package.read(texts, UpstreamSource(files), _table())
    found = list(reads(package, "examples/run.py", "pkg.config:Master"))
    assert {(".".join(r["at"]), r["needs"][0], r["scope"]) for r in found} == {
        ("checkpointing", "keep", "Manager.__init__"),
        ("checkpointing", "fmt", "Manager.read_fmt"),
        ("checkpointing", "finish", "Manager.finish"),
        ("checkpointing", "passed", "passed"),
    }
    assert {r["file"] for r in found} == {"pkg/setup.py", "pkg/helpers.py"}
