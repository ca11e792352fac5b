"""A node waiting for a port says so in the job log, and stops waiting when it answers."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import pytest

from recipekit.launch.ray_cluster import wait_for_port


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_long_wait_is_reported_until_the_port_answers() -> None:
    port, lines = _free_port(), list[str]()
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)

    def open_later() -> None:
        time.sleep(1.6)
        listener.bind(("127.0.0.1", port))
        listener.listen()

    opener = threading.Thread(target=open_later)
    opener.start()
    try:
        assert wait_for_port("127.0.0.1", port, 20, what="the GCS", log=lines.append, every_s=0.5)
    finally:
        opener.join()
        listener.close()
    assert lines, "a wait of over a second logged nothing"
    prefix = f"still waiting for the GCS at 127.0.0.1:{port}: "
    assert all(line.startswith(prefix) for line in lines)
    assert lines[-1].endswith(" s of 20 s")


def test_a_port_that_never_answers_times_out_quietly_without_a_log() -> None:
    assert not wait_for_port("127.0.0.1", _free_port(), 1.0)


def _listening(port: int) -> socket.socket:
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen()
    return listener


def test_a_wait_for_a_port_to_close_ends_when_its_listener_goes() -> None:
    # A requeued attempt's head waits for the previous attempt's Ray to let its GCS port go.
    port, lines = _free_port(), list[str]()
    listener = _listening(port)
    logged = threading.Event()

    def log(line: str) -> None:
        lines.append(line)
        logged.set()

    def close_once_logged() -> None:
        logged.wait(20)
        listener.close()

    closer = threading.Thread(target=close_once_logged)
    closer.start()
    try:
        assert wait_for_port("127.0.0.1", port, 20, log=log, every_s=0.2, free=True)
    finally:
        logged.set()
        closer.join()
    assert lines[0].startswith(f"still waiting for 127.0.0.1:{port} to close: "), lines


def test_the_head_gives_up_on_a_gcs_port_another_process_keeps() -> None:
    from recipekit.launch.job_step import _gcs_port_free

    port, lines = _free_port(), list[str]()
    listener = _listening(port)
    try:
        assert not _gcs_port_free("127.0.0.1", port, 1.0, lines.append)
    finally:
        listener.close()
    assert "is still open" in lines[0] and "another process holds it" in lines[-1], lines
    assert _gcs_port_free("127.0.0.1", port, 1.0, lines.append)  # closed now: free at once


def test_a_requeued_attempts_workers_wait_for_their_own_head(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The previous attempt's head record (and perhaps its GCS, still stopping) is not this
    # attempt's: a worker joins only once its own head has written its record.
    import json

    from recipekit.launch.job_step import _head_of_this_attempt, _Node
    from recipekit.launch.run_dir import RAY_HEAD_FILE, RunDir

    run = RunDir(tmp_path)
    node = _Node(
        run=run,
        plan={},
        profile=None,  # type: ignore[arg-type]  # not read here
        index=1,
        name="n1",
        job_id="7",
        nodes=("n0", "n1"),
        head_address="127.0.0.1",
        address="127.0.0.2",
        attempt=1,
    )
    run.write_text(RAY_HEAD_FILE, json.dumps({"job_id": "7", "attempt": 0}))
    assert not _head_of_this_attempt(node, 1.0)
    assert "the head of attempt 2 did not start Ray; giving up" in capsys.readouterr().out
    run.write_text(RAY_HEAD_FILE, json.dumps({"job_id": "7", "attempt": 1}))
    assert _head_of_this_attempt(node, 1.0)
