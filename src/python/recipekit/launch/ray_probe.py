"""Run by the *container's* Python (which has Ray): wait until the Ray cluster is complete.

    python -c "<this file>" ADDRESS NODES GPUS TIMEOUT_S

Prints a line whenever the count of alive nodes or GPUs changes; exits 0 when every planned
node and GPU is there, 1 on timeout. Only the standard library and ``ray`` are imported, so the
launcher does not carry Ray: the container's matching version is used.
"""

from __future__ import annotations

import sys
import time


def main(argv: list[str]) -> int:
    import ray  # pants: no-infer-dep (the container's Ray, not ours)

    address, want_nodes, want_gpus, timeout = argv[0], int(argv[1]), float(argv[2]), float(argv[3])
    deadline = time.monotonic() + timeout
    ray.init(address=address, logging_level="ERROR", log_to_driver=False)
    seen: tuple[int, float] | None = None
    try:
        while True:
            alive = [n for n in ray.nodes() if n.get("Alive")]
            gpus = sum(float(n.get("Resources", {}).get("GPU", 0)) for n in alive)
            if (len(alive), gpus) != seen:
                seen = (len(alive), gpus)
                print(
                    f"ray cluster: {len(alive)}/{want_nodes} nodes, {gpus:g}/{want_gpus:g} GPUs",
                    flush=True,
                )
            if len(alive) >= want_nodes and gpus >= want_gpus:
                return 0
            if time.monotonic() > deadline:
                print(f"ray cluster incomplete after {timeout:g} s", flush=True)
                return 1
            time.sleep(1.0)
    finally:
        ray.shutdown()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
