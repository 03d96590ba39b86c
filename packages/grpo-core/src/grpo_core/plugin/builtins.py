"""grpo's own entries of a registry, each added where it is defined.

A folder of built-ins (the learning methods in ``trainer/methods/``) was once found by
importing every module in it and reading ``NAME`` from each: one helper module without
``NAME`` made the hook raise and every built-in vanish. Here the built-ins are what was
added, nothing else: a module adds its entry with :meth:`Builtins.add` where the entry is
defined, the package imports the modules it ships by name, and :meth:`Builtins.hookimpl`
is the default plugin's hook implementation registering exactly those entries. A module
nobody imports changes nothing.

Any registry of the same shape (a ``register_<kind>s(register)`` hook whose
``register(name, obj, *, description=None, ...)`` the core's own entries call too) uses it
the same way::

    SAMPLERS = Builtins("register_samplers")          # in the built-ins' package

    @SAMPLERS.add("uniform", description="every prompt as often")
    def uniform(): ...                                # in one of its modules

    register_samplers = SAMPLERS.hookimpl()           # the package: imported modules, then this

and the package's module path goes into ``plugins.DEFAULT_PLUGINS``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from grpo_core.hookspecs import hookimpl

T = TypeVar("T")


@dataclass(frozen=True)
class Builtin:
    name: str
    obj: Any
    description: str
    keywords: dict[str, Any] = field(default_factory=dict)


class Builtins:
    """The built-in entries of the registry that ``hook_name`` fills, in the order added."""

    def __init__(self, hook_name: str):
        self.hook_name = hook_name
        self.entries: dict[str, Builtin] = {}

    def add(self, name: str, *, description: str, **keywords: Any) -> Callable[[T], T]:
        """A decorator: ``obj`` is the built-in ``name`` (``keywords`` are ``register``'s
        other keywords). Adding one name twice is a mistake in grpo itself."""

        def add(obj: T) -> T:
            if name in self.entries:
                raise ValueError(f"{self.hook_name}: grpo's built-in '{name}' is added twice "
                                 f"({self.entries[name].obj!r} and {obj!r})")
            self.entries[name] = Builtin(name, obj, description, dict(keywords))
            return obj

        return add

    def names(self) -> list[str]:
        return list(self.entries)

    def register_all(self, register: Callable[..., None]) -> None:
        for entry in self.entries.values():
            register(entry.name, entry.obj, description=entry.description, **entry.keywords)

    def hookimpl(self) -> Callable[[Callable[..., None]], None]:
        """The hook implementation registering these entries: assign it to a module
        attribute named as the hook (pluggy reads the name from the attribute)."""

        def register_builtins(register: Callable[..., None]) -> None:
            self.register_all(register)

        register_builtins.__qualname__ = register_builtins.__name__ = self.hook_name
        register_builtins.__doc__ = f"grpo's own entries for {self.hook_name}: {', '.join(self.entries) or 'none'}."
        return hookimpl(register_builtins)


__all__ = ["Builtin", "Builtins"]
