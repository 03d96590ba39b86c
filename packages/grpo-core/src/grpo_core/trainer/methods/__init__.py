"""Learning methods by name: how a scored batch becomes advantages.

Each built-in is one module here with ``NAME``, ``DESCRIPTION`` and ``FACTORY``; this
package registers every one of them (the core's default plugin for the
``register_advantages`` hook), so a new method is one file plus one setting
(``learning.method``). Plugins register theirs through the same hook.
:mod:`.base` says what a method sees (``Scored``) and returns (``Advantages``).
"""

from __future__ import annotations

import importlib
import pkgutil

from grpo_core.hookspecs import hookimpl


def builtin_modules() -> list:
    """Every method module in this folder (``base`` is the API, not a method)."""
    names = sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name != "base")
    return [importlib.import_module(f"{__name__}.{name}") for name in names]


@hookimpl
def register_advantages(register):
    for module in builtin_modules():
        register(module.NAME, module.FACTORY, description=module.DESCRIPTION)


__all__ = ["register_advantages", "builtin_modules"]
