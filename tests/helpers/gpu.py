"""Whether a CUDA GPU is here, for the GPU tests' skip marks. torch is imported (about two
seconds of every test worker's collection) only where a GPU driver's device or its proc entry
exists: NVIDIA's, WSL's and ROCm's (whose torch answers ``torch.cuda`` too)."""

from __future__ import annotations

import os

DRIVER_MARKS = ("/proc/driver/nvidia/version", "/dev/nvidiactl", "/dev/nvidia0", "/dev/dxg",
                "/dev/kfd")


def cuda_available() -> bool:
    if not any(os.path.exists(mark) for mark in DRIVER_MARKS):
        return False
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())
