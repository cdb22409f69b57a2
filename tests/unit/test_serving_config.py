"""A ``serve`` job's sequence length comes from the checkpoint (a small model's 64 positions,
not a fixed 256), a longer one asked for is refused naming both, and a server that dies while
starting puts its own error line in the record."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from recursor.executors.serving import (
    _relay,
    _wait_ready,
    error_line,
    max_model_len,
    server_command,
)
from recursor.executors.spec import ServeJob


def _spec(model: str, **config: object) -> ServeJob:
    return ServeJob(kind="serve", model=model, config=dict(config))


def test_the_length_comes_from_the_checkpoint(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "gpt2", "n_positions": 64}))
    assert max_model_len(_spec(str(tmp_path))) == 64
    assert max_model_len(_spec(str(tmp_path), max_model_len=32)) == 32
    with pytest.raises(ValueError, match="max_model_len 256 is longer than the model's 64"):
        max_model_len(_spec(str(tmp_path), max_model_len=256))
    assert max_model_len(_spec("some/hub-name")) == 256  # nothing to read: the default
    monkeypatch.setenv("RECURSOR_VLLM_PYTHON", sys.executable)  # builds the command only
    argv, backend = server_command(_spec(str(tmp_path), backend="vllm"), 8000)
    assert backend == "vllm" and argv[argv.index("--max-model-len") + 1] == "64"


def test_a_server_that_dies_starting_names_its_reason() -> None:
    script = ("import sys\nprint('INFO loading', file=sys.stderr)\n"
              "print('ValueError: max_model_len (256) is greater than the derived (64)', "
              "file=sys.stderr)\nprint('shutting down', file=sys.stderr)\nsys.exit(1)\n")
    server = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.DEVNULL,
                              stderr=subprocess.PIPE)
    tail = _relay(server)
    with pytest.raises(RuntimeError, match=r"status 1 while starting: ValueError: "
                                           r"max_model_len \(256\) is greater"):
        _wait_ready(server, "http://127.0.0.1:9/v1", 30, tail)
    assert error_line(["a", "", "b"]) == "b" and error_line([]) is None
