"""The plugin API: its version, what each version holds, and its deprecations.

A plugin may say which API it was written for with a module attribute next to its hooks,
``GRPO_PLUGIN_API = "1.0"`` (the module its ``grpo`` entry point names). The rules
(docs/plugin-api.md):

- an API version is ``MAJOR.MINOR``. A minor release only adds (a hook, a ``register``
  keyword) or renames with the old name still working; a major one may remove or change;
- a plugin written for ``M.m`` loads when this grpo-core provides ``M.n`` with ``n >= m``
  and ``M.m`` is not older than :data:`OLDEST`; otherwise it is refused, by name, with
  both versions and the fix, and the other plugins load;
- a renamed hook or ``register`` keyword (:data:`RENAMED`) keeps working for one minor
  release with a warning, once per plugin, that names the replacement; the release after
  refuses it (:data:`OLDEST` moves past the version that renamed it);
- a plugin that declares nothing loads as if written for this API.

Which hooks exist in which version, and how stable each is: :data:`HOOKS`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from grpo_core.base.errors import PluginWarning
from grpo_core.base.version import __version__
from grpo_core.hookspecs import hookspec

PLUGIN_API = "1.0"  # the plugin API this grpo-core provides
OLDEST = "1.0"  # the oldest API whose plugins still load (raised when a renamed name is removed)
ATTRIBUTE = "GRPO_PLUGIN_API"  # the module attribute a plugin declares its API with
DOC = "docs/plugin-api.md"
VERSION_RE = re.compile(r"^(0|[1-9][0-9]{0,3})\.(0|[1-9][0-9]{0,3})$")


class PluginDeprecationWarning(PluginWarning):
    """A plugin uses a hook or ``register`` keyword that was renamed; it works until the next
    minor API release. (Not a DeprecationWarning: Python hides those outside ``__main__``,
    and the user who installed the plugin is the one to tell.) Plugin authors can make it
    an error in their own tests: ``-W error::grpo_core.plugin.api.PluginDeprecationWarning``."""


@dataclass(frozen=True)
class Hook:
    """One hook of the API: since which version it exists, how stable it is, and the
    ``register`` call a plugin makes in it."""

    name: str
    since: str
    stability: str  # "stable": changes only in a major release; "provisional": may change in a minor one
    register: str


HOOKS: tuple[Hook, ...] = (
    Hook("register_rewards", "1.0", "stable",
         "register(name, func, *, description=None, correctness=False, range=None, reads_answers=None, "
         "group=False)"),
    Hook("register_datasets", "1.0", "stable", "register(name, loader, *, description=None)"),
    Hook("register_system_prompts", "1.0", "stable",
         "register(name, text, *, description=None, answer_template=None)"),
    Hook("register_environments", "1.0", "stable", "register(name, factory, *, description=None)"),
    Hook("register_commands", "1.0", "stable", "register(name, setup, *, description=None)"),
    Hook("register_advantages", "1.0", "provisional", "register(name, factory, *, description=None)"),
    Hook("register_probes", "1.0", "provisional", "register(name, build, *, description=None, right=False)"),
    Hook("register_samplers", "1.0", "provisional", "register(name, factory, *, description=None)"),
)


@dataclass(frozen=True)
class Renamed:
    """A hook (``keyword=None``) or a ``register`` keyword of ``hook`` renamed in API ``since``:
    the old name works, with a warning, until API ``removed`` (one minor release later)."""

    hook: str
    old: str
    new: str
    since: str
    keyword: bool = True

    @property
    def removed(self) -> str:
        major, minor = parse(self.since)
        return f"{major}.{minor + 1}"

    def what(self) -> str:
        return f"{self.hook}'s register() keyword '{self.old}'" if self.keyword else f"hook '{self.old}'"

    def warning(self) -> str:
        use = f"{self.new}=..." if self.keyword else f"def {self.new}(register)"
        return (f"{self.what()} was renamed '{self.new}' in grpo plugin API {self.since}; it still works in "
                f"API {self.since} (this grpo-core provides {PLUGIN_API}) and is refused from API "
                f"{self.removed} on: write {use} instead (and GRPO_PLUGIN_API = \"{self.since}\" or later). "
                f"See {DOC}.")


    def refusal(self) -> str:
        """Why the old keyword is refused once the rename's grace release is past."""
        return (f"register() keyword '{self.old}' was renamed '{self.new}' in grpo plugin API {self.since} and is "
                f"refused from API {self.removed} on (this grpo-core provides {PLUGIN_API}): write {self.new}=...")


# every rename of the API's life, newest last; none yet (API 1.0 is the first versioned one)
RENAMED: tuple[Renamed, ...] = ()


def parse(version: str) -> tuple[int, int]:
    match = VERSION_RE.match(version)
    if match is None:
        raise ValueError(f"{version!r} is not an API version MAJOR.MINOR")
    return int(match[1]), int(match[2])


def check_declared(declared: Any) -> str | None:
    """None when a plugin declaring ``declared`` (its ``GRPO_PLUGIN_API``, or None) loads here,
    else why not and the fix (the caller names the plugin and its distribution)."""
    if declared is None:
        return None
    if not isinstance(declared, str) or VERSION_RE.match(declared) is None:
        return (f"{ATTRIBUTE} = {declared!r:.40} is not an API version: write it as text, MAJOR.MINOR "
                f"(e.g. {ATTRIBUTE} = \"{PLUGIN_API}\"); not loaded")
    wanted, have, oldest = parse(declared), parse(PLUGIN_API), parse(OLDEST)
    provides = (f"this grpo-core ({__version__}) provides grpo plugin API {PLUGIN_API} and loads plugins "
                f"written for {OLDEST} to {PLUGIN_API}")
    if wanted[0] != have[0]:
        return (f"written for grpo plugin API {declared}, a different major version: {provides}; not loaded. "
                f"Fix: install a release of the plugin written for API {have[0]}.x, or a grpo-core that "
                f"provides API {wanted[0]}.x")
    if wanted > have:
        return (f"written for grpo plugin API {declared}, newer than this grpo-core's: {provides}; not loaded. "
                f"Fix: upgrade grpo-core (pip install -U grpo-core) to a release that provides API {declared}, "
                f"or install a release of the plugin written for API {PLUGIN_API}")
    if wanted < oldest:
        gone = [r for r in RENAMED if parse(r.removed) <= have and parse(r.since) > wanted]
        names = "; ".join(f"{r.what()} (now '{r.new}')" for r in gone) or "see the changelog"
        return (f"written for grpo plugin API {declared}, older than the oldest still loaded: {provides} "
                f"(removed since {declared}: {names}); not loaded. Fix: update the plugin to API {PLUGIN_API} "
                f"({DOC} lists what changed) and set {ATTRIBUTE} = \"{PLUGIN_API}\"")
    return None


def keyword_renames(hook: str) -> dict[str, Renamed]:
    """The ``register`` keywords of ``hook`` renamed and still accepted: old -> rename."""
    return {r.old: r for r in RENAMED if r.keyword and r.hook == hook and parse(r.removed) > parse(PLUGIN_API)}


def translate(hook: str, extra: dict, warn: Callable[[str], None]) -> tuple[dict, str | None]:
    """``register``'s keywords ``extra`` with renamed ones under their new names (``warn`` called
    with each one's warning), and a problem when a keyword is given under both names."""
    renames = keyword_renames(hook)
    if not renames.keys() & extra.keys():
        return extra, None
    out = dict(extra)
    for old, rename in renames.items():
        if old not in out:
            continue
        if rename.new in out:
            return extra, (f"register() got both '{old}' and '{rename.new}', its new name since grpo plugin API "
                           f"{rename.since}: keep {rename.new}=")
        out[rename.new] = out.pop(old)
        warn(rename.warning())
    return out, None


def removed_keyword(hook: str, keyword: str) -> Renamed | None:
    """The rename that took ``keyword`` out of ``hook``'s ``register``, if one did."""
    return next((r for r in RENAMED if r.keyword and r.hook == hook and r.old == keyword
                 and parse(r.removed) <= parse(PLUGIN_API)), None)


def hook_renames(hook: str | None = None) -> list[Renamed]:
    """The old names of ``hook`` (of every hook: None) still accepted; their implementations
    are called as ``hook``'s, with pluggy's ``warn_on_impl`` warning."""
    return [r for r in RENAMED if not r.keyword and (hook is None or r.new == hook)
            and parse(r.removed) > parse(PLUGIN_API)]


def renamed_specs(known: set[str]) -> type | None:
    """Hook specifications for the renamed hooks' old names not in ``known``, each warning
    (pluggy's ``warn_on_impl``) when a plugin implements it; None when there are none."""
    specs = {}
    for rename in hook_renames():
        if rename.old in known:
            continue

        def spec(register):  # the shape every hook has
            """A renamed hook's old name (see grpo_core.plugin.api.RENAMED)."""

        spec.__name__ = rename.old
        specs[rename.old] = hookspec(warn_on_impl=PluginDeprecationWarning(rename.warning()))(spec)
    return type("RenamedHooks", (), {k: staticmethod(v) for k, v in specs.items()}) if specs else None


def core_requirement() -> str:
    """The grpo-core requirement a plugin written for this API declares: this release's
    minor on, below the next major (the API's major changes only with grpo-core's)."""
    major, minor = (int(p) for p in __version__.split(".")[:2])
    return f"grpo-core>={major}.{minor},<{major + 1}"


def hook_table() -> list[dict]:
    """Every hook with its version and stability (``grpo doctor --json``, the docs)."""
    return [{"hook": h.name, "since": h.since, "stability": h.stability, "register": h.register} for h in HOOKS]


__all__ = ["PLUGIN_API", "OLDEST", "ATTRIBUTE", "HOOKS", "RENAMED", "Hook", "Renamed", "PluginDeprecationWarning",
           "check_declared", "keyword_renames", "translate", "removed_keyword", "hook_renames", "renamed_specs", "core_requirement", "parse"]
