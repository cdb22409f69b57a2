"""A local OpenAI-compatible chat server with scripted answers, for tests of the LLM proposer.

The real ``openai`` and ``litellm`` clients talk to it over HTTP. Each request to
``/v1/chat/completions`` takes the next step of the script (the last one repeats):

* ``{"content": "...", "finish_reason": "stop"}``: a normal answer;
* ``{"status": 429}`` / ``{"status": 500}``: an error response;
* ``{"hang": 30}``: no answer for that many seconds (the client should time out).

Usage is reported as characters / 4, so tests can predict token counts.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class ScriptedLLM:
    def __init__(self, script: list[dict[str, Any]]) -> None:
        self.script = list(script)
        self.requests: list[dict[str, Any]] = []
        self.authorizations: list[str | None] = []
        self._lock = threading.Lock()
        self.url = ""

    def next_step(self, body: dict[str, Any], authorization: str | None) -> dict[str, Any]:
        with self._lock:
            self.requests.append(body)
            self.authorizations.append(authorization)
            return self.script.pop(0) if len(self.script) > 1 else self.script[0]


def _handler(llm: ScriptedLLM) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:  # keep test output clean
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            body = json.loads(self.rfile.read(length) or b"{}")
            if not self.path.rstrip("/").endswith("chat/completions"):
                self._send(404, {"error": {"message": f"no route {self.path}"}})
                return
            step = llm.next_step(body, self.headers.get("Authorization"))
            if "hang" in step:
                time.sleep(step["hang"])
                return
            if "status" in step:
                self._send(step["status"], {"error": {"message": f"scripted {step['status']}",
                                                      "type": "scripted"}})
                return
            self._send(200, _completion(body, step))

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                if status == 429:
                    self.send_header("Retry-After", "0")
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass

    return Handler


def _completion(body: dict[str, Any], step: dict[str, Any]) -> dict[str, Any]:
    content = step["content"]
    prompt = sum(len(m.get("content") or "") for m in body.get("messages", []))
    return {
        "id": "chatcmpl-scripted", "object": "chat.completion", "created": int(time.time()),
        "model": body.get("model", "scripted"),
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                     "finish_reason": step.get("finish_reason", "stop")}],
        "usage": {"prompt_tokens": prompt // 4, "completion_tokens": len(content) // 4,
                  "total_tokens": prompt // 4 + len(content) // 4},
    }


@contextmanager
def scripted_llm_server(script: list[dict[str, Any]]) -> Iterator[ScriptedLLM]:
    """Serve ``script`` on a free loopback port; ``.url`` is the ``/v1`` base URL."""
    llm = ScriptedLLM(script)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(llm))
    server.daemon_threads = True
    llm.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield llm
    finally:
        server.shutdown()
        server.server_close()
