"""Registries built from the ``register_*`` hooks.

Each plugin's hook implementation is called with a ``register`` bound to that
plugin, so a name registered twice can be reported with both plugins and their
distributions (pluggy's own results do not say which plugin produced them). A name
no plugin registered is answered by :mod:`grpo_core.plugin.hints` (the closest names,
or which of our distributions provides it).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import Any

from grpo_core.base.errors import DuplicateNameError, RegistryError, UnknownNameError
from grpo_core.plugin import api, plugins
from grpo_core.plugin.hints import unknown_message

NAME_RE = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z0-9_]+)*$")
DOTTED_NAME_RE = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z0-9_]+)+$")
COMMAND_RE = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")  # a word on the command line: acme-lengths


@dataclass(frozen=True)
class Entry:
    """One registered reward, dataset adapter or system prompt."""

    name: str
    obj: Any
    description: str
    plugin: str
    distribution: str | None
    version: str | None = None
    extra: dict = field(default_factory=dict, compare=False)

    def __str__(self) -> str:
        return self.name

    @property
    def source(self) -> str:
        return f"plugin '{self.plugin}'" + (
            f" (distribution {self.distribution})" if self.distribution else ""
        )


class Registry:
    """Name -> Entry for one kind (``reward``, ``dataset``, ``system prompt``)."""

    def __init__(self, kind: str, entries: dict[str, Entry], conflicts: dict[str, list[Entry]] | None = None):
        self.kind = kind
        self.entries = entries
        self.conflicts = conflicts or {}

    def names(self) -> list[str]:
        return sorted(self.entries)

    def __contains__(self, name: str) -> bool:
        return name in self.entries

    def get(self, name: str) -> Entry:
        if name in self.conflicts:
            raise DuplicateNameError(_conflict_message(self.kind, name, self.conflicts[name]))
        try:
            return self.entries[name]
        except KeyError:
            raise UnknownNameError(unknown_message(self.kind, name, self.names())) from None


def _describe(obj: Any, description: str | None) -> str:
    if description:
        return description.strip()
    doc = getattr(obj, "__doc__", None) if not isinstance(obj, str) else None
    if doc:
        return doc.strip().splitlines()[0].strip()
    return ""


_CACHE: dict[str, tuple[tuple, Registry]] = {}


def collect(hook_name: str, kind: str, *, dotted: bool, validate=None, extras: dict | None = None) -> Registry:
    """Call every implementation of ``hook_name`` with a plugin-bound ``register``.

    One plugin's mistakes never cost the others: a malformed name or a bad object
    is reported (naming the plugin and its distribution) and skipped; a name two
    plugins register is left out, reported as a warning, and an error naming both
    only when it is used. ``extras``: the keywords ``register`` takes besides
    ``description``, each with a check of its value (or None).

    Built once per process and set of plugins: registering or unregistering a
    plugin (tests do) builds it anew.
    """
    plugins.load_plugins()
    # the plugin objects themselves (a module compares by identity), not their id(): a
    # plugin registered anew under the same name can sit at the address a freed one had
    key = tuple((name, plugin, plugins.plugin_info(name).distribution)
                for name, plugin in plugins.pm.list_name_plugin())
    cached = _CACHE.get(hook_name)
    if cached is not None and cached[0] == key:
        return cached[1]
    registry = _collect(hook_name, kind, dotted, validate, extras or {})
    _CACHE[hook_name] = (key, registry)
    return registry


def _collect(hook_name: str, kind: str, dotted: bool, validate, extras: dict) -> Registry:
    entries: dict[str, Entry] = {}
    conflicts: dict[str, list[Entry]] = {}
    for impl in _implementations(hook_name):  # in registration order
        info = plugins.plugin_info(impl.plugin_name)
        mine: dict[str, Entry] = {}

        def register(name, obj, *, description=None, _info=info, _mine=mine, **extra):
            extra, problem = _renamed_keywords(hook_name, _info, extra)
            problem = (problem or _bad_registration(kind, name, obj, dotted, validate)
                       or _bad_keywords(kind, extra, extras, hook_name))
            if problem:
                _report(_info, f"{problem}; skipped (its other {kind}s load).")
                return
            entry = Entry(name, obj, _describe(obj, description), _info.name, _info.distribution,
                          _info.version, extra)
            if name in _mine:
                conflicts.setdefault(name, [_mine.pop(name)])
            if name in conflicts:
                conflicts[name].append(entry)
            else:
                _mine[name] = entry

        try:
            impl.function(register=register)
        except Exception as exc:  # a broken plugin must not take the others down
            _report(info, f"{hook_name} raised {type(exc).__name__}: {exc}; its {kind}s are skipped.")
            continue
        for name, entry in mine.items():
            if name in entries:
                conflicts[name] = [entries.pop(name), entry]
            elif name in conflicts:
                conflicts[name].append(entry)
            else:
                entries[name] = entry
    _keep_builtins(hook_name, kind, entries, conflicts)
    for name, clash in conflicts.items():
        plugins.report_once(plugins.PluginProblem(
            clash[-1].plugin, clash[-1].distribution, _conflict_message(kind, name, clash)))
    return Registry(kind, entries, conflicts)


def _implementations(hook_name: str) -> list:
    """The implementations of ``hook_name``, and of its old names still accepted
    (:func:`grpo_core.plugin.api.hook_renames`: pluggy warned when they were registered)."""
    impls = list(getattr(plugins.pm.hook, hook_name).get_hookimpls())
    for rename in api.hook_renames(hook_name):
        old = getattr(plugins.pm.hook, rename.old, None)
        impls += old.get_hookimpls() if old is not None else []
    return impls


def _renamed_keywords(hook_name: str, info, extra: dict) -> tuple[dict, str | None]:
    """``extra`` with renamed keywords under their new names, each use warned about once per plugin."""
    return api.translate(hook_name, extra, lambda message: plugins.deprecated(
        plugins.PluginProblem(info.name, info.distribution, message)))


def is_builtin(entry: Entry) -> bool:
    """Registered by grpo-core itself (a default plugin), not by an installed plugin."""
    return entry.plugin in plugins.DEFAULT_PLUGINS


def _keep_builtins(hook_name: str, kind: str, entries: dict[str, Entry], conflicts: dict[str, list[Entry]]) -> None:
    """A name of grpo's own that a plugin registers too stays grpo's: a plugin cannot
    break a run that never chose it (every run uses the default learning method). The
    plugin's entry is left out with a warning; clashes between plugins stay errors on use."""
    for name, clash in list(conflicts.items()):
        kept = next((e for e in clash if is_builtin(e)), None)
        if kept is None:
            continue
        entries[name] = kept
        del conflicts[name]
        for entry in clash:
            if not is_builtin(entry):
                plugins.report_once(plugins.PluginProblem(
                    entry.plugin, entry.distribution, builtin_clash(hook_name, kind, name, entry.plugin)))


def builtin_clash(hook_name: str, kind: str, name: str, plugin: str) -> str:
    """The warning for a plugin's entry that takes a name of grpo's own (left out)."""
    own = re.sub(r"[^a-z0-9]+", "_", plugin.split("@")[0].rsplit(".", 1)[-1].lower()).strip("_") or "acme"
    suggestion = (f"{own.replace('_', '-')}-{name}" if kind == "command"
                  else f"{own}.{name.rsplit('.', 1)[-1]}")
    return (f"{hook_name}: '{name}' is one of grpo's own {kind}s; the plugin's {kind} is left out and grpo's "
            f"built-in '{name}' is kept (give it a name of its own, e.g. '{suggestion}').")


def _bad_registration(kind: str, name: Any, obj: Any, dotted: bool, validate) -> str | None:
    if kind == "command":
        if not isinstance(name, str) or not COMMAND_RE.match(name):
            return (f"command name {name!r} is not lower-case letters and digits, words joined by '-' "
                    f"(e.g. 'acme-lengths')")
    elif not isinstance(name, str) or not (DOTTED_NAME_RE if dotted else NAME_RE).match(name):
        form = "<namespace>.<name>" if dotted else "<name> or <namespace>.<name>"
        return f"{kind} name {name!r} is not of the form {form} in lower case (e.g. 'acme.brevity')"
    if validate is not None:
        try:
            validate(name, obj)
        except RegistryError as exc:
            return str(exc).rstrip(".")
    return None


def _bad_keywords(kind: str, given: dict, allowed: dict, hook_name: str = "") -> str | None:
    """A misspelt keyword (``descripton=``) is a mistake to report, not an extra to keep;
    a known one with a bad value (``range=(1, 0)``) too; one renamed and since removed
    names its new name."""
    for key, value in given.items():
        gone = api.removed_keyword(hook_name, key) if key not in allowed else None
        if gone is not None:
            return gone.refusal()
        if key not in allowed:
            close = difflib.get_close_matches(key, ["description", *allowed], n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            known = ", ".join(["description", *allowed])
            article = "an" if kind[0] in "aeiou" else "a"
            return f"register() of {article} {kind} got an unknown keyword '{key}'{hint}; it takes: {known}"
        check = allowed[key]
        problem = check(value) if check is not None else None
        if problem:
            return f"register() keyword {key}={value!r:.60}: {problem}"
    return None


def check_range(value: Any) -> str | None:
    """``range=(low, high)``, or a callable of the bound parameters returning one."""
    if callable(value):
        return None
    if (isinstance(value, (tuple, list)) and len(value) == 2
            and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)
            and value[0] <= value[1]):
        return None
    return "give (low, high) with low <= high, or a function of the reward's parameters returning one"


def _check_bool(value: Any) -> str | None:
    return None if isinstance(value, bool) else "give True or False"


def _report(info, message: str) -> None:
    plugins.report_once(plugins.PluginProblem(info.name, info.distribution, message))


def _conflict_message(kind: str, name: str, clash: list[Entry]) -> str:
    return (f"{kind} '{name}' is registered by {' and by '.join(e.source for e in clash)}; it cannot be "
            f"used until one is uninstalled (or left out of {plugins.ENV_VAR}=<distributions>).")


def _check_reward(name: str, func: Any) -> None:
    if not callable(func):
        raise RegistryError(f"reward '{name}' is {func!r:.80}, not a callable reward function.")


def _check_loader(name: str, loader: Any) -> None:
    if not callable(loader):
        raise RegistryError(f"dataset '{name}' loader is {loader!r}, not a callable.")


def _check_prompt(name: str, text: Any) -> None:
    if not isinstance(text, str) or not text.strip():
        raise RegistryError(f"system prompt '{name}' must be non-empty text, got {text!r}.")


# the keywords each hook's ``register`` takes besides ``description``, with their checks;
# hookspecs documents each (a doc test holds the two together)
KEYWORDS: dict[str, dict] = {
    "register_rewards": {"correctness": _check_bool, "range": check_range, "reads_answers": _check_bool,
                         "group": _check_bool},
    "register_datasets": {},
    "register_system_prompts": {"answer_template": None},
    "register_probes": {"right": _check_bool},
    "register_environments": {},
    "register_advantages": {},
    "register_samplers": {},
    "register_commands": {},
}


def rewards() -> Registry:
    return collect("register_rewards", "reward", dotted=True, validate=_check_reward,
                   extras=KEYWORDS["register_rewards"])


def datasets() -> Registry:
    return collect("register_datasets", "dataset", dotted=False, validate=_check_loader)


def system_prompts() -> Registry:
    return collect("register_system_prompts", "system prompt", dotted=False, validate=_check_prompt,
                   extras=KEYWORDS["register_system_prompts"])


def _check_probe(name: str, build: Any) -> None:
    if not callable(build):
        raise RegistryError(f"probe '{name}' is {build!r:.80}, not a callable that builds a completion.")


def probes() -> Registry:
    return collect("register_probes", "probe", dotted=True, validate=_check_probe, extras=KEYWORDS["register_probes"])


def _check_environment(name: str, factory: Any) -> None:
    if not callable(factory):
        raise RegistryError(f"environment '{name}' factory is {factory!r:.80}, not a callable that returns an "
                            f"environment class.")


def environments() -> Registry:
    return collect("register_environments", "environment", dotted=False, validate=_check_environment)


def _check_method(name: str, factory: Any) -> None:
    if not callable(factory):
        raise RegistryError(f"learning method '{name}' factory is {factory!r:.80}, not a callable that returns a "
                            f"method.")


def advantages() -> Registry:
    """Learning methods (``register_advantages``): the built-ins' plain names, plugins' dotted."""
    return collect("register_advantages", "learning method", dotted=False, validate=_check_method)


def _check_sampler(name: str, factory: Any) -> None:
    if not callable(factory):
        raise RegistryError(f"prompt sampler '{name}' factory is {factory!r:.80}, not a callable that returns a "
                            f"sampler.")


def samplers() -> Registry:
    """Prompt samplers (``register_samplers``): the built-ins' plain names, plugins' dotted."""
    return collect("register_samplers", "prompt sampler", dotted=False, validate=_check_sampler)


def _check_command(name: str, setup: Any) -> None:
    if not callable(setup):
        raise RegistryError(f"command '{name}' setup is {setup!r:.80}, not a callable that takes the command's "
                            f"argparse parser.")


def commands() -> Registry:
    """``grpo`` subcommands of plugins (``register_commands``); the CLI refuses grpo's own names."""
    return collect("register_commands", "command", dotted=False, validate=_check_command)


__all__ = ["Entry", "Registry", "is_builtin", "builtin_clash", "rewards", "datasets", "system_prompts", "probes",
           "environments", "advantages", "samplers", "commands"]
