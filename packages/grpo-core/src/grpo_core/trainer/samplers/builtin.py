"""grpo's own prompt samplers: each module of this folder adds its factory with
``@SAMPLERS.add(name, description=...)``; the package registers exactly what was added
(:class:`grpo_core.plugin.builtins.Builtins`)."""

from __future__ import annotations

from grpo_core.plugin.builtins import Builtins

SAMPLERS = Builtins("register_samplers")

__all__ = ["SAMPLERS"]
