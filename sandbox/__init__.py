"""Sandboxes that run untrusted candidate commands under limits."""

from recursor.sandbox._base import Mount, Sandbox, SandboxLimits, SandboxRequest, SandboxResult

__all__ = ["Mount", "Sandbox", "SandboxLimits", "SandboxRequest", "SandboxResult"]
