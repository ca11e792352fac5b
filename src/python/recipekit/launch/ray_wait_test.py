"""A node waiting for a port says so in the job log, and stops waiting when it answers."""

from __future__ import annotations

import socket
import threading
import time

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
