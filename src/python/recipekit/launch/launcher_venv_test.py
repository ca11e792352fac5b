from __future__ import annotations

import sys

import pytest

from recipekit.launch.launcher_venv import leave_launcher_venv

VENV = "/root/.pex/venvs/abc/def"


def test_the_launchers_venv_leaves_path_and_virtual_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "prefix", VENV)
    monkeypatch.setattr(sys, "base_prefix", "/usr")
    environ = {"PATH": f"{VENV}/bin:/usr/local/bin:/usr/bin", "VIRTUAL_ENV": VENV, "HOME": "/h"}
    leave_launcher_venv(environ)
    assert environ == {"PATH": "/usr/local/bin:/usr/bin", "HOME": "/h"}


def test_another_venv_and_a_run_outside_a_venv_are_left_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sys, "prefix", VENV)
    monkeypatch.setattr(sys, "base_prefix", "/usr")
    theirs = {"PATH": "/opt/nemo_rl_venv/bin:/usr/bin", "VIRTUAL_ENV": "/opt/nemo_rl_venv"}
    leave_launcher_venv(environ := dict(theirs))
    assert environ == theirs
    monkeypatch.setattr(sys, "prefix", "/usr")
    outside = {"PATH": "/usr/bin"}
    leave_launcher_venv(outside)
    assert outside == {"PATH": "/usr/bin"}
