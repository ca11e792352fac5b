"""What a CI job built, compared across architectures and published by digest (tools/ci/).

    python3 tools/ci_artifacts.py native-arch                 amd64 or arm64: this machine
    python3 tools/ci_artifacts.py collect DIST OUT.json       every stage's artifacts.json, digests
    python3 tools/ci_artifacts.py compare A.json B.json       the same bytes, or what differs
    python3 tools/ci_artifacts.py publish A.json DIST REGISTRY [--no-tls-verify]
                                                              push each stage's index, check digest

Each architecture's job builds every stage on its own runner. The build is reproducible and the
Pex and layers are the same for both architectures (one Pex carries both), so the two jobs must
agree byte for byte; the publish job refuses to ship when they do not. Standard library only:
it runs on a bare CI runner before anything is installed.
"""

from __future__ import annotations

import json
import platform
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

ARTIFACTS = "artifacts.json"
ARCHITECTURES = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}
PUBLISHED = re.compile(r"^published \S+@(sha256:[0-9a-f]{64})$", re.MULTILINE)


def native_arch() -> str:
    machine = platform.machine().lower()
    return ARCHITECTURES.get(machine, machine)


def collect(dist: Path) -> dict[str, Any]:
    """Stage folder (``recipes.super3/dapo-b200``) -> its files' sha256 and its index digest."""
    found: dict[str, Any] = {}
    for manifest_file in sorted(dist.glob(f"*/*/{ARTIFACTS}")):
        manifest = json.loads(manifest_file.read_text())
        stage = str(manifest_file.parent.relative_to(dist))
        image = manifest.get("image") or {}
        found[stage] = {
            "files": {entry["path"]: entry["sha256"] for entry in manifest["files"]},
            "index_digest": image.get("index_digest"),
            "base": image.get("base"),
        }
    return found


def differences(first: dict[str, Any], second: dict[str, Any], names: tuple[str, str]) -> list[str]:
    """What keeps two builds from being the same bytes, one line each."""
    lines = []
    for stage in sorted(set(first) | set(second)):
        if stage not in first or stage not in second:
            lines.append(f"{stage}: built by {names[0] if stage in first else names[1]} only")
            continue
        a, b = first[stage], second[stage]
        if a["index_digest"] != b["index_digest"]:
            lines.append(f"{stage}: index {a['index_digest']} != {b['index_digest']}")
        for path in sorted(set(a["files"]) | set(b["files"])):
            if a["files"].get(path) != b["files"].get(path):
                lines.append(f"{stage}/{path}: {a['files'].get(path)} != {b['files'].get(path)}")
    return lines


def _lock_for(base: str, locks: Path) -> Path:
    """The lock file in ``locks`` pinning ``base`` (``REFERENCE@sha256:...``)."""
    digest = base.rsplit("@", 1)[-1]
    for lock in sorted(locks.glob("*.lock.json")):
        if json.loads(lock.read_text())["index"]["digest"] == digest:
            return lock
    raise SystemExit(f"no lock in {locks} pins {base}: commit the lock the stage was built on")


def publish(
    built: dict[str, Any], dist: Path, registry: str, locks: Path, tls_verify: bool = True
) -> dict[str, str]:
    """Push every stage's image with its own launcher's ``publish``; each must land under the
    digest the build recorded. Returns stage -> ``REGISTRY/STAGE@sha256:...``."""
    published = {}
    for stage, entry in sorted(built.items()):
        if entry["index_digest"] is None:
            continue
        folder = dist / stage
        destination = f"{registry}/{Path(stage).name}:{entry['index_digest'][7:19]}"
        argv = [sys.executable, str(folder / "stage.pex"), "publish", str(folder / "image")]
        argv += ["--registry", destination, "--lock", str(_lock_for(entry["base"], locks))]
        argv += [] if tls_verify else ["--no-tls-verify"]
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        found = PUBLISHED.search(done.stdout)
        if done.returncode != 0 or found is None:
            raise SystemExit(f"{stage}: publish failed\n{done.stdout}{done.stderr}")
        if found.group(1) != entry["index_digest"]:
            raise SystemExit(
                f"{stage}: the registry has {found.group(1)}, the build {entry['index_digest']}"
            )
        published[stage] = f"{registry}/{Path(stage).name}@{found.group(1)}"
    return published


def main(argv: list[str]) -> int:
    command, *rest = argv or ["--help"]
    if command == "native-arch":
        print(native_arch())
    elif command == "collect":
        dist, out = Path(rest[0]), Path(rest[1])
        built = collect(dist)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(built, indent=2, sort_keys=True) + "\n")
        print(f"{out}: {len(built)} stages")
    elif command == "compare":
        a, b = (Path(p) for p in rest[:2])
        lines = differences(json.loads(a.read_text()), json.loads(b.read_text()), (a.stem, b.stem))
        for line in lines:
            print(f"differs: {line}", file=sys.stderr)
        if lines:
            return 1
        print(f"{a.name} and {b.name}: the same bytes")
    elif command == "publish":
        built = json.loads(Path(rest[0]).read_text())
        tls = "--no-tls-verify" not in rest
        for stage, ref in publish(built, Path(rest[1]), rest[2], Path("containers"), tls).items():
            print(f"{stage}: {ref}")
    else:
        print(__doc__)
        return 0 if command in ("-h", "--help") else 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
