"""Sandboxes that run untrusted candidate commands under limits."""

from recursor.sandbox._base import (
    Mount,
    Sandbox,
    SandboxLimits,
    SandboxRequest,
    SandboxResult,
    trusted_module_command,
)
from recursor.sandbox.process import ProcessSandbox

__all__ = ["Mount", "ProcessSandbox", "Sandbox", "SandboxLimits", "SandboxRequest", "SandboxResult",
           "trusted_module_command"]
