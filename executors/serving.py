"""``serve`` jobs: an OpenAI-compatible server for a checkpoint, until cancelled or timed out.

``config``: ``backend`` (below), ``max_model_len`` (default: the smaller of 256 and the
checkpoint's positions, from its ``config.json``; a longer one is refused with both named),
``dtype`` (float32 on CPU),
``memory_utilization`` (vLLM's share of GPU memory, or of RAM on CPU: 0.9 / 0.2).

``config.backend``: ``vllm`` (``vllm.entrypoints.openai.api_server`` from vLLM's own
environment, see scripts/vllm-env.sh), ``transformers`` (``recursor.executors.hf_server``),
or ``auto`` (the default: vLLM where its environment exists). Once the server answers
``/v1/models`` the work writes ``out/server.json`` (url, model name, backend), which
``server_info`` reads for clients: eval and generate jobs with ``config.server``, or the LLM
proposer with ``api_base``.
"""

from __future__ import annotations

import collections
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from recursor.executors._forked import free_port
from recursor.executors.spec import ServeJob

DEFAULT_VLLM_PYTHON = Path.home() / ".cache" / "recursor" / "vllm-env" / "bin" / "python"
STARTUP_S = 300.0


def vllm_python() -> Path | None:
    """The interpreter of vLLM's environment, where one was built."""
    path = Path(os.environ.get("RECURSOR_VLLM_PYTHON", DEFAULT_VLLM_PYTHON))
    return path if path.is_file() else None


POSITION_KEYS = ("max_position_embeddings", "n_positions", "n_ctx", "seq_length")
DEFAULT_MAX_MODEL_LEN = 256
ERROR_LINES = 40  # the server's last stderr lines kept for the record


def model_positions(model: str) -> int | None:
    """The longest sequence a checkpoint folder's ``config.json`` allows, or None (a hub name,
    or a config that does not say)."""
    path = Path(model) / "config.json"
    try:
        config = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    found = [config[key] for key in POSITION_KEYS if isinstance(config.get(key), int)]
    return min(found) if found else None


def max_model_len(spec: ServeJob) -> int:
    """``config.max_model_len``, checked against the checkpoint's positions; by default the
    smaller of 256 and those. ValueError naming both when the config asks for more."""
    positions = model_positions(str(spec.model))
    asked = spec.config.get("max_model_len")
    if asked is None:
        return min(DEFAULT_MAX_MODEL_LEN, positions or DEFAULT_MAX_MODEL_LEN)
    if positions is not None and int(asked) > positions:
        raise ValueError(f"config.max_model_len {asked} is longer than the model's "
                         f"{positions} positions ({spec.model}/config.json); leave it out "
                         f"or set at most {positions}")
    return int(asked)


def server_command(spec: ServeJob, port: int) -> tuple[list[str], str]:
    backend = str(spec.config.get("backend", "auto"))
    python = vllm_python()
    if backend == "vllm" and python is None:
        raise RuntimeError("backend vllm, but no vLLM environment: run scripts/vllm-env.sh or "
                           "set RECURSOR_VLLM_PYTHON")
    model = str(spec.model)
    if backend in ("vllm", "auto") and python is not None:
        return [str(python), "-m", "vllm.entrypoints.openai.api_server", "--model", model,
                "--served-model-name", model, "--host", "127.0.0.1", "--port", str(port),
                "--dtype", str(spec.config.get("dtype", "auto" if _gpu() else "float32")),
                "--gpu-memory-utilization", str(spec.config.get("memory_utilization",
                                                               0.9 if _gpu() else 0.2)),
                "--max-model-len", str(max_model_len(spec)),
                *([] if _gpu() else ["--enforce-eager"])], "vllm"
    if backend not in ("auto", "transformers"):
        raise ValueError(f"unknown serve backend {backend!r}: vllm, transformers or auto")
    return [sys.executable, "-m", "recursor.executors.hf_server", "--model", model,
            "--port", str(port)], "transformers"


def serve(spec: ServeJob, out: Path) -> dict[str, Any]:
    port = free_port()
    argv, backend = server_command(spec, port)
    started = time.monotonic()
    server = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE)
    tail = _relay(server)
    signal.signal(signal.SIGTERM, lambda *_: server.terminate())
    url = f"http://127.0.0.1:{port}/v1"
    try:
        _wait_ready(server, url, float(spec.config.get("startup_s", STARTUP_S)), tail)
        startup = time.monotonic() - started
        info = {"url": url, "model": spec.model, "backend": backend, "startup_s": startup}
        _publish(out / "server.json", json.dumps(info))
        print(f"serving {spec.model} with {backend} at {url} ({startup:.1f} s)", flush=True)
        server.wait()
    finally:
        if server.poll() is None:
            server.terminate()
            server.wait(timeout=30)
    return {"metrics": {"startup_s": startup, "backend": backend},
            "artifacts": {"server": str(out / "server.json")}}


def _publish(path: Path, text: str) -> None:
    """Write ``path`` whole or not at all: a reader polling for it never sees it half written."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _relay(server: subprocess.Popen[bytes]) -> collections.deque[str]:
    """Copy the server's stderr to this job's log as it comes, keeping its last lines."""
    tail: collections.deque[str] = collections.deque(maxlen=ERROR_LINES)

    def pump() -> None:
        assert server.stderr is not None
        for raw in server.stderr:
            sys.stderr.buffer.write(raw)
            sys.stderr.flush()
            tail.append(raw.decode("utf-8", "replace").rstrip())

    threading.Thread(target=pump, daemon=True).start()
    return tail


def error_line(lines: Iterable[str]) -> str | None:
    """The server's own reason: its last line naming an error, else its last line."""
    kept = [line.strip() for line in lines if line.strip()]
    named = [line for line in kept if "Error" in line or "error" in line]
    found = named or kept
    return found[-1][-300:] if found else None


def _wait_ready(server: subprocess.Popen[bytes], url: str, limit_s: float,
                tail: collections.deque[str] | None = None) -> None:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if server.poll() is not None:
            time.sleep(0.2)  # the relay's last lines
            reason = error_line(tail or ())
            raise RuntimeError(f"the server exited with status {server.returncode} while "
                               f"starting: {reason or 'no output'} (the job log has the rest)")
        try:
            with urllib.request.urlopen(f"{url}/models", timeout=2):
                return
        except OSError:
            time.sleep(0.5)
    raise RuntimeError(f"the server did not answer within {limit_s:g} s")


def server_info(job_dir: Path, timeout_s: float = STARTUP_S) -> dict[str, Any]:
    """``server.json`` of a running serve job, waiting for it to appear."""
    path = job_dir / "out" / "server.json"
    deadline = time.monotonic() + timeout_s
    while not path.is_file():
        if (job_dir / "record.json").is_file() or time.monotonic() > deadline:
            raise RuntimeError(f"serve job {job_dir.name} is not serving (see its job.log)")
        time.sleep(0.5)
    info: dict[str, Any] = json.loads(path.read_text())
    return info


def _gpu() -> bool:
    """Whether this machine has a CUDA device (on CPU, vLLM's memory share is of RAM)."""
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


__all__ = ["serve", "server_command", "server_info", "vllm_python"]
