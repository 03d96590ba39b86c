"""Plugin discovery and loading: entry points in group ``grpo``, lazily, once.

``GRPO_PLUGINS`` (comma-separated distribution names; empty = none) restricts which
installed distributions load. The core's own built-ins are default plugins and
always load. A plugin that fails to import, clashes on its entry-point name,
implements a hook that does not exist, or declares a plugin API this grpo-core does
not provide (``GRPO_PLUGIN_API``, :mod:`grpo_core.plugin.api`) is reported by name and
skipped; the others still load. A plugin that uses a renamed hook loads, with one
warning naming the new name.
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib
import os
import re
import threading
import warnings
from dataclasses import dataclass

import pluggy

from grpo_core import hookspecs
from grpo_core.base.errors import PluginWarning
from grpo_core.base.version import __version__
from grpo_core.plugin import api

ENTRY_POINT_GROUP = "grpo"
ENV_VAR = "GRPO_PLUGINS"
DEFAULT_PLUGINS = ("grpo_core.data.builtins", "grpo_core.trainer.methods", "grpo_core.trainer.samplers")
OWN_DISTRIBUTIONS = ("grpo-rewards-math", "grpo-rewards-format", "grpo-datasets", "grpo-rewards-code")  # loaded first

pm = pluggy.PluginManager("grpo")
pm.add_hookspecs(hookspecs)


@dataclass(frozen=True)
class PluginInfo:
    name: str
    distribution: str | None
    version: str | None
    module: str
    api: str | None = None  # the plugin API it declares (GRPO_PLUGIN_API); None: it declares none


@dataclass(frozen=True)
class PluginProblem:
    plugin: str
    distribution: str | None
    message: str

    def __str__(self) -> str:
        dist = f" (distribution {self.distribution})" if self.distribution else ""
        return f"grpo plugin '{self.plugin}'{dist}: {self.message}"


_lock = threading.RLock()
_loaded = False
_info: dict[str, PluginInfo] = {}
problems: list[PluginProblem] = []
refused: dict[str, tuple[PluginInfo, str]] = {}  # not loaded for their declared API: name -> (info, why)
deprecations: list[PluginProblem] = []  # renamed names plugins use: warned about, not problems


def _normalize(dist_name: str) -> str:
    return re.sub(r"[-_.]+", "-", dist_name).lower()


def allowed_distributions() -> set[str] | None:
    """The distributions ``GRPO_PLUGINS`` allows, or ``None`` when it is unset (all)."""
    raw = os.environ.get(ENV_VAR)
    if raw is None:
        return None
    return {_normalize(n) for n in raw.split(",") if n.strip()}


def report(problem: PluginProblem) -> None:
    problems.append(problem)
    warnings.warn(str(problem), PluginWarning, stacklevel=3)


def report_once(problem: PluginProblem) -> None:
    """:func:`report`, unless the same problem was reported already."""
    if str(problem) not in {str(p) for p in problems}:
        report(problem)


def deprecated(problem: PluginProblem) -> None:
    """Warn once that a plugin uses a renamed name (it still works: not a problem that makes
    ``grpo plugins`` fail)."""
    if str(problem) not in {str(p) for p in deprecations}:
        deprecations.append(problem)
        warnings.warn(str(problem), api.PluginDeprecationWarning, stacklevel=3)


def is_installed(distribution: str) -> bool:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import distribution as dist

    try:
        dist(distribution)
        return True
    except PackageNotFoundError:
        return False


def load_plugins() -> None:
    """Load default plugins and installed entry points, once (thread-safe)."""
    global _loaded
    if _loaded:
        return
    with _lock:
        if _loaded:
            return
        renamed = api.renamed_specs({n for n in dir(pm.hook) if not n.startswith("_")})
        if renamed is not None:
            pm.add_hookspecs(renamed)
        for module_name in DEFAULT_PLUGINS:
            if pm.get_plugin(module_name) is None:
                module = importlib.import_module(module_name)
                pm.register(module, name=module_name)
                _info[module_name] = PluginInfo(module_name, "grpo-core", _core_version(), module_name,
                                                api.PLUGIN_API)
        _load_entry_points()
        _check_pending()
        _loaded = True


def _core_version() -> str | None:
    return __version__


def _load_entry_points() -> None:
    from importlib.metadata import entry_points

    allowed = allowed_distributions()
    seen_dists: set[str] = set()
    # our own distributions first: their entry-point names are never taken by another
    ours = set(OWN_DISTRIBUTIONS)
    eps = sorted(entry_points(group=ENTRY_POINT_GROUP),
                 key=lambda ep: (_normalize(ep.dist.name) not in ours if ep.dist else True, ep.name,
                                 ep.dist.name if ep.dist else ""))
    for ep in eps:
        dist = ep.dist.name if ep.dist is not None else None
        version = ep.dist.version if ep.dist is not None else None
        if dist:
            seen_dists.add(_normalize(dist))
        if allowed is not None and (dist is None or _normalize(dist) not in allowed):
            continue
        name = _entry_name(ep, dist)
        if name is None:
            continue
        info = PluginInfo(name, dist, version, ep.value)
        declared = _register(ep, info)
        if declared is not False:
            _info[name] = dataclasses.replace(info, api=declared)
    if allowed:
        for missing in sorted(allowed - seen_dists):
            report(
                PluginProblem(
                    missing,
                    missing,
                    f"{ENV_VAR} names '{missing}', but no installed distribution of that name "
                    f"declares [project.entry-points.grpo]. Installed grpo plugin distributions: "
                    f"{', '.join(sorted(seen_dists)) or 'none'}.",
                )
            )


def _entry_name(ep, dist: str | None) -> str | None:
    """The name ``ep`` registers under: its own, or ``NAME@DIST`` when another distribution
    took it (both load, said once); None when this distribution is already loaded."""
    existing = _info.get(ep.name)
    if existing is None:
        return ep.name
    if existing.distribution == dist:
        return None
    name = f"{ep.name}@{dist}"
    report(PluginProblem(
        name, dist,
        f"entry point name '{ep.name}' is already used by distribution {existing.distribution} ({existing.module}); "
        f"this one ({ep.value}) is loaded as '{name}'. Names both register cannot be used; rename the entry point "
        f"in one of the two packages' [project.entry-points.grpo]."))
    return name


def _register(ep, info: PluginInfo):
    """Import and register one plugin: the API it declares (None: none), or False when it is
    not loaded (a failure, reported and isolated, or an API this grpo-core does not provide)."""
    dist = info.distribution
    try:
        module = ep.load()
        if pm.is_registered(module):
            return False
        declared = getattr(module, api.ATTRIBUTE, None)
        refusal = api.check_declared(declared)
        if refusal is not None:
            refused[info.name] = (dataclasses.replace(info, api=str(declared)), refusal)
            report(PluginProblem(ep.name, dist, f"{refusal} (the other plugins are loaded)."))
            return False
        with warnings.catch_warnings(record=True) as caught:  # pluggy's warn_on_impl: a renamed hook
            warnings.simplefilter("always")
            pm.register(module, name=info.name)
    except Exception as exc:  # any failure of third-party code is isolated
        report(PluginProblem(
            ep.name, dist,
            f"failed to load '{ep.value}': {type(exc).__name__}: {exc}. The other plugins are loaded; fix or "
            f"uninstall this one, or leave it out of {ENV_VAR}."))
        return False
    for warning in caught:
        if issubclass(warning.category, api.PluginDeprecationWarning):
            deprecated(PluginProblem(info.name, dist, str(warning.message)))
        else:
            warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
    return declared


def _check_pending() -> None:
    """Like ``pm.check_pending()``, but a plugin with a misspelt hook is reported and
    unregistered instead of taking every plugin down."""
    known = [name for name in dir(hookspecs) if name.startswith("register_")]
    while True:
        try:
            pm.check_pending()
            return
        except pluggy.PluginValidationError as exc:
            plugin = exc.plugin
            name = pm.get_name(plugin) or repr(plugin)
            unknown = [
                hook
                for hook in dir(pm.hook)
                if not hook.startswith("_")
                and getattr(pm.hook, hook).spec is None
                and any(i.plugin is plugin for i in getattr(pm.hook, hook).get_hookimpls())
            ]
            hints = []
            for hook in unknown:
                close = difflib.get_close_matches(hook, known, n=1)
                hints.append(f"'{hook}'" + (f" (did you mean '{close[0]}'?)" if close else ""))
            info = _info.pop(name, None)
            pm.unregister(plugin)
            report(
                PluginProblem(
                    name,
                    info.distribution if info else None,
                    f"implements unknown hook {', '.join(hints)}; known hooks: "
                    f"{', '.join(known)}. The plugin was not loaded.",
                )
            )


def plugin_info(name: str) -> PluginInfo:
    """What is known about a registered plugin (distribution and version where installed)."""
    info = _info.get(name)
    if info is not None:
        return info
    plugin = pm.get_plugin(name)
    module = getattr(plugin, "__name__", repr(plugin))
    return PluginInfo(name, None, None, module)


def loaded_plugins() -> list[dict]:
    """Loaded plugins with distribution, version and implemented hooks (for ``grpo plugins``)."""
    load_plugins()
    out = []
    for name, plugin in pm.list_name_plugin():
        info = plugin_info(name)
        hooks = sorted(
            h.name for h in pm.get_hookcallers(plugin) or [] if not h.name.startswith("_")
        )
        out.append(
            {
                "name": name,
                "distribution": info.distribution,
                "version": info.version,
                "module": info.module,
                "api": info.api,
                "hooks": hooks,
            }
        )
    for info, why in refused.values():  # installed, not loaded: what they declare and why
        out.append({"name": info.name, "distribution": info.distribution, "version": info.version,
                    "module": info.module, "api": info.api, "hooks": [], "refused": why})
    return sorted(out, key=lambda p: (p["distribution"] != "grpo-core", p["name"]))


def reset() -> None:
    """Forget loaded entry-point plugins so the next use loads again (tests)."""
    global _loaded
    with _lock:
        for name, plugin in list(pm.list_name_plugin()):
            pm.unregister(plugin, name=name)
        _info.clear()
        problems.clear()
        refused.clear()
        deprecations.clear()
        _loaded = False
