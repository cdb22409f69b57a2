"""Shared fixtures. Test plug-ins load by ``class_path`` ("tests.helpers.scripted:
ScriptedProposer"): pytest puts the repository root on the path (``pythonpath`` in
pyproject), and ``subprocess_env`` gives it to children."""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
# As under the Makefile (its `unexport PYTHONDONTWRITEBYTECODE`): modules are compiled once and
# kept, also when pytest is run directly from a shell that sets the variable. Otherwise every
# process the tests start (command-line runs, sandbox templates, jobs, the workers) compiles
# each module it imports that has no bytecode yet, at every start: a direct run of the whole
# suite in a checkout that `make` had not compiled took 44 minutes against make's 33 here.
if os.environ.pop("PYTHONDONTWRITEBYTECODE", None) is not None:
    sys.dont_write_bytecode = False
# ``make test`` runs the suite on several pytest-xdist workers. Tests of these kinds share one
# host-wide resource and run on one worker, one after another (``resource_group``): the
# container engine (sandboxes' containers, the leftover checks), Ray (three clusters starting
# at once on 2 cores leave their job agents unready for minutes), the browser (one chromium
# and UI server). Every other test goes to whichever worker is free.
RAY_FILES = ("test_ray_", "_ray.py")
# Warm job starters (recursor.executors.starter) that the suite's jobs start listen in a folder
# of this run's own, shared by its workers (they inherit the variable), and are stopped when
# the run ends instead of idling for minutes after it.
STARTERS = "RECURSOR_STARTERS_DIR"
os.environ.setdefault(STARTERS, f"/tmp/recursor-test-starters-{os.getuid()}-{os.getpid()}")


def pytest_sessionfinish(session: pytest.Session) -> None:
    if hasattr(session.config, "workerinput"):
        return  # a worker: the others may still use the starters
    from recursor.executors.starter import stop_starters

    folder = Path(os.environ[STARTERS])
    if folder.is_dir() and folder.name.startswith("recursor-test-starters-"):
        stop_starters(folder)
        shutil.rmtree(folder, ignore_errors=True)


def resource_group(nodeid: str) -> str | None:
    """The shared resource a test (by its id) needs, or None."""
    path = nodeid.split("::", 1)[0]
    if "docker" in nodeid:
        return "docker"
    name = path.rsplit("/", 1)[-1]
    if name.startswith(RAY_FILES[0]) or name.endswith(RAY_FILES[1]):
        return "ray"
    if path.startswith("tests/ui/"):
        return "browser"
    return None


@pytest.hookimpl(optionalhook=True)  # xdist's hook: pytest without xdist ignores it
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Scheduling by scope, where a test's scope is its resource group, else its module when
    it uses a fixture set up once per module (``tests/helpers/xdist_scopes.py``), else
    itself."""
    from xdist.scheduler import LoadScopeScheduling

    from tests.helpers.xdist_scopes import module_scope

    class ResourceScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return resource_group(nodeid) or module_scope(nodeid, ROOT) or nodeid

    return ResourceScheduling(config, log)


@pytest.fixture(scope="session")
def cfr_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A game-tree cache shared by the session's tests (built once)."""
    from recursor.tasks.cfr import games

    cache = tmp_path_factory.mktemp("cfr-cache")
    games.prepare(cache)
    return cache


@pytest.fixture
def host_evaluator(monkeypatch: pytest.MonkeyPatch) -> None:
    """For evaluators called directly in the test process (not in a sandbox): their candidate
    runs become local processes (``RECURSOR_HOST_EVALUATOR=1``, no isolation, as when a user
    tries an evaluator by hand). The security suites run evaluators in real sandboxes."""
    from recursor.guest import HOST_RUN_ENV

    monkeypatch.setenv(HOST_RUN_ENV, "1")


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
        # these sandboxes' containers only: other test workers share the engine
        left = [c for box in built for c in client.containers.list(
            all=True, filters={"label": f"{LABEL}={box.instance}"})]
        if not left:
            break
        time.sleep(0.2)
    assert not left, f"sandbox containers left behind: {[c.name for c in left]}"


@pytest.fixture
def postgres_databases() -> Iterator[Callable[[], str]]:
    """Makes fresh, empty PostgreSQL databases (SQLAlchemy URLs); all are dropped afterwards.

    The server is the one ``RECURSOR_TEST_POSTGRES_URL`` names (``make test`` exports it and
    starts Recursor's private server with scripts/postgres.sh); without it the test is skipped
    with the reason."""
    import secrets

    psycopg = pytest.importorskip("psycopg")
    from sqlalchemy.engine import make_url

    admin_url = os.environ.get("RECURSOR_TEST_POSTGRES_URL")
    if not admin_url:
        pytest.skip("RECURSOR_TEST_POSTGRES_URL is unset: start a server with "
                    "scripts/postgres.sh and export the URL it prints (make test does both)")
    admin = make_url(admin_url)
    libpq = admin.set(drivername="postgresql").render_as_string(hide_password=False)
    try:
        psycopg.connect(libpq, connect_timeout=5).close()
    except psycopg.OperationalError as exc:
        pytest.skip(f"no PostgreSQL answers at RECURSOR_TEST_POSTGRES_URL ({exc}); "
                    "run scripts/postgres.sh")
    made: list[str] = []

    def make() -> str:
        name = f"recursor_test_{secrets.token_hex(6)}"
        with psycopg.connect(libpq, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        made.append(name)
        return admin.set(database=name).render_as_string(hide_password=False)

    yield make
    with psycopg.connect(libpq, autocommit=True) as conn:
        for name in made:
            _drop_database(conn, name, psycopg.errors.InsufficientPrivilege)


def _drop_database(conn: Any, name: str, busy: type[Exception]) -> None:
    """``DROP DATABASE ... WITH (FORCE)``, waiting out an autovacuum worker: a non-superuser
    may not end one (PostgreSQL refuses with ``busy``, InsufficientPrivilege, while it runs),
    and it finishes on its own in a moment."""
    for _ in range(40):
        try:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            return
        except busy:
            time.sleep(0.25)
    conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')  # its error, if it stays


@pytest.fixture
def postgres_url(postgres_databases: Callable[[], str]) -> str:
    """A fresh, empty PostgreSQL database for one test (see ``postgres_databases``)."""
    return postgres_databases()


@pytest.fixture(scope="session")
def vllm_env() -> Iterator[str]:
    """The vLLM environment's python (built once, then cached; several minutes the first time:
    scripts/vllm-env.sh, which `make test` runs)."""
    import subprocess

    out = subprocess.run([str(ROOT / "scripts" / "vllm-env.sh")], capture_output=True,
                         text=True, check=False, timeout=1200)
    assert out.returncode == 0, f"building the vLLM environment failed:\n{out.stderr[-3000:]}"
    python = out.stdout.strip().splitlines()[-1]
    previous = os.environ.get("RECURSOR_VLLM_PYTHON")
    os.environ["RECURSOR_VLLM_PYTHON"] = python
    yield python
    if previous is None:
        os.environ.pop("RECURSOR_VLLM_PYTHON", None)
    else:
        os.environ["RECURSOR_VLLM_PYTHON"] = previous
