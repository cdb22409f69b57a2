"""Shared fixtures. The repository root goes on ``sys.path`` so that test plug-ins load by
``class_path`` ("tests.helpers.scripted:ScriptedProposer"), in process and in subprocesses."""

from __future__ import annotations

import os
import sys
import time
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


@pytest.fixture(scope="session")
def docker_image() -> str:
    """The docker sandbox's base image in the engine at $DOCKER_HOST, built once if missing
    (``make test`` starts that engine: podman, through scripts/container-engine.sh)."""
    from recursor.sandbox.images import build_base_image, connect

    return build_base_image(connect())


@pytest.fixture(scope="session")
def docker_sandbox_factory(docker_image: str):  # type: ignore[no-untyped-def]
    """Builds DockerSandboxes on the base image; checks at teardown that none left a container."""
    from recursor.sandbox.docker import LABEL, DockerSandbox
    from recursor.sandbox.images import connect

    built: list[DockerSandbox] = []

    def build(**options: object) -> DockerSandbox:
        box = DockerSandbox(image=docker_image, **options)  # type: ignore[arg-type]
        built.append(box)
        return box

    yield build
    for box in built:
        box.close()
    client = connect()
    for _ in range(50):  # removal of an auto-removed container can lag a moment
        left = client.containers.list(all=True, filters={"label": LABEL})
        if not left:
            break
        time.sleep(0.2)
    assert not left, f"sandbox containers left behind: {[c.name for c in left]}"
