"""Exceptions raised by grpo. Every message names the offending value and the fix."""

from __future__ import annotations


class GrpoError(Exception):
    """Base class: a user-facing error whose message is meant to be printed as is."""


class PluginError(GrpoError):
    """A plugin could not be loaded or registered something invalid."""


class RegistryError(GrpoError):
    """Bad or conflicting names in the reward / dataset / system-prompt registries."""


class UnknownNameError(RegistryError, KeyError):
    """A name that no loaded plugin registered."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


class DuplicateNameError(RegistryError):
    """Two plugins registered the same name."""


class SpecError(GrpoError, ValueError):
    """A reward spec string (``name(key=value):weight``) that does not parse."""


class RewardParamError(GrpoError, TypeError, ValueError):
    """A reward or dataset parameter that the function does not take, or of the wrong type."""


class MissingColumnError(GrpoError, ValueError):
    """A reward needs a dataset column the dataset does not have."""


class ConfigError(GrpoError, ValueError):
    """A training configuration that cannot be used."""


class PluginWarning(UserWarning):
    """A plugin was skipped (failed import, name clash); the others still load."""
