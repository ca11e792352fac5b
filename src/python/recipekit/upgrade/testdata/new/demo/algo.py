# A made-up framework module at its second recorded commit (upgrade_test.py): the steps assert
# moved down, the seed raise takes a new condition, batch_size is renamed global_batch_size
# (its evenness assert is gone), and a new raise compares steps with it.
from typing import TypedDict


class AlgoConfig(TypedDict):
    global_batch_size: int
    steps: int
    seed: int


def setup(cfg: AlgoConfig) -> None:
    total = cfg["steps"] * cfg["global_batch_size"]
    assert cfg["steps"] > 0, "steps must be positive"
    if cfg["seed"] < 1:
        raise ValueError("seed must not be negative")
    if total > 10**9:
        raise ValueError(f"{cfg['global_batch_size']} x {cfg['steps']} samples is too many")
