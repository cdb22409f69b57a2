"""Sandboxes that run untrusted candidate commands under limits.

``build_sandbox`` and ``limits_for`` load on first use: they read the config models (pydantic),
and this package is on the import path of evaluators that run in a sandbox image without
pydantic or PyYAML (``recursor.sandbox.guest``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from recursor.sandbox._base import (
    Mount,
    Sandbox,
    SandboxLimits,
    SandboxRequest,
    SandboxResult,
    trusted_module_command,
)
from recursor.sandbox.process import ProcessSandbox

if TYPE_CHECKING:
    from recursor.sandbox.factory import build_sandbox, limits_for

_FACTORY = ("build_sandbox", "limits_for")


def __getattr__(name: str) -> Any:
    if name in _FACTORY:
        from recursor.sandbox import factory

        return getattr(factory, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["Mount", "ProcessSandbox", "Sandbox", "SandboxLimits", "SandboxRequest", "SandboxResult",
           "build_sandbox", "limits_for", "trusted_module_command"]
