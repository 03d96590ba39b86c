"""Learning methods by name: how a scored batch becomes advantages.

Each built-in is one module here whose factory carries ``@METHODS.add(name,
description=...)`` (:mod:`.builtin`); this package imports those modules by name below and
registers what they added (the core's default plugin for the ``register_advantages``
hook). A new method is one file, its name in the import below, and one setting
(``learning.method``); any other module here (a helper) is never imported for it and
changes nothing. Plugins register theirs through the same hook. :mod:`.base` says what a
method sees (``Scored``) and returns (``Advantages``); plugins import it as
``grpo_core.methods``.
"""

from __future__ import annotations

from grpo_core.trainer.methods import grpo, sign, zvp  # noqa: F401 - each adds its method to METHODS
from grpo_core.trainer.methods.builtin import METHODS

register_advantages = METHODS.hookimpl()

__all__ = ["register_advantages", "METHODS"]
