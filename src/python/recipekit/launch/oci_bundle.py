"""An OCI runtime bundle of a published image, for Slurm's own container support.

``srun --container=DIR`` (Slurm 22.05+, with an oci.conf naming the runtime, e.g. runc) runs a
job step in a bundle: ``DIR/config.json`` and ``DIR/rootfs``. Pyxis pulls an image itself; here
the bundle is made ahead of time, on shared storage, from the image pinned by digest: skopeo
copies it into an OCI layout (the index digest must be the pinned one), umoci unpacks this
node type's platform.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from recipekit.errors import Issue, RecipeError
from recipekit.images.oci import Descriptor, Layout, Platform, platform_tag
from recipekit.images.registry import Reference, copy_all, pinned_image_issue, tls_flags
from recipekit.launch.profile import Mount

_TAG = "image"


IMAGE_ANNOTATION = "org.recipekit.image"


def pull_bundle(
    image: str,
    bundle: Path,
    *,
    platform: Platform,
    mounts: Sequence[Mount] = (),
    tls_verify: bool = True,
) -> Path:
    """Unpack ``platform`` of ``image`` (``HOST/REPO@sha256:...``) into the new ``bundle``."""
    unpinned = pinned_image_issue(image)
    if unpinned is not None:
        raise RecipeError([unpinned])
    if shutil.which("umoci") is None:
        raise RecipeError([Issue("umoci", "not found", hint="apt-get install umoci (Debian 12)")])
    reference = Reference.parse(image.removeprefix("docker://"))
    assert reference.digest is not None  # pinned_image_issue checked it
    with tempfile.TemporaryDirectory(prefix="recipekit-bundle-") as scratch:
        layout = Layout(Path(scratch) / "layout")
        copy_all(
            f"docker://{reference}",
            f"oci:{layout.root}:{_TAG}",
            flags=tls_flags(reference.host, "--src-tls-verify", tls_verify),
        )
        pulled = layout.resolve(_TAG)
        if pulled.digest != reference.digest:
            raise RecipeError(
                [Issue(image, f"the registry served {pulled.digest}", value=reference.digest)]
            )
        # umoci refuses a tag that names a multi-platform index ("tag is ambiguous").
        tag = platform_tag(_TAG, platform)
        layout.tag(tag, _platform_manifest(layout, pulled, platform, image))
        done = subprocess.run(
            ["umoci", "unpack", "--image", f"{layout.root}:{tag}", str(bundle)],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise RecipeError([Issue("umoci unpack", done.stderr.strip(), value=image)])
    config_path = bundle / "config.json"
    config = json.loads(config_path.read_text())
    config = runtime_config(config, mounts)
    # The run record names the image the job ran in, by digest (launch.run_record).
    config["annotations"] = {**config.get("annotations", {}), IMAGE_ANNOTATION: image}
    config_path.write_text(json.dumps(config, indent=2) + "\n")
    return bundle


def bundle_image(bundle: str | Path) -> str | None:
    """The image (``HOST/REPO@sha256:...``) ``pull_bundle`` unpacked into ``bundle``."""
    try:
        config = json.loads((Path(bundle) / "config.json").read_text())
    except (OSError, ValueError):
        return None
    image = config.get("annotations", {}).get(IMAGE_ANNOTATION)
    return image if isinstance(image, str) else None


def _platform_manifest(
    layout: Layout, index: Descriptor, platform: Platform, image: str
) -> Descriptor:
    entries = layout.read_json(index.digest)["manifests"]
    for entry in entries:
        found = entry.get("platform", {})
        if (found.get("os"), found.get("architecture")) == (platform.os, platform.architecture):
            return Descriptor.from_json(entry)
    offered = ", ".join(f"{e['platform']['os']}/{e['platform']['architecture']}" for e in entries)
    raise RecipeError([Issue(image, f"has no {platform} manifest", value=offered)])


def runtime_config(config: dict[str, Any], mounts: Sequence[Mount]) -> dict[str, Any]:
    """umoci's config.json made to run job steps the way pyxis/enroot does.

    The step keeps the node's network (Ray, torch.distributed and Slurm's own traffic use the
    node's addresses; a fresh namespace has none) and gets ``mounts`` bound read-write.
    """
    out = dict(config)
    linux = dict(out.get("linux") or {})
    linux["namespaces"] = [n for n in linux.get("namespaces", []) if n.get("type") != "network"]
    out["linux"] = linux
    out["mounts"] = [
        *(out.get("mounts") or []),
        *(
            {
                "destination": m.container,
                "type": "bind",
                "source": m.host,
                "options": ["rbind", "rw"],
            }
            for m in mounts
        ),
    ]
    return out
