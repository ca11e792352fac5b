#!/usr/bin/env python3
"""Start BuildGrid on a loopback port for Pants: a REAPI remote cache, or with --execution a
remote-execution grid (server, PostgreSQL job queue and one bot), for local use and tests.

Cache only (Pants runs every process itself and shares the results):

    ./pants package 3rdparty/python:bgd                      # BuildGrid's server, once
    tools/remote-cache --port 50061 --dir ~/.cache/recipekit-remote-cache
    export RECIPEKIT_REMOTE_CACHE=grpc://127.0.0.1:50061
    ./pants --pants-config-files=pants.remote-cache.toml package recipes/super3::

Remote execution (Pants sends every process to BuildGrid; its bot runs it on this host):

    tools/remote-cache --fetch-buildbox                      # the bot, once (needs apt-get)
    tools/remote-cache --execution --port 50071
    export RECIPEKIT_REMOTE_EXECUTION=grpc://127.0.0.1:50071
    ./pants --pants-config-files=pants.remote-execution.toml test src/python/recipekit:tests

--execution adds what BuildGrid's execution service needs: a PostgreSQL job queue (BuildGrid 0.4
refuses SQLite; Debian's postgresql, run from a fresh temporary folder, as the `postgres` user
when this runs as root) and a bot, buildbox-worker with the buildbox-run-hosttools runner, which
runs each action directly on this host, where the interpreters Pants names exist. buildbox is
packaged by Debian only in unstable (sid), built against a newer glibc than bookworm's:
--fetch-buildbox downloads its packages and their libraries from sid with a private apt
configuration (the system's apt sources are not touched) and unpacks them under --buildbox; the
bot runs through sid's own dynamic loader. Between the worker and the runner sits a shim
(`remote_cache.py runner`, under BuildGrid's interpreter): Pants 2.17 names its outputs in the
REAPI 2.0 fields output_files/output_directories, which buildbox 1.4 ignores (it reads only 2.1's
output_paths), so the shim moves them into output_paths. Without it every output comes back
empty (docs/guides/images-ci.md, "CI at scale: a shared remote cache").

BuildGrid serves the action cache and CAS from a disk store under --dir. The cache-only server
runs in the foreground until interrupted; with --execution this process waits until interrupted
and then stops the bot, the server and PostgreSQL, each by its PID. --print-config writes the
server's configuration and exits.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import pwd
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

DEFAULT_BGD = Path("dist/3rdparty.python/bgd.pex")
DEFAULT_DIR = Path.home() / ".cache" / "recipekit-remote-cache"
DEFAULT_BUILDBOX = DEFAULT_DIR / "buildbox"
# Debian's package of buildbox-worker and buildbox-run-hosttools (unstable only).
BUILDBOX_SUITE = "sid"
BUILDBOX_PACKAGE = "buildbox"
# In buildbox's dependency closure but not needed by the worker and the host-tools runner (the
# FUSE and bubblewrap runners need them), and programs rather than libraries.
BUILDBOX_SKIPPED = frozenset({"bubblewrap", "fuse3", "mount"})
# Concurrent RPCs the server serves (config_yaml).
THREAD_POOL_SIZE = 64
# Pants asks for this platform (pants.remote-execution.toml); the bot offers it.
PLATFORM = ("OSFamily", "linux")


def config_yaml(port: int, storage: Path, database: str | None = None) -> str:
    """A BuildGrid server on the loopback interface without TLS: one unnamed instance with an
    action cache and a CAS on disk; with ``database`` (a PostgreSQL URL) also the execution and
    bots services, whose scheduler keeps its jobs there."""
    connections = schedulers = execution = ""
    if database is not None:
        connections = f"""\
connections:
  - !sql-connection &sql
    connection-string: {database}
"""
        schedulers = f"""\
schedulers:
  - !sql-scheduler &scheduler
    sql: *sql
    storage: *cas
    action-cache: *action-cache
    property-set: !dynamic-property-set
      match-property-keys: [{PLATFORM[0]}]
"""
        execution = """\
      - !execution
        scheduler: *scheduler
"""
    # BuildGrid refuses RPCs past thread-pool-size at once (default 5 per core: 10 here). Pants
    # streams uploads and waits on executions while the bot long-polls its session, so a run
    # met "Concurrent RPC limit exceeded!" on 2 cores; a shared server wants more anyway.
    return f"""\
thread-pool-size: {THREAD_POOL_SIZE}
server:
  - !channel
    address: "127.0.0.1:{port}"
    insecure-mode: true
{connections}storages:
  - !disk-storage &cas
    path: {storage}
caches:
  - !lru-action-cache &action-cache
    storage: *cas
    max-cached-refs: 100000
    allow-updates: true
    cache-failed-actions: false
{schedulers}instances:
  - name: ""
    services:
      - !action-cache
        cache: *action-cache
{execution}      - !cas
        storage: *cas
      - !bytestream
        storage: *cas
"""


def write_config(port: int, directory: Path, database: str | None = None) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "cas").mkdir(exist_ok=True)
    config = directory / "buildgrid.yml"
    config.write_text(config_yaml(port, directory / "cas", database))
    return config


def server_command(bgd: Path, config: Path) -> list[str]:
    return [sys.executable, str(bgd), "server", "start", str(config)]


# --- buildbox from Debian unstable ----------------------------------------------------------


def _apt(buildbox: Path, *arguments: str, cwd: Path | None = None) -> str:
    """apt-get/apt-cache with a private configuration under ``buildbox``/apt (sid only)."""
    env = {**os.environ, "APT_CONFIG": str(buildbox / "apt" / "apt.conf")}
    done = subprocess.run(
        list(arguments), env=env, cwd=cwd, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(arguments)} failed:\n{done.stderr[-2000:]}")
    return done.stdout


def fetch_buildbox(buildbox: Path) -> Path:
    """Download Debian sid's buildbox and every library it needs (not the system's apt sources:
    a private apt configuration) and unpack them into ``buildbox``/root. Idempotent."""
    root = buildbox / "root"
    if (root / ".fetched").is_file():
        return root
    apt = buildbox / "apt"
    for sub in ("lists/partial", "archives/partial", "sources.list.d", "preferences.d", "debs"):
        (apt / sub).mkdir(parents=True, exist_ok=True)
    (apt / "status").touch()
    (apt / "sources.list").write_text(
        "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] "
        f"http://deb.debian.org/debian {BUILDBOX_SUITE} main\n"
    )
    arch = subprocess.run(
        ["dpkg", "--print-architecture"], capture_output=True, text=True, check=True
    ).stdout.strip()
    (apt / "apt.conf").write_text(
        f'Dir::State "{apt}";\nDir::State::Lists "{apt}/lists";\n'
        f'Dir::State::status "{apt}/status";\nDir::Cache "{apt}";\n'
        f'Dir::Cache::archives "{apt}/archives";\nDir::Etc::sourcelist "{apt}/sources.list";\n'
        f'Dir::Etc::sourceparts "{apt}/sources.list.d";\n'
        f'Dir::Etc::preferencesparts "{apt}/preferences.d";\nAPT::Architecture "{arch}";\n'
        # Downloads land in a folder the unprivileged _apt user may not write to.
        'APT::Sandbox::User "root";\n'
    )
    _apt(buildbox, "apt-get", "update", "-qq")
    closure = _apt(
        buildbox,
        "apt-cache",
        "depends",
        "--recurse",
        *(f"--no-{kind}" for kind in ("recommends", "suggests", "conflicts", "breaks")),
        *(f"--no-{kind}" for kind in ("replaces", "enhances", "pre-depends")),
        BUILDBOX_PACKAGE,
    )
    packages = sorted(
        {line for line in closure.splitlines() if line and line[0] not in " <"}
        - BUILDBOX_SKIPPED
    )
    _apt(buildbox, "apt-get", "download", *packages, cwd=apt / "debs")
    staging = buildbox / "root.partial"
    shutil.rmtree(staging, ignore_errors=True)
    for deb in sorted((apt / "debs").glob("*.deb")):
        subprocess.run(["dpkg-deb", "-x", str(deb), str(staging)], check=True)
    (staging / ".fetched").write_text(
        "".join(f"{deb.name}\n" for deb in sorted((apt / "debs").glob("*.deb")))
    )
    shutil.rmtree(root, ignore_errors=True)
    staging.rename(root)
    return root


def buildbox_launcher(root: Path) -> list[str]:
    """The start of a command line that runs one of ``root``'s programs with sid's loader and
    libraries (the programs need a newer glibc than the system's)."""
    [loader] = sorted(root.glob("usr/lib/*-linux-gnu*/ld-linux*.so.*"))
    return [str(loader), "--library-path", str(loader.parent)]


# --- the runner shim (runs under BuildGrid's interpreter: grpc and the REAPI protos) ----------


def run_runner(arguments: list[str]) -> int:
    """``remote_cache.py runner SCRATCH HOSTTOOLS... -- RUNNER-ARGUMENTS``: give
    buildbox-run-hosttools the action with its Command's output_files/output_directories moved
    into output_paths (the rewritten Action is written under SCRATCH, which the grid removes)."""
    split = arguments.index("--")
    scratch, hosttools, forwarded = Path(arguments[0]), arguments[1:split], arguments[split + 1 :]
    options = dict(a[2:].split("=", 1) for a in forwarded if a.startswith("--") and "=" in a)
    if "action" in options and "remote" in options:
        new_action = _action_with_output_paths(
            Path(options["action"]), options["remote"], options.get("instance", ""), scratch
        )
        if new_action is not None:
            forwarded = [
                f"--action={new_action}" if a.startswith("--action=") else a for a in forwarded
            ]
    # PEX_INTERPRETER=1 brought this shim up under BuildGrid's Pex; the actions must not inherit
    # it (every Pex they run would start a REPL).
    env = {k: v for k, v in os.environ.items() if not k.startswith("PEX_")}
    os.execve(hosttools[0], [*hosttools, *forwarded], env)


def _action_with_output_paths(
    action_file: Path, remote: str, instance: str, scratch: Path
) -> Path | None:
    import importlib

    grpc: Any = importlib.import_module("grpc")
    reapi = "buildgrid._protos.build.bazel.remote.execution.v2.remote_execution_pb2"
    pb: Any = importlib.import_module(reapi)
    stubs: Any = importlib.import_module(reapi + "_grpc")
    action = pb.Action()
    action.ParseFromString(action_file.read_bytes())
    channel = grpc.insecure_channel(remote.removeprefix("http://").removeprefix("grpc://"))
    cas = stubs.ContentAddressableStorageStub(channel)
    read = cas.BatchReadBlobs(
        pb.BatchReadBlobsRequest(instance_name=instance, digests=[action.command_digest])
    )
    command = pb.Command()
    command.ParseFromString(read.responses[0].data)
    if command.output_paths or not (command.output_files or command.output_directories):
        return None
    command.output_paths.extend(sorted({*command.output_files, *command.output_directories}))
    del command.output_files[:]
    del command.output_directories[:]
    data = command.SerializeToString()
    digest = pb.Digest(hash=hashlib.sha256(data).hexdigest(), size_bytes=len(data))
    request = pb.BatchUpdateBlobsRequest.Request(digest=digest, data=data)
    cas.BatchUpdateBlobs(pb.BatchUpdateBlobsRequest(instance_name=instance, requests=[request]))
    action.command_digest.CopyFrom(digest)
    descriptor, name = tempfile.mkstemp(prefix="action-", dir=scratch)
    with os.fdopen(descriptor, "wb") as out:
        out.write(action.SerializeToString())
    return Path(name)


# --- processes ------------------------------------------------------------------------------


def wait_for_port(port: int, process: subprocess.Popen[bytes], what: str, log: Path) -> None:
    """Return once ``process`` listens on loopback ``port``; fail with its log if it exits
    or takes over 120 s."""
    deadline = time.monotonic() + 120
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{what} did not start:\n{log.read_text()[-4000:]}") from None
            time.sleep(0.3)


def _stop(process: subprocess.Popen[bytes], how: int = signal.SIGTERM) -> None:
    """Signal the process (by its PID, which we started), SIGKILL after 30 s."""
    if process.poll() is None:
        process.send_signal(how)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def free_port() -> int:
    """A loopback port free now (the servers here bind it next)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _postgres_bin() -> Path:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/postgres"), key=lambda p: p.parts[-3])
    if not found:
        raise RuntimeError("PostgreSQL is missing: apt-get install postgresql")
    return found[-1].parent


def _host_env() -> dict[str, str]:
    """The environment of the bot, and so of every action: this user's PATH and HOME (Pants
    finds the interpreters through them, as it does locally)."""
    home = pwd.getpwuid(os.getuid()).pw_dir
    path = os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin")
    return {"PATH": path, "HOME": home, "LANG": "C.UTF-8"}


@contextlib.contextmanager
def execution_grid(
    port: int, directory: Path, bgd: Path, buildbox: Path, *, jobs: int = 2
) -> Iterator[str]:
    """PostgreSQL, BuildGrid with its execution service and one buildbox bot, all on loopback;
    yields the grid's address and stops the three (by PID) on exit. Logs: ``directory``/*.log."""
    root = fetch_buildbox(buildbox)
    directory.mkdir(parents=True, exist_ok=True)
    # Each with the signal that stops it: PostgreSQL's SIGINT is its fast shutdown (SIGTERM waits
    # for clients to leave; SIGKILL would orphan its backends).
    processes: list[tuple[subprocess.Popen[bytes], int]] = []
    logs: list[IO[bytes]] = []
    # A fresh, throw-away job queue; PostgreSQL refuses to run as root and needs a folder its
    # user may enter (a pytest tmp_path is not), hence /tmp.
    database = Path(tempfile.mkdtemp(prefix="recipekit-postgres-"))
    as_root = os.getuid() == 0
    owner = "postgres" if as_root else None
    try:
        if as_root:
            shutil.chown(database, "postgres", "postgres")
        pg = _postgres_bin()
        db_port = free_port()

        def start(
            name: str, command: list[str], how: int = signal.SIGTERM, **kwargs: Any
        ) -> subprocess.Popen[bytes]:
            log = (directory / f"{name}.log").open("wb")
            logs.append(log)
            process = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, **kwargs
            )
            processes.append((process, how))
            return process

        subprocess.run(
            [str(pg / "initdb"), "-D", str(database / "data"), "-U", "bgd", "--auth=trust"],
            check=True,
            capture_output=True,
            cwd="/",
            user=owner,
            group=owner,
        )
        postgres = start(
            "postgres",
            [str(pg / "postgres"), "-D", str(database / "data"), "-p", str(db_port)]
            + ["-k", str(database), "-c", "listen_addresses=127.0.0.1"],
            signal.SIGINT,
            cwd="/",
            user=owner,
            group=owner,
        )
        wait_for_port(db_port, postgres, "PostgreSQL", directory / "postgres.log")
        url = f"postgresql+psycopg2://bgd@127.0.0.1:{db_port}/postgres"
        for _ in range(20):  # the port answers a moment before logins are accepted
            migrate = subprocess.run(
                [sys.executable, str(bgd), "migrate", "apply", url], capture_output=True, text=True
            )
            if migrate.returncode == 0:
                break
            time.sleep(0.5)
        else:
            raise RuntimeError(f"BuildGrid's migrations failed:\n{migrate.stderr[-4000:]}")

        config = write_config(port, directory, url)
        server = start("bgd", server_command(bgd, config), cwd=directory)
        wait_for_port(port, server, "BuildGrid", directory / "bgd.log")

        scratch = directory / "runner-scratch"
        shutil.rmtree(scratch, ignore_errors=True)
        scratch.mkdir()
        runner = directory / "buildbox-run"
        shim = [sys.executable, str(bgd), str(Path(__file__).resolve()), "runner", str(scratch)]
        hosttools = [*buildbox_launcher(root), str(root / "usr/bin/buildbox-run-hosttools")]
        runner.write_text(
            "#!/bin/sh\n# buildbox-worker's runner: the shim under BuildGrid's interpreter.\n"
            f'PEX_INTERPRETER=1 exec {shlex.join(shim + hosttools)} -- "$@"\n'
        )
        runner.chmod(0o755)
        (directory / "bot-work").mkdir(exist_ok=True)
        bot = start(
            "bot",
            buildbox_launcher(root)
            + [str(root / "usr/bin/buildbox-worker"), f"--remote=http://127.0.0.1:{port}"]
            + [f"--buildbox-run={runner}", f"--concurrent-jobs={jobs}"]
            + ["--runner-arg=--disable-localcas"]
            + [f"--runner-arg=--workspace-path={directory / 'bot-work'}"]
            + ["--platform", "=".join(PLATFORM)]
            # Debug level: the log names every command the bot runs (and that it is ready).
            + ["--verbose", f"recipekit-bot-{os.getpid()}"],
            cwd=directory,
            env=_host_env(),
        )
        deadline = time.monotonic() + 60
        while b"Bot Session created" not in (directory / "bot.log").read_bytes():
            if bot.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the bot did not start:\n{(directory / 'bot.log').read_text()}")
            time.sleep(0.3)
        yield f"grpc://127.0.0.1:{port}"
    finally:
        for process, how in reversed(processes):
            _stop(process, how)
        for log in logs:
            log.close()
        shutil.rmtree(database, ignore_errors=True)
        shutil.rmtree(directory / "runner-scratch", ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["runner"]:
        return run_runner(argv[1:])
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--port", type=int, default=50061, help="loopback port (default 50061)")
    parser.add_argument(
        "--dir",
        type=Path,
        default=DEFAULT_DIR,
        help="where the cache's blobs, BuildGrid's config and the logs live",
    )
    parser.add_argument("--bgd", type=Path, default=DEFAULT_BGD, help="BuildGrid's Pex")
    parser.add_argument(
        "--execution",
        action="store_true",
        help="also run the execution service, its PostgreSQL and a bot on this host",
    )
    parser.add_argument(
        "--buildbox",
        type=Path,
        default=DEFAULT_BUILDBOX,
        help="where Debian sid's buildbox is unpacked (default: under the default --dir)",
    )
    parser.add_argument(
        "--fetch-buildbox", action="store_true", help="download buildbox (idempotent) and exit"
    )
    parser.add_argument("--jobs", type=int, default=2, help="actions the bot runs at once")
    parser.add_argument("--print-config", action="store_true", help="print the config and exit")
    args = parser.parse_args(argv)
    if args.fetch_buildbox:
        print(f"remote-cache: buildbox in {fetch_buildbox(args.buildbox)}")
        return 0
    if args.print_config:
        url = "postgresql+psycopg2://bgd@127.0.0.1:PORT/postgres" if args.execution else None
        print(config_yaml(args.port, args.dir / "cas", url), end="")
        return 0
    if not args.bgd.is_file():
        print(
            f"remote-cache: {args.bgd} is missing; build it with "
            "./pants package 3rdparty/python:bgd",
            file=sys.stderr,
        )
        return 2
    if args.execution:
        address = f"grpc://127.0.0.1:{args.port}"
        # SIGTERM ends the wait below like Ctrl-C, so the grid is stopped either way.
        signal.signal(signal.SIGTERM, signal.default_int_handler)
        bgd = args.bgd.resolve()
        grid = execution_grid(args.port, args.dir, bgd, args.buildbox, jobs=args.jobs)
        with contextlib.suppress(KeyboardInterrupt), grid:
            print(
                f"remote-cache: BuildGrid with a bot on {address}, logs in {args.dir}\n"
                f"remote-cache: export RECIPEKIT_REMOTE_EXECUTION={address} and run "
                "./pants --pants-config-files=pants.remote-execution.toml ...",
                flush=True,
            )
            signal.pause()
        return 0
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
