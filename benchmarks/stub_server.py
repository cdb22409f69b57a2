"""The benchmarks' model: a local OpenAI-compatible chat endpoint with a fixed latency.

It answers every request with a distinct one-line SEARCH/REPLACE edit of the benchmark's
program (so no proposal is a duplicate) and counts its requests and answering time. In the
benchmark's own process (:func:`stub_model`), or in a process of its own
(:func:`stub_process`), so that a system under test running in the benchmark's process does not
share its interpreter lock with the model, as a system run as a child does not. Run as a script
it serves until killed and prints its URL first::

    python benchmarks/stub_server.py LATENCY_S
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MARKER = "# EVOLVE-BLOCK-START"


class StubModel:
    """An OpenAI-compatible chat endpoint answering after ``latency_s``; it records how long
    it spent on each request (the model's share of a slot's time)."""

    def __init__(self, latency_s: float) -> None:
        self.latency_s = latency_s
        self.answered = 0
        self.busy_s = 0.0
        self.first_request: float | None = None  # time.time() of the first request
        self._lock = threading.Lock()
        self.url = ""

    def answer(self) -> str:
        with self._lock:
            self.answered += 1
            number = self.answered
        # a new first line in the block: distinct from every earlier program, valid on any
        return (f"Set the constant to {number}.\n\nprogram.py\n<<<<<<< SEARCH\n"
                f"{MARKER}\n=======\n{MARKER}\nVALUE = {number}\n>>>>>>> REPLACE\n")

    def spent(self, seconds: float) -> None:
        with self._lock:
            self.busy_s += seconds


def _handler(model: StubModel) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def _send(self, reply: dict[str, Any]) -> None:
            body = json.dumps(reply).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:  # the figures, for a stub in a process of its own
            with model._lock:
                figures = {"answered": model.answered, "busy_s": model.busy_s,
                           "first_request": model.first_request}
            self._send(figures)

        def do_POST(self) -> None:
            started = time.monotonic()
            if model.first_request is None:
                model.first_request = time.time()
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            time.sleep(model.latency_s)
            content = model.answer()
            self._send({
                "id": "stub", "object": "chat.completion", "created": int(time.time()),
                "model": "stub", "choices": [{"index": 0, "finish_reason": "stop", "message": {
                    "role": "assistant", "content": content}}],
                "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
            })
            model.spent(time.monotonic() - started)

    return Handler


@contextmanager
def stub_model(latency_s: float) -> Iterator[StubModel]:
    model = StubModel(latency_s)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(model))
    server.daemon_threads = True
    model.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield model
    finally:
        server.shutdown()
        server.server_close()


class RemoteStub:
    """A stub serving in a child process: the same figures, read from it when asked."""

    def __init__(self, url: str) -> None:
        self.url = url

    def _stats(self) -> dict[str, float | None]:
        with urllib.request.urlopen(self.url.removesuffix("/v1") + "/stats", timeout=10) as r:
            return json.loads(r.read())  # type: ignore[no-any-return]

    @property
    def answered(self) -> int:
        return int(self._stats()["answered"] or 0)

    @property
    def busy_s(self) -> float:
        return float(self._stats()["busy_s"] or 0.0)

    @property
    def first_request(self) -> float | None:
        return self._stats()["first_request"]


@contextmanager
def stub_process(latency_s: float) -> Iterator[RemoteStub]:
    """A stub model in a child process (stopped on exit)."""
    child = subprocess.Popen([sys.executable, __file__, str(latency_s)], stdout=subprocess.PIPE,
                             text=True)
    try:
        assert child.stdout is not None
        url = child.stdout.readline().strip()
        if not url.startswith("http://"):
            raise RuntimeError(f"the stub model did not start (it printed {url!r})")
        yield RemoteStub(url)
    finally:
        child.terminate()
        child.wait(timeout=30)


def main() -> None:
    model = StubModel(float(sys.argv[1]))
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(model))
    server.daemon_threads = True
    print(f"http://127.0.0.1:{server.server_address[1]}/v1", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
