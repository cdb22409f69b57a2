"""Executors for training and evaluation jobs: job specs and records, the local executor,
TRL SFT/GRPO and generation/eval work (docs/executors.md). Heavy libraries load lazily.

The names below are the executors' contract, the only ones the orchestrator imports;
:func:`build_executor` turns an ``ExecutorConfig`` (``recursor.config``) into an executor (the
CLI and the co-evolution schedule both use it).
"""

from recursor.executors._base import Executor, JobHandle
from recursor.executors.deepspeed_executor import DeepSpeedExecutor
from recursor.executors.factory import build_executor
from recursor.executors.local import LocalExecutor
from recursor.executors.ray_executor import RayExecutor
from recursor.executors.serving import server_info
from recursor.executors.spec import JOB_SPEC_ADAPTER, JobRecord, JobSpec, JobStatus

__all__ = ["JOB_SPEC_ADAPTER", "DeepSpeedExecutor", "Executor", "JobHandle", "JobRecord",
           "JobSpec", "JobStatus", "LocalExecutor", "RayExecutor", "build_executor",
           "server_info"]
