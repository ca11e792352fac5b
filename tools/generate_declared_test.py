"""The null a NotRequired key takes where the version's code reads it only with ``.get``."""

from __future__ import annotations

from tools.generate_declared import keys_read_only_by_get


def test_a_key_read_only_by_get_without_a_default_takes_a_null() -> None:
    source = """
def setup(cfg, kwargs):
    tp = cfg["trtllm_cfg"].get("moe_tp")
    ep = cfg.get("moe_ep", None)
    if tp is not None:
        kwargs["moe_tp"] = tp  # a key written elsewhere reads nothing
    return cfg.get("moe_ep")
"""
    assert keys_read_only_by_get([source]) == {"moe_tp", "moe_ep"}


def test_any_other_read_of_the_key_keeps_its_type() -> None:
    reads = {
        "subscript": 'cfg["size"] * 2',
        "membership": '"size" in cfg',
        "another default": 'cfg.get("size", 1)',
        "a list of names": 'NAMES = ["size"]',
        "a keyword default": 'cfg.get("size", default=None)',
    }
    for how, read in reads.items():
        source = f'x = cfg.get("size")\n{read}\n'
        assert keys_read_only_by_get([source]) == set(), how
    # in another file of the same version just as much
    assert keys_read_only_by_get(['x = cfg.get("size")', 'y = cfg["size"]']) == set()
