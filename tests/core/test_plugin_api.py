"""The versioned plugin API: a plugin declares the API it was written for
(``GRPO_PLUGIN_API``); one for an API this grpo-core does not provide is refused by name
with both versions and the fix, one for an older compatible API loads (with one warning
per renamed name it uses, naming the replacement), one declaring nothing loads as before.

The CLI cases run real (fake-installed) distributions in a subprocess; the deprecation
cases give the API a history in process (API 1.0 is the first versioned one: nothing has
been renamed yet), through the same entry-point loading."""

from __future__ import annotations

import inspect
import json
import re
import warnings
from pathlib import Path

import pytest

from grpo_core import hookspecs
from grpo_core.plugin import api

from .fakedist import REWARD_MODULE, make_dist, run_grpo

ROOT = Path(__file__).resolve().parents[2]


def _declaring(api_value: str | None, ns: str) -> str:
    head = "" if api_value is None else f"GRPO_PLUGIN_API = {api_value}\n"
    return head + REWARD_MODULE.format(func="f", name=f"{ns}.thing", desc=f"{ns} thing")


@pytest.fixture
def site(tmp_path):
    site = tmp_path / "site"
    make_dist(site, "acme-none", {"none": "acme_none"}, {"acme_none": _declaring(None, "none")})
    make_dist(site, "acme-now", {"now": "acme_now"}, {"acme_now": _declaring('"1.0"', "now")})
    make_dist(site, "acme-two", {"two": "acme_two"}, {"acme_two": _declaring('"2.0"', "two")})
    make_dist(site, "acme-next", {"next": "acme_next"}, {"acme_next": _declaring('"1.7"', "next")})
    make_dist(site, "acme-float", {"float": "acme_float"}, {"acme_float": _declaring("1.0", "float")})
    return site


ALL = "acme-none,acme-now,acme-two,acme-next,acme-float"


def _rewards(stdout: str) -> list[str]:
    return [r["name"] for r in json.loads(stdout) if r["plugin"] != "grpo_core.data.builtins"]


def test_an_incompatible_api_is_refused_by_name_and_the_others_load(site):
    out = run_grpo(["rewards", "list", "--json"], site, plugins=ALL)
    assert out.returncode == 0, out.stderr
    assert _rewards(out.stdout) == ["none.thing", "now.thing"]
    lines = [line for line in out.stderr.splitlines() if line.startswith("warning: ")]
    assert len(lines) == 3, out.stderr
    assert lines[0] == (
        "warning: grpo plugin 'float' (distribution acme-float): GRPO_PLUGIN_API = 1.0 is not an API version: "
        "write it as text, MAJOR.MINOR (e.g. GRPO_PLUGIN_API = \"1.0\"); not loaded (the other plugins are "
        "loaded).")
    assert lines[1] == (
        "warning: grpo plugin 'next' (distribution acme-next): written for grpo plugin API 1.7, newer than this "
        "grpo-core's: this grpo-core (0.1.0) provides grpo plugin API 1.0 and loads plugins written for 1.0 to "
        "1.0; not loaded. Fix: upgrade grpo-core (pip install -U grpo-core) to a release that provides API 1.7, "
        "or install a release of the plugin written for API 1.0 (the other plugins are loaded).")
    assert lines[2] == (
        "warning: grpo plugin 'two' (distribution acme-two): written for grpo plugin API 2.0, a different major "
        "version: this grpo-core (0.1.0) provides grpo plugin API 1.0 and loads plugins written for 1.0 to 1.0; "
        "not loaded. Fix: install a release of the plugin written for API 1.x, or a grpo-core that provides "
        "API 2.x (the other plugins are loaded).")


def test_grpo_plugins_shows_each_plugins_api_and_the_refused_ones(site):
    out = run_grpo(["plugins"], site, plugins=ALL)
    assert out.returncode == 1  # a plugin was refused: scripts notice
    shown = {p["name"]: p for p in json.loads(out.stdout)}
    assert sorted(shown) == ["float", "next", "none", "now", "two"]
    assert (shown["none"]["api"], shown["now"]["api"]) == (None, "1.0")
    assert "refused" not in shown["none"] and shown["now"]["hooks"] == ["register_rewards"]
    assert (shown["two"]["api"], shown["two"]["hooks"]) == ("2.0", [])
    assert shown["two"]["refused"].startswith("written for grpo plugin API 2.0, a different major version")
    assert shown["next"]["api"] == "1.7" and "upgrade grpo-core" in shown["next"]["refused"]
    assert shown["float"]["api"] == "1.0" and "is not an API version" in shown["float"]["refused"]
    with_core = json.loads(run_grpo(["plugins", "--all"], site, plugins="acme-now").stdout)
    assert {p["name"]: p["api"] for p in with_core if p["distribution"] == "grpo-core"} == {
        "grpo_core.data.builtins": "1.0", "grpo_core.trainer.methods": "1.0",
        "grpo_core.trainer.samplers": "1.0"}


def test_plugins_declaring_nothing_or_this_api_load_silently(site):
    out = run_grpo(["rewards", "list", "--json"], site, plugins="acme-none,acme-now")
    assert (out.returncode, out.stderr) == (0, "")
    assert _rewards(out.stdout) == ["none.thing", "now.thing"]


@pytest.mark.parametrize("declared, verdict", [
    (None, None), ("1.0", None),
    ("1.1", "newer than this grpo-core's"), ("1.10", "newer than this grpo-core's"),
    ("2.0", "a different major version"), ("0.9", "a different major version"),
    (1.0, "is not an API version"), ("1.0.0", "is not an API version"), ("1", "is not an API version"),
    ("01.0", "is not an API version"), (" 1.0", "is not an API version"), ("v1.0", "is not an API version"),
])
def test_which_declarations_load_on_api_1_0(declared, verdict):
    problem = api.check_declared(declared)
    assert problem is None if verdict is None else verdict in problem


# ---------------------------------------------------------------- the deprecation policy, in process

RENAMED_KEYWORD = """
GRPO_PLUGIN_API = {declared}
from grpo_core import hookimpl

def right(completions, **kwargs):
    return [1.0 for _ in completions]

@hookimpl
def register_rewards(register):
    register("{ns}.right", right, is_correctness=True)
    register("{ns}.other", right, is_correctness=False, description="second use, same plugin")
"""

RENAMED_HOOK = """
GRPO_PLUGIN_API = "1.0"
from grpo_core import hookimpl

def right(completions, **kwargs):
    return [1.0 for _ in completions]

@hookimpl
def register_reward_functions(register):
    register("{ns}.right", right)
"""


@pytest.fixture
def history(monkeypatch):
    """API 1.1, which renamed register_rewards' keyword ``is_correctness`` to ``correctness``
    and the hook ``register_reward_functions`` to ``register_rewards``."""
    monkeypatch.setattr(api, "PLUGIN_API", "1.1")
    monkeypatch.setattr(api, "RENAMED", (
        api.Renamed("register_rewards", "is_correctness", "correctness", "1.1"),
        api.Renamed("register_rewards", "register_reward_functions", "register_rewards", "1.1", keyword=False)))


@pytest.fixture
def load(tmp_path, monkeypatch):
    """``load(dist, source)``: install a one-module plugin and load it by its entry point, in process."""
    from grpo_core.plugin import plugins

    site = tmp_path / "site"
    counter = iter(range(100))

    def load(source: str):
        ns = f"dep{next(counter)}{abs(hash(str(tmp_path))) % 10**6}"
        make_dist(site, f"acme-{ns}", {ns: f"acme_{ns}"}, {f"acme_{ns}": source.replace("{ns}", ns)})
        monkeypatch.syspath_prepend(str(site))
        monkeypatch.setenv("GRPO_PLUGINS", f"acme-{ns}")
        plugins.reset()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            from grpo_core.plugin import registry

            found = registry.rewards()
            registry.rewards()  # a second use warns no more
        return ns, found, caught

    yield load
    plugins.reset()
    for name in ("register_reward_functions",):  # a renamed hook's spec, added for the test's history
        plugins.pm.hook.__dict__.pop(name, None)


def _deprecations(caught) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, api.PluginDeprecationWarning)]


def test_an_older_compatible_api_using_a_renamed_keyword_loads_with_one_warning_naming_the_new_name(
        history, load):
    from grpo_core.plugin import plugins

    ns, found, caught = load(RENAMED_KEYWORD.replace("{declared}", '"1.0"'))
    assert found.get(f"{ns}.right").extra == {"correctness": True}  # read as the new name
    assert found.get(f"{ns}.other").extra == {"correctness": False}
    assert _deprecations(caught) == [
        f"grpo plugin '{ns}' (distribution acme-{ns}): register_rewards's register() keyword 'is_correctness' was "
        f"renamed 'correctness' in grpo plugin API 1.1; it still works in API 1.1 (this grpo-core provides 1.1) "
        f"and is refused from API 1.2 on: write correctness=... instead (and GRPO_PLUGIN_API = \"1.1\" or "
        f"later). See docs/plugin-api.md."]
    assert plugins.problems == []  # a deprecation is not a problem: `grpo plugins` exits 0


def test_a_renamed_hook_is_called_as_the_new_one_with_pluggys_warn_on_impl(history, load):
    ns, found, caught = load(RENAMED_HOOK)
    assert f"{ns}.right" in found.names()  # its implementation was called as register_rewards
    deprecations = _deprecations(caught)
    assert len(deprecations) == 1, deprecations
    assert deprecations[0].startswith(f"grpo plugin '{ns}' (distribution acme-{ns}): hook 'register_reward_functions' "
                                      f"was renamed 'register_rewards' in grpo plugin API 1.1")
    assert "write def register_rewards(register) instead" in deprecations[0]


def test_after_one_minor_release_a_renamed_keyword_is_refused_with_its_new_name(history, load, monkeypatch):
    from grpo_core.plugin import plugins

    monkeypatch.setattr(api, "PLUGIN_API", "1.2")
    monkeypatch.setattr(api, "OLDEST", "1.1")
    ns, found, caught = load(RENAMED_KEYWORD.replace("{declared}", '"1.1"'))
    assert f"{ns}.right" not in found and _deprecations(caught) == []
    assert ("register() keyword 'is_correctness' was renamed 'correctness' in grpo plugin API 1.1 and is refused "
            "from API 1.2 on (this grpo-core provides 1.2): write correctness=...; skipped") in str(plugins.problems[0])
    # and a plugin written for 1.0, before the rename, is refused whole, naming what was removed
    ns, found, _ = load(RENAMED_KEYWORD.replace("{declared}", '"1.0"'))
    assert f"{ns}.right" not in found
    refusal = str(plugins.problems[0])
    assert "written for grpo plugin API 1.0, older than the oldest still loaded" in refusal
    assert "(removed since 1.0: register_rewards's register() keyword 'is_correctness' (now 'correctness'); " \
           "hook 'register_reward_functions' (now 'register_rewards'))" in refusal
    assert refusal.endswith("set GRPO_PLUGIN_API = \"1.2\" (the other plugins are loaded).")


def test_both_the_old_and_the_new_name_is_a_mistake(history, load):
    from grpo_core.plugin import plugins

    ns, found, _ = load(RENAMED_KEYWORD.replace("{declared}", '"1.0"').replace(
        "is_correctness=True)", "is_correctness=True, correctness=True)"))
    assert f"{ns}.right" not in found and f"{ns}.other" in found
    assert "register() got both 'is_correctness' and 'correctness'" in str(plugins.problems[0])


# ---------------------------------------------------------------- the table and its page

SPECS = {name: fn for name, fn in vars(hookspecs).items() if inspect.isfunction(fn) and hasattr(fn, "grpo_spec")}
PAGE = (ROOT / "docs" / "plugin-api.md").read_text()


def test_every_hookspec_has_a_version_and_a_stability_and_nothing_else_does():
    assert sorted(h.name for h in api.HOOKS) == sorted(SPECS)
    for hook in api.HOOKS:
        assert hook.stability in ("stable", "provisional") and api.parse(hook.since) <= api.parse(api.PLUGIN_API)


@pytest.mark.parametrize("hook", api.HOOKS, ids=[h.name for h in api.HOOKS])
def test_the_register_call_is_the_hookspecs_own_and_the_page_lists_it(hook):
    first = SPECS[hook.name].__doc__.split(":param", 1)[0]
    assert hook.register in " ".join(first.split()), f"{hook.name}'s docstring says another register(...)"
    row = f"| `{hook.name}(register)` | `{hook.register}` | {hook.since} | {hook.stability} |"
    assert row in PAGE, f"docs/plugin-api.md lacks the row {row}"


def test_the_page_states_this_api_version_and_the_policy():
    assert f"`{api.core_requirement()}`" in PAGE  # what a plugin for this API depends on
    assert re.search(rf"^The plugin API is at version \*\*{re.escape(api.PLUGIN_API)}\*\*", PAGE, re.M)
    for phrase in ("GRPO_PLUGIN_API", "one minor release", "PluginDeprecationWarning", "provisional"):
        assert phrase in PAGE


def test_the_history_is_consistent():
    assert api.parse(api.OLDEST) <= api.parse(api.PLUGIN_API)
    for rename in api.RENAMED:  # a removed name moved OLDEST past the version that renamed it
        if api.parse(rename.removed) <= api.parse(api.PLUGIN_API):
            assert api.parse(api.OLDEST) >= api.parse(rename.since), rename
