"""Where an upstream YAML comes from: the pinned source of a file under the reference folder.

``tools/fetch-reference`` lays the pinned files out as ``<reference>/<label>/<path>``, the label
naming a source of ``3rdparty/reference/manifest.toml`` (``nemo-rl/super-v3``: a repository at
a commit). A typed base that ``import-yaml --base`` writes cites that source, so that a reader
finds the file upstream without this machine's folders.
"""

from __future__ import annotations

import os
from pathlib import Path

import attrs

from recipekit.errors import Issue, RecipeError

MANIFEST = Path("3rdparty/reference/manifest.toml")
DEFAULT_REFERENCE = Path(".reference")


@attrs.frozen
class Upstream:
    label: str  # the manifest's source, e.g. "nemo-rl/super-v3"
    repository: str  # "NVIDIA-NeMo/RL"
    commit: str
    path: str  # inside the repository

    @property
    def local(self) -> str:
        """Where tools/fetch-reference puts it, relative to the reference folder."""
        return f"{self.label}/{self.path}"


def upstream_of(yaml_file: Path, checkout: Path) -> Upstream:
    """The pinned source of ``yaml_file``, which must lie in the checkout's reference folder."""
    import tomllib

    reference = Path(os.environ.get("RECIPEKIT_REFERENCE_DIR") or checkout / DEFAULT_REFERENCE)
    try:
        local = yaml_file.resolve().relative_to(reference.resolve()).as_posix()
    except ValueError:
        raise RecipeError(
            [
                Issue(
                    str(yaml_file),
                    f"a typed base is written from a pinned upstream file, and this is not in "
                    f"the reference folder {reference}",
                    hint="pin the file in 3rdparty/reference/manifest.toml and run "
                    "tools/fetch-reference",
                )
            ]
        ) from None
    manifest_file = checkout / MANIFEST
    if not manifest_file.is_file():
        raise RecipeError([Issue(str(manifest_file), "no manifest: run from the checkout's root")])
    sources = tomllib.loads(manifest_file.read_text()).get("sources", {})
    for label, source in sources.items():
        prefix = f"{label}/"
        if local.startswith(prefix) and any(
            pinned[0] == local[len(prefix) :] for pinned in source.get("files", ())
        ):
            return Upstream(label, source["repository"], source["commit"], local[len(prefix) :])
    raise RecipeError(
        [Issue(local, "not pinned in 3rdparty/reference/manifest.toml", hint="add it there first")]
    )
