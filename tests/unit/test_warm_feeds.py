"""Feeds on the process sandbox's warm path (``sandbox/_warm``, ``sandbox/_feeds``): a run
forked from a template gets each feed's bytes once, through a pipe of its own linked at the
feed's path; nothing of a feed is a file, another run never sees it, and a run that has to
start cold after its feeds were drained still gets them."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from recursor.feed import FeedError, drain, serve_once
from recursor.plan import TRUSTED_PYTHON_FLAGS, Mount, sandbox_python
from recursor.sandbox import SandboxLimits, SandboxRequest
from recursor.sandbox._warm import warm_module
from recursor.sandbox.process import BWRAP, ProcessSandbox
from recursor.types import RunStatus

pytestmark = pytest.mark.skipif(
    shutil.which(BWRAP) is None, reason="bubblewrap is not installed (apt-get install bubblewrap)"
)
# read each feed, then try again: a feed holds its bytes once
READER = """
import os, stat, sys
for path in sys.argv[1:]:
    kind = "pipe" if stat.S_ISFIFO(os.stat(path).st_mode) else "other"
    with open(path, "rb") as handle:
        first = handle.read()
    again = b""
    if os.path.islink(path):  # the warm run's link: a second open finds the end at once
        with open(path, "rb") as handle:
            again = handle.read()
    print(path, kind, len(first), first[:12].decode(), len(again), flush=True)
print("listing", sorted(os.listdir(os.path.dirname(sys.argv[1]))))
"""


def _request(folder: Path, feeds: dict[str, bytes], code: str = READER) -> SandboxRequest:
    workspace = Path(tempfile.mkdtemp(prefix="warm-feed-"))
    (workspace / "probe.py").write_text(code)
    mounts = [Mount(serve_once(data, folder, timeout_s=60), target, feed=True)
              for target, data in feeds.items()]
    command = [sandbox_python(), *TRUSTED_PYTHON_FLAGS, "-m", "cProfile", "-o", "/dev/null",
               "/workspace/probe.py", *feeds]
    return SandboxRequest(command=command, workspace=workspace, mounts=mounts,
                          limits=SandboxLimits(wall_time_s=30))


@pytest.fixture(scope="module")
def warm() -> Iterator[ProcessSandbox]:
    box = ProcessSandbox(warm=True)
    if not box.warm:
        box.close()
        pytest.skip("the warm path is off here (docs/sandboxes.md)")
    yield box
    box.close()


def test_a_feed_no_longer_keeps_a_run_cold(tmp_path: Path) -> None:
    request = _request(tmp_path, {"/feeds/a.pipe": b"x"})
    assert warm_module(request) is not None
    # a feed that is not a FIFO (nothing feeds it) still runs cold, as before
    plain = tmp_path / "plain"
    plain.write_text("x")
    assert warm_module(SandboxRequest(command=request.command,
                                      mounts=[Mount(plain, "/feeds/a", feed=True)])) is None


def test_a_warm_run_reads_each_feed_once_and_no_file_holds_it(
        warm: ProcessSandbox, tmp_path: Path) -> None:
    big = b"B" * 300_000  # more than a pipe holds: the writer must keep up with the reader
    request = _request(tmp_path, {"/feeds/a.pipe": b"alpha-data", "/feeds/b.pipe": big})
    result = warm.run(request)
    assert result.status is RunStatus.OK, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "/feeds/a.pipe pipe 10 alpha-data 0"
    assert lines[1] == f"/feeds/b.pipe pipe {len(big)} BBBBBBBBBBBB 0"
    assert lines[2] == "listing ['a.pipe', 'b.pipe']"  # the run's own feeds, nothing else
    assert not list(tmp_path.glob("*.pipe"))  # the host's FIFOs are gone once read


def test_concurrent_warm_runs_each_see_only_their_own_feed(
        warm: ProcessSandbox, tmp_path: Path) -> None:
    requests = [_request(tmp_path, {"/feeds/x.pipe": f"run-{i}".encode()}) for i in range(4)]
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(warm.run, requests))
    for i, result in enumerate(results):
        assert result.status is RunStatus.OK, result.stderr
        assert result.stdout.splitlines()[0] == f"/feeds/x.pipe pipe 5 run-{i} 0"


def test_a_run_cannot_reach_the_template_or_another_runs_feed(
        warm: ProcessSandbox, tmp_path: Path) -> None:
    """The feed's descriptor is the run's own: the numbers past it are closed, and the
    folder is a tmpfs of the run's, read-only."""
    code = """
import os
print(sorted(int(fd) for fd in os.listdir('/proc/self/fd')))
try:
    open('/feeds/planted', 'w')
except OSError as exc:
    print('write refused', type(exc).__name__)
print(os.readlink('/feeds/a.pipe'))
"""
    result = warm.run(_request(tmp_path, {"/feeds/a.pipe": b"mine"}, code))
    assert result.status is RunStatus.OK, result.stderr
    fds, refused, link = result.stdout.splitlines()
    assert fds.startswith("[0, 1, 2") and "5" in fds and "6" not in fds.split(",")[-1]
    assert refused.startswith("write refused")
    assert link == "/proc/self/fd/5"


def test_a_run_that_falls_back_to_cold_still_gets_its_feed(tmp_path: Path) -> None:
    box = ProcessSandbox(warm=True)
    try:
        if not box.warm:
            pytest.skip("the warm path is off here")
        box.run(_request(tmp_path, {"/feeds/a.pipe": b"first"}))  # the template exists

        def refuse(*args: object, **kwargs: object) -> None:
            from recursor.sandbox._warm import WarmUnavailable
            raise WarmUnavailable("the template is gone")

        for template in box._pool._templates.values():  # type: ignore[union-attr]
            template.submit = refuse  # type: ignore[method-assign]
        result = box.run(_request(tmp_path, {"/feeds/a.pipe": b"after-fallback"}))
        assert result.status is RunStatus.OK, result.stderr
        # cold: the FIFO itself, bound at the path (no link), fed again from the drained bytes
        assert result.stdout.splitlines()[0] == "/feeds/a.pipe pipe 14 after-fallba 0"
    finally:
        box.close()


def test_draining_a_feed_nobody_writes_gives_up(tmp_path: Path) -> None:

    fifo = tmp_path / "silent.pipe"
    os.mkfifo(fifo)
    started = time.monotonic()
    with pytest.raises(FeedError, match="did not deliver"):
        drain(fifo, timeout_s=0.5)
    assert time.monotonic() - started < 5
    assert drain(serve_once(b"", tmp_path / "f", timeout_s=10), timeout_s=10) == b""


def test_a_feed_in_the_runs_own_places_keeps_it_cold(tmp_path: Path) -> None:
    for target in ("/x.pipe", "/tmp/x.pipe", "/workspace/in/x.pipe", "/dev/shm/x.pipe"):
        assert warm_module(_request(tmp_path, {target: b"x"})) is None, target


def test_a_feed_in_a_folder_the_layout_fills_runs_cold_and_hides_nothing(
        warm: ProcessSandbox, tmp_path: Path) -> None:
    """``/etc`` holds the layout's stand-ins: a run may not cover it with its feed's tmpfs; the
    init refuses, and the run starts cold with its feed served again."""
    code = "import os, sys\nprint(open(sys.argv[1], 'rb').read().decode(), " \
           "os.path.exists('/etc/passwd'))\n"
    result = warm.run(_request(tmp_path, {"/etc/feed.pipe": b"still-fed"}, code))
    assert result.status is RunStatus.OK, result.stderr
    assert result.stdout == "still-fed True\n"


def test_warm_imports_are_preloaded_and_a_failed_one_is_undone_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The template imports what a module names in ``WARM_IMPORTS``; an import that fails is
    undone (nothing it left half-made stays for the run to trip on) and not tried again."""
    from recursor.sandbox import _template

    package = tmp_path / "warmpkg"
    package.mkdir()
    (package / "__init__.py").write_text('WARM_IMPORTS = ("warmpkg.heavy", "warmpkg.bad")\n')
    (package / "heavy.py").write_text("LOADED = True\n")
    (package / "half.py").write_text("")
    (package / "bad.py").write_text(
        "import warmpkg.half\nopen(__file__ + '.tries', 'a').write('x')\n"
        "raise RuntimeError('cannot load here')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(_template, "_FAILED_PRELOADS", set())
    try:
        _template.preload(["warmpkg"])
        _template.preload(["warmpkg"])
        assert "warmpkg.heavy" in sys.modules
        assert "warmpkg.bad" not in sys.modules and "warmpkg.half" not in sys.modules
        assert (package / "bad.py.tries").read_text() == "x"  # tried once
    finally:
        for name in [m for m in sys.modules if m.startswith("warmpkg")]:
            del sys.modules[name]
