"""grpo's own learning methods: each module of this folder adds its factory with
``@METHODS.add(name, description=...)``; the package registers exactly what was added
(:class:`grpo_core.plugin.builtins.Builtins`)."""

from __future__ import annotations

from grpo_core.plugin.builtins import Builtins

METHODS = Builtins("register_advantages")

__all__ = ["METHODS"]
