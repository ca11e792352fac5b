"""What an entry point reaches: imports of every form, Ray actors named by a dotted string, the
packages on the way, and nothing under ``if TYPE_CHECKING:``."""

from __future__ import annotations

from recipekit.upstream.reach import names, reach

TREE = {
    "examples/run.py": "from pkg.algo import train\nimport pkg.util\n",
    "pkg/__init__.py": "",
    "pkg/algo/__init__.py": "",
    "pkg/algo/train.py": (
        "from typing import TYPE_CHECKING\n"
        "from . import loss\n"
        "from ..models import policy\n"
        "if TYPE_CHECKING:\n"
        "    from pkg.heavy import Only\n"
        "WORKER = 'pkg.workers.gpu.GpuWorker'\n"
        "def later():\n"
        "    import pkg.lazy\n"
    ),
    "pkg/algo/loss.py": "",
    "pkg/models/__init__.py": "",
    "pkg/models/policy.py": "",
    "pkg/workers/__init__.py": "",
    "pkg/workers/gpu.py": "",
    "pkg/lazy.py": "",
    "pkg/heavy.py": "",
    "pkg/util.py": "",
    "pkg/unused.py": "",
}


def test_an_entry_point_reaches_its_imports_actors_and_their_packages() -> None:
    found = reach(["examples/run.py"], set(TREE), TREE.get, package="pkg")
    assert set(found.modules) == set(TREE) - {"pkg/heavy.py", "pkg/unused.py"}
    assert found.unread == ()


def test_a_module_without_text_is_reached_but_not_followed() -> None:
    unpinned = {path: text for path, text in TREE.items() if path != "pkg/algo/train.py"}
    found = reach(["examples/run.py"], set(TREE), unpinned.get, package="pkg")
    assert found.unread == ("pkg/algo/train.py",)
    assert "pkg/algo/loss.py" not in found.modules


def test_relative_imports_count_from_the_module_or_its_package() -> None:
    assert "pkg.algo.loss" in names("from . import loss\n", "pkg/algo/train.py", "pkg")
    assert "pkg.algo.loss" in names("from . import loss\n", "pkg/algo/__init__.py", "pkg")
    assert names("import os\nfrom typing import Any\n", "pkg/x.py", "pkg") == set()
