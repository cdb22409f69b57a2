"""The learned proposer's round on CUDA: a short campaign's changes fine-tune a checkpoint
(yours, from $RECURSOR_GPU_CHECKPOINT, else a tiny GPT-2 built here), a serve job serves it
(vLLM where its environment exists) and the proposer asks it, through
scripts/learned_proposer_gpu.py. Skipped, with the reason, where no GPU is."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.gpu import cuda_available

ROOT = Path(__file__).resolve().parents[2]




pytestmark = [pytest.mark.gpu, pytest.mark.timeout(3600), pytest.mark.skipif(
    not cuda_available(), reason="needs a CUDA GPU (none here); set RECURSOR_GPU_CHECKPOINT to use "
    "your own checkpoint")]


def test_a_checkpoint_is_fine_tuned_served_and_proposes_on_the_gpu(
        tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    campaign = subprocess.run([sys.executable, "-m", "recursor.cli", "run", "--dir",
                               str(tmp_path / "c"), "--max-evals", "30", "-q"],
                              env=subprocess_env, capture_output=True, text=True, timeout=1200,
                              check=False)
    assert campaign.returncode == 0, campaign.stderr[-3000:]
    model = os.environ.get("RECURSOR_GPU_CHECKPOINT", "tiny-gpt2")
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "learned_proposer_gpu.py"),
                           "--campaign", str(tmp_path / "c"), "--model", model,
                           "--steps", "100", "--proposals", "10", "--work",
                           str(tmp_path / "work")], env=subprocess_env, capture_output=True,
                          text=True, timeout=2400, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "sft: done" in done.stdout and "valid proposals: " in done.stdout
