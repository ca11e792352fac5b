"""Sphinx configuration of the recipekit user's guide (MyST Markdown, NVIDIA's theme).

Built by ``./pants run docs:build`` (into dist/docs/html) and, with warnings as errors, by
``docs/docs_test.py`` in ``./pants test ::``. Nothing is fetched while building: no intersphinx,
no remote images, the theme's assets come from its wheel.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))

from recipekit_pages import repository_root  # noqa: E402

ROOT = repository_root()
for entry in (ROOT, ROOT / "src" / "python"):
    sys.path.insert(0, str(entry))

project = "recipekit"
author = "recipekit maintainers"
copyright = "NVIDIA CORPORATION & AFFILIATES"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx_click",
    "recipekit_pages",
]

source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "README.md", "**/_generated/*-part.md"]
suppress_warnings: list[str] = []

myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "undoc-members": False, "show-inheritance": False}

html_theme = "nvidia_sphinx_theme"
html_title = "recipekit user's guide"
html_static_path: list[str] = []
html_theme_options = {
    "navigation_depth": 3,
    "show_nav_level": 1,
    "icon_links": [],
}
html_show_sourcelink = False
html_copy_source = False
