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


class DatasetError(GrpoError, ValueError):
    """A dataset that cannot be loaded or used as asked."""


class DatasetFileError(DatasetError, FileNotFoundError):
    """A local path that does not exist, matches nothing, or cannot be read."""


class DatasetLoadError(DatasetError):
    """The Hugging Face Hub (or its cache) could not provide the dataset."""


class SplitError(DatasetError):
    """A split string such as ``train[:90%]`` that does not parse or names no split."""


class ColumnError(DatasetError, MissingColumnError):
    """A mapped or expected source column is missing."""


class EmptyDatasetError(DatasetError):
    """No rows are left (after slicing, filters or dropped answers)."""


class PluginWarning(UserWarning):
    """A plugin was skipped (failed import, name clash); the others still load."""


_OS_FIXES = {
    "ENOSPC": "the disk is full: free space there, or point output_dir at a disk with room",
    "EDQUOT": "the disk quota is used up: free space, or point output_dir elsewhere",
    "EACCES": "permission denied: fix the folder's permissions, or choose another output_dir/--output",
    "EPERM": "permission denied: fix the folder's permissions, or choose another output_dir/--output",
    "EROFS": "the file system is read-only: choose another output_dir/--output",
    "ENOENT": "no such file or folder: check the path",
    "ENOTDIR": "a part of the path is a file, not a folder: check the path",
}


def describe_os_error(exc: BaseException) -> str | None:
    """One line for an error of the file system (naming the path and the fix), or None.

    torch.save reports a full disk as a RuntimeError ("unexpected pos"); it is
    recognised too."""
    import errno

    if isinstance(exc, OSError) and exc.errno is not None:
        code = errno.errorcode.get(exc.errno, "")
        path = exc.filename or "?"
        fix = _OS_FIXES.get(code, "check the path and the disk")
        return f"cannot write or read {path} ({exc.strerror}): {fix}."
    text = str(exc)
    if isinstance(exc, RuntimeError) and ("unexpected pos" in text or "PytorchStreamWriter failed" in text):
        return f"saving failed, most likely a full disk ({text[:160]}): {_OS_FIXES['ENOSPC']}."
    return None
