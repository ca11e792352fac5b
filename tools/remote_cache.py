#!/usr/bin/env python3
"""Start BuildGrid as a REAPI remote cache for Pants, on a loopback port, for local use and tests.

    ./pants package 3rdparty/python:bgd                      # BuildGrid's server, once
    tools/remote-cache --port 50061 --dir ~/.cache/recipekit-remote-cache
    export RECIPEKIT_REMOTE_CACHE=grpc://127.0.0.1:50061
    ./pants --pants-config-files=pants.remote-cache.toml package recipes/super3::

BuildGrid serves the REAPI action cache and CAS from a disk store under ``--dir``; nothing
executes there (Pants runs every process itself and shares the results). A CI fleet points
``RECIPEKIT_REMOTE_CACHE`` at its shared server instead (README, "CI at scale"). The server
runs in the foreground until interrupted; ``--print-config`` writes its configuration and exits.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

DEFAULT_BGD = Path("dist/3rdparty.python/bgd.pex")


def config_yaml(port: int, storage: Path) -> str:
    """A BuildGrid server that is only a cache: one unnamed instance with an action cache and a
    CAS on disk, listening on the loopback interface without TLS."""
    return f"""\
server:
  - !channel
    address: "127.0.0.1:{port}"
    insecure-mode: true
storages:
  - !disk-storage &cas
    path: {storage}
caches:
  - !lru-action-cache &action-cache
    storage: *cas
    max-cached-refs: 100000
    allow-updates: true
    cache-failed-actions: false
instances:
  - name: ""
    services:
      - !action-cache
        cache: *action-cache
      - !cas
        storage: *cas
      - !bytestream
        storage: *cas
"""


def write_config(port: int, directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "cas").mkdir(exist_ok=True)
    config = directory / "buildgrid.yml"
    config.write_text(config_yaml(port, directory / "cas"))
    return config


def server_command(bgd: Path, config: Path) -> list[str]:
    return [sys.executable, str(bgd), "server", "start", str(config)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--port", type=int, default=50061, help="loopback port (default 50061)")
    parser.add_argument(
        "--dir",
        type=Path,
        default=Path.home() / ".cache" / "recipekit-remote-cache",
        help="where the cache's blobs and BuildGrid's config live",
    )
    parser.add_argument("--bgd", type=Path, default=DEFAULT_BGD, help="BuildGrid's Pex")
    parser.add_argument("--print-config", action="store_true", help="print the config and exit")
    args = parser.parse_args(argv)
    if args.print_config:
        print(config_yaml(args.port, args.dir / "cas"), end="")
        return 0
    if not args.bgd.is_file():
        print(
            f"remote-cache: {args.bgd} is missing; build it with "
            "./pants package 3rdparty/python:bgd",
            file=sys.stderr,
        )
        return 2
    config = write_config(args.port, args.dir)
    print(
        f"remote-cache: BuildGrid on grpc://127.0.0.1:{args.port}, blobs in {args.dir / 'cas'}\n"
        f"remote-cache: export RECIPEKIT_REMOTE_CACHE=grpc://127.0.0.1:{args.port} and run "
        "./pants --pants-config-files=pants.remote-cache.toml ...",
        flush=True,
    )
    command = server_command(args.bgd, config)
    os.execv(command[0], command)


if __name__ == "__main__":
    sys.exit(main())
