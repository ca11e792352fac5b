# A made-up framework module at its first recorded commit (upgrade_test.py).
from typing import TypedDict


class AlgoConfig(TypedDict):
    batch_size: int
    steps: int
    seed: int


def setup(cfg: AlgoConfig) -> None:
    assert cfg["steps"] > 0, "steps must be positive"
    if cfg["seed"] < 0:
        raise ValueError("seed must not be negative")
    assert cfg["batch_size"] % 2 == 0, "batch_size must be even"
