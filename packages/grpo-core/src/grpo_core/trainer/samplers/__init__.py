"""Prompt samplers by name: which training prompts each generation batch draws.

Each built-in is one module here whose factory carries ``@SAMPLERS.add(name,
description=...)`` (:mod:`.builtin`); this package imports those modules by name below and
registers what they added (the core's default plugin for the ``register_samplers`` hook).
A new sampler is one file, its name in the import below, and one setting
(``sampling.prompts``); any other module here (a helper) is never imported for it. Plugins
register theirs through the same hook. :mod:`.base` says what a sampler sees (``Pool``)
and returns.
"""

from __future__ import annotations

from grpo_core.trainer.samplers import frontier, trl  # noqa: F401 - each adds its sampler to SAMPLERS
from grpo_core.trainer.samplers.builtin import SAMPLERS

register_samplers = SAMPLERS.hookimpl()

__all__ = ["register_samplers", "SAMPLERS"]
