"""Command lines: the per-stage launcher and the general ``recipekit`` tool.

A command is a short process that builds ~150 section classes, loads its generated tables and
replays a runner: Python's cyclic collector, at its default threshold (a pass per 700 new
objects), ran ~120 passes in a `plan` and cost ~17 ms of its 0.3 s. The threshold is raised
before the commands import anything (this package runs first): a pass per 100,000 objects
still bounds a long-lived one (the job step that follows the head's Ray).
"""

import gc

gc.set_threshold(100_000, 50, 100)
