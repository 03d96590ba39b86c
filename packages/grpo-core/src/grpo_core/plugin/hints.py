"""What a lookup says about a name no plugin registered: the closest registered names,
or which of our own distributions provides it (``KNOWN_NAMESPACES``, ``KNOWN_DATASETS``,
``KNOWN_ENVIRONMENTS``) and how to install or allow it, or the command that lists them.
:class:`grpo_core.plugin.registry.Registry` raises it as an ``UnknownNameError``."""

from __future__ import annotations

import difflib

from grpo_core.plugin import plugins

# The command that lists each kind of entry
LIST_COMMANDS = {"reward": "grpo rewards list", "dataset": "grpo datasets list",
                 "system prompt": "grpo prompts list", "probe": "grpo plugins",
                 "environment": "grpo envs list", "learning method": "grpo methods list",
                 "command": "grpo --help", "prompt sampler": "grpo samplers list"}


def install_hint(dist: str) -> str:
    """How to install one of our distributions today (they are not on PyPI yet)."""
    return f"pip install ./packages/{dist} from a grpo checkout"


# Where the names of our own plugins live, for "pip install" hints.
KNOWN_NAMESPACES = {
    "math": "grpo-rewards-math",
    "format": "grpo-rewards-format",
    "length": "grpo-rewards-format",
    "repetition": "grpo-rewards-format",
    "code": "grpo-rewards-code",
}
KNOWN_DATASETS = {
    name: "grpo-datasets" for name in ("gsm8k", "math", "medcalc", "files", "hub", "arithmetic")
}
KNOWN_ENVIRONMENTS = {name: "grpo-rewards-code" for name in ("python", "guess_number")}


def known_home(kind: str, name: str) -> str | None:
    """The distribution of ours that provides ``name`` (a ``kind`` of entry), if one does."""
    if kind == "dataset":
        return KNOWN_DATASETS.get(name)
    if kind == "environment":
        return KNOWN_ENVIRONMENTS.get(name)
    return KNOWN_NAMESPACES.get(name.split(".", 1)[0])


def unknown_message(kind: str, name: str, names: list[str]) -> str:
    """Why ``name`` is not among the registered ``names`` and what to do: the closest of
    them, or the distribution of ours that provides it (installed but not loaded, left out
    of the allowed list, or to install), or the command that lists them."""
    close = difflib.get_close_matches(name, names, n=5, cutoff=0.5)
    short = name.rsplit(".", 1)[-1]
    close += [n for n in names if n not in close and short and short in n][: 5 - len(close)]
    msg = f"unknown {kind} '{name}'."
    if close:
        msg += f" Closest registered: {', '.join(close)}."
    elif names:
        shown = ", ".join(names[:20]) + (" ..." if len(names) > 20 else "")
        msg += f" Registered {kind}s: {shown}."
    else:
        msg += f" No {kind}s are registered: no plugin providing them is loaded."
    hint = known_home(kind, name)
    allowed = plugins.allowed_distributions()
    if hint and not close and plugins.is_installed(hint):
        if allowed is not None and hint not in allowed:
            msg += f" '{name}' comes from {hint}, which is installed: add it to {plugins.ENV_VAR}."
        else:
            msg += (f" '{name}' comes from {hint}, which is installed but did not load "
                    f"(see the warnings above, or `grpo plugins`).")
    elif hint and not close:
        msg += f" '{name}' comes from {hint}: {install_hint(hint)}"
        if plugins.allowed_distributions() is not None:
            msg += f" (and add it to {plugins.ENV_VAR})"
        msg += "."
    else:
        msg += f" List them with `{LIST_COMMANDS.get(kind, 'grpo plugins')}`."
    return msg


__all__ = ["unknown_message", "known_home", "install_hint", "KNOWN_NAMESPACES", "KNOWN_DATASETS",
           "KNOWN_ENVIRONMENTS", "LIST_COMMANDS"]
