"""An OpenAI-compatible server on transformers, for where vLLM is absent:
``python -m recursor.executors.hf_server --model CHECKPOINT --port N``.

It serves ``GET /v1/models``, ``POST /v1/completions`` and ``POST /v1/chat/completions`` (the
messages joined into one prompt) for one checkpoint, one request at a time, with the fields
the LLM proposer and the eval jobs use: ``prompt``/``messages``, ``max_tokens``,
``temperature``, ``n``, ``stop`` (the text is cut before the first stop string, as vLLM
does), and vLLM's ``structured_outputs: {choice: [...]}`` (the answer is one of the choices,
drawn by the model's likelihood of each, sharpened by the temperature: the most likely at 0);
the answer carries ``usage``. It is a fallback, not a fast server.
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


    def choose(self, prompt: str, choices: list[str], temperature: float,
               n: int) -> tuple[list[str], int, int]:
        """``n`` of ``choices``, drawn by the model's log-likelihood of each after ``prompt``
        (divided by ``temperature``; the most likely when it is 0)."""
        import torch

        prompt_ids = self.tokenizer(prompt)["input_ids"]
        scores = []
        with self.lock, torch.no_grad():
            for start in range(0, len(choices), CHOICE_BATCH):
                scores += self._loglik(prompt_ids, choices[start:start + CHOICE_BATCH])
        values = torch.tensor(scores)
        if temperature <= 0:
            picked = [int(values.argmax())] * n
        else:
            weights = torch.softmax(values / temperature, dim=0)
            picked = [int(i) for i in torch.multinomial(weights, n, replacement=True)]
        return [choices[i] for i in picked], len(prompt_ids), 0

    def _loglik(self, prompt_ids: list[int], choices: list[str]) -> list[float]:
        """The summed log-probability of each choice's tokens after the prompt."""
        import torch

        pad = self.tokenizer.pad_token_id or 0
        rows = [self.tokenizer(c, add_special_tokens=False)["input_ids"] for c in choices]
        width = len(prompt_ids) + max(len(r) for r in rows)
        ids = torch.full((len(rows), width), pad)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, row in enumerate(rows):  # right-padded: positions line up with the prompt
            ids[i, :len(prompt_ids) + len(row)] = torch.tensor(prompt_ids + row)
            mask[i, :len(prompt_ids) + len(row)] = 1
        logits = self.model(input_ids=ids, attention_mask=mask).logits.log_softmax(-1)
        out = []
        for i, row in enumerate(rows):
            at = torch.arange(len(prompt_ids) - 1, len(prompt_ids) + len(row) - 1)
            out.append(float(logits[i, at, torch.tensor(row)].sum()))
        return out


CHOICE_BATCH = 32


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
                choices = (body.get("structured_outputs") or {}).get("choice")
                if choices is not None and (not isinstance(choices, list) or not choices):
                    raise ValueError("structured_outputs.choice must be a non-empty list")
                texts, prompt_tokens, used = [], 0, 0
                for prompt in prompts:
                    temperature = float(body.get("temperature", 0.0))
                    some, p_tokens, c_tokens = (
                        generator.choose(prompt, [str(c) for c in choices], temperature, n)
                        if choices else generator.complete(
                            prompt, int(body.get("max_tokens", 16)), temperature, n))
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
