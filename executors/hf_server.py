"""An OpenAI-compatible server on transformers, for where vLLM is absent:
``python -m recursor.executors.hf_server --model CHECKPOINT --port N``.

It serves ``GET /v1/models``, ``POST /v1/completions`` and ``POST /v1/chat/completions`` (the
messages joined into one prompt) for one checkpoint, one request at a time, with the fields
the LLM proposer and the eval jobs use: ``prompt``/``messages``, ``max_tokens``,
``temperature``, ``n``, ``stop`` (the text is cut before the first stop string, as vLLM
does); the answer carries ``usage``. It is a fallback, not a fast server.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Generator:
    """One checkpoint and a lock (transformers' generate is not re-entrant)."""

    def __init__(self, model_dir: str) -> None:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.name = model_dir
        self.tokenizer = AutoTokenizer.from_pretrained(model_dir)
        self.tokenizer.padding_side = "left"
        # transformers leaves Module.eval unannotated
        self.model = AutoModelForCausalLM.from_pretrained(model_dir).eval()  # type: ignore[no-untyped-call]
        self.lock = threading.Lock()

    def complete(self, prompt: str, max_tokens: int, temperature: float,
                 n: int) -> tuple[list[str], int, int]:
        """(completions, prompt tokens, completion tokens)."""
        import torch

        encoded = self.tokenizer([prompt] * n, return_tensors="pt", padding=True)
        options: dict[str, Any] = ({"do_sample": True, "temperature": temperature}
                                   if temperature > 0 else {"do_sample": False})
        with self.lock, torch.no_grad():
            output = self.model.generate(**encoded, max_new_tokens=max_tokens,
                                         pad_token_id=self.tokenizer.pad_token_id, **options)
        new = output[:, encoded["input_ids"].shape[1]:]
        texts = [t.strip() for t in self.tokenizer.batch_decode(new, skip_special_tokens=True)]
        used = int((new != self.tokenizer.pad_token_id).sum())
        return texts, int(encoded["input_ids"].shape[1]), used


def _handler(generator: Generator) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            if self.path.rstrip("/") == "/v1/models":
                self._send(200, {"object": "list", "data": [
                    {"id": generator.name, "object": "model", "owned_by": "recursor"}]})
            else:
                self._send(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self) -> None:
            try:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                chat = self.path.rstrip("/").endswith("chat/completions")
                prompts = ([" ".join(m.get("content", "") for m in body["messages"])] if chat
                           else body["prompt"])
                prompts = [prompts] if isinstance(prompts, str) else [str(p) for p in prompts]
                n = int(body.get("n", 1))
                stops = body.get("stop") or []
                stops = [stops] if isinstance(stops, str) else [str(s) for s in stops]
                texts, prompt_tokens, used = [], 0, 0
                for prompt in prompts:
                    some, p_tokens, c_tokens = generator.complete(
                        prompt, int(body.get("max_tokens", 16)),
                        float(body.get("temperature", 0.0)), n)
                    texts += some
                    prompt_tokens, used = prompt_tokens + p_tokens, used + c_tokens
            except (KeyError, TypeError, ValueError) as exc:
                self._send(400, {"error": {"message": f"bad request: {exc}"}})
                return
            cut = [_until_stop(t, stops) for t in texts]
            choices = [({"index": i, "message": {"role": "assistant", "content": t},
                         "finish_reason": why} if chat else
                        {"index": i, "text": t, "finish_reason": why})
                       for i, (t, why) in enumerate(cut)]
            self._send(200, {"id": "hf-1", "object": "chat.completion" if chat
                             else "text_completion", "created": int(time.time()),
                             "model": generator.name, "choices": choices,
                             "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": used,
                                       "total_tokens": prompt_tokens + used}})

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


def _until_stop(text: str, stops: list[str]) -> tuple[str, str]:
    """``text`` up to its first stop string (left out, as vLLM does) and the finish reason."""
    found = [text.index(stop) for stop in stops if stop and stop in text]
    return (text[:min(found)], "stop") if found else (text, "length")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args()
    server = ThreadingHTTPServer((args.host, args.port), _handler(Generator(args.model)))
    print(f"serving {args.model} at http://{args.host}:{args.port}/v1", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
