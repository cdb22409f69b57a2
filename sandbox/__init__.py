"""Sandboxes that run untrusted candidate commands under limits."""

from recursor.sandbox._base import (
    Mount,
    Sandbox,
    SandboxLimits,
    SandboxRequest,
    SandboxResult,
    trusted_module_command,
)
from recursor.sandbox.factory import build_sandbox, limits_for
from recursor.sandbox.process import ProcessSandbox

__all__ = ["Mount", "ProcessSandbox", "Sandbox", "SandboxLimits", "SandboxRequest", "SandboxResult",
           "build_sandbox", "limits_for", "trusted_module_command"]
