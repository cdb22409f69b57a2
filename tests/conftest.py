"""Shared fixtures. The repository root goes on ``sys.path`` so that test plug-ins load by
``class_path`` ("tests.helpers.scripted:ScriptedProposer"), in process and in subprocesses."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


@pytest.fixture(scope="session")
def cfr_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A game-tree cache shared by the session's tests (built once)."""
    from recursor.tasks.cfr import games

    cache = tmp_path_factory.mktemp("cfr-cache")
    games.prepare(cache)
    return cache


@pytest.fixture
def subprocess_env() -> dict[str, str]:
    """The environment for running ``recursor`` in a child, with test plug-ins importable."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    return env
