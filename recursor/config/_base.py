"""Shared bases of the config models: strict fields, and the plug-in source (a class path or
an entry point)."""

from __future__ import annotations

from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    model_validator,
)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _PluginSource(_Model):
    """A user's plug-in: a ``class_path`` or an installed entry point (``recursor.plugins``
    names each kind's group), built with ``options``."""

    class_path: str | None = Field(None, pattern=r"^[\w.]+:[\w.]+$",
                                   description="package.module:Class")
    entry_point: str | None = Field(None, min_length=1, description="an installed plug-in's "
                                    "name (see `recursor plugins list`)")
    options: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _one_source(self) -> _PluginSource:
        if (self.class_path is None) == (self.entry_point is None):
            raise ValueError("give exactly one of class_path ('package.module:Class') or "
                             "entry_point (see `recursor plugins list`)")
        return self


