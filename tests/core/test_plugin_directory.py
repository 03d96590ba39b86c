"""docs/plugins.yaml, the plugin directory: every plugin of this repository is listed;
each listed one installs, implements the hooks listed and passes the reward contract
suite; every entry is well formed; docs/plugins.md's table is written from it."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import re
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

import pytest

from grpo_core import hookspecs

ROOT = Path(__file__).resolve().parents[2]
HOOKS = {name for name, fn in vars(hookspecs).items() if inspect.isfunction(fn) and hasattr(fn, "grpo_spec")}


def _script(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


DIRECTORY = _script("plugin_directory")
CONTRACT = _script("wheel_contract")  # served(): a contract entry's test server, as the wheel job starts it
ENTRIES = DIRECTORY.load()
LOCAL = [e for e in ENTRIES if DIRECTORY.is_local(e)]


def local_plugins(root: Path = ROOT) -> dict[str, tuple[str, dict[str, str]]]:
    """The plugins of this repository: {distribution: (folder, {entry point: module})} for
    every packages/* and examples/* whose pyproject declares [project.entry-points.grpo]."""
    out = {}
    for pyproject in sorted([*root.glob("packages/*/pyproject.toml"), *root.glob("examples/*/pyproject.toml")]):
        text = pyproject.read_text()  # (tomllib is 3.11+; these two tables are plain)
        section = re.search(r"^\[project\.entry-points\.grpo\]\n((?:[^\[\n].*\n?)*)", text, re.M)
        points = dict(re.findall(r'^\s*([\w.-]+)\s*=\s*"([^"]+)"', section.group(1), re.M)) if section else {}
        if points:
            name = re.search(r'^name\s*=\s*"([^"]+)"', text, re.M).group(1)
            out[name] = (pyproject.parent.relative_to(root).as_posix(), points)
    return out


def problems(entries: list[dict], found: dict[str, tuple[str, dict]]) -> list[str]:
    """What is wrong with the list against the repository's plugins."""
    listed = {e["name"]: e for e in entries}
    out = [f"{folder} declares a grpo entry point ({', '.join(f'{k} = {v}' for k, v in points.items())}) but "
           f"docs/plugins.yaml does not list {name}: add its entry (name, adds, hooks, install, source: {folder})"
           for name, (folder, points) in found.items() if name not in listed]
    for name, entry in listed.items():
        if DIRECTORY.is_local(entry) and entry["source"] != found.get(name, (None,))[0]:
            out.append(f"docs/plugins.yaml lists {name} with source {entry['source']}, but no folder there declares "
                       f"a grpo entry point for it")
    return out


def test_every_plugin_of_this_repository_is_listed():
    found = local_plugins()
    assert {"grpo-rewards-math", "grpo-reasoning-gym", "grpo-acme"} <= set(found)  # the scan reads them
    assert problems(ENTRIES, found) == []


def test_a_plugin_missing_from_the_list_is_named():
    without_acme = [e for e in ENTRIES if e["name"] != "grpo-acme"]
    assert problems(without_acme, local_plugins()) == [
        "examples/grpo-acme declares a grpo entry point (acme = grpo_acme) but docs/plugins.yaml does not list "
        "grpo-acme: add its entry (name, adds, hooks, install, source: examples/grpo-acme)"]


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["name"] for e in ENTRIES])
def test_every_entry_is_well_formed(entry):
    assert set(entry) <= {"name", "adds", "hooks", "install", "source", "contract"}, entry["name"]
    assert {"name", "adds", "hooks", "install", "source"} <= set(entry), entry
    assert re.fullmatch(r"grpo-[a-z0-9]+(-[a-z0-9]+)*", entry["name"]), entry["name"]
    assert entry["hooks"] and set(entry["hooks"]) <= HOOKS, f"{entry['name']}: hooks {entry['hooks']}"
    assert entry["install"].startswith("pip install ") and entry["adds"].strip()
    if DIRECTORY.is_local(entry):
        assert entry["install"] == f"pip install ./{entry['source']}"
    else:
        assert entry["source"].startswith("https://")


@pytest.mark.parametrize("entry", LOCAL, ids=[e["name"] for e in LOCAL])
def test_a_listed_plugin_installs_with_its_entry_point_and_implements_the_hooks_listed(entry):
    try:
        dist = distribution(entry["name"])
    except PackageNotFoundError:
        pytest.fail(f"{entry['name']} is listed but not installed: {entry['install']} (scripts/setup.sh installs "
                    f"every plugin of this repository)")
    points = {ep.name: ep.value for ep in dist.entry_points if ep.group == "grpo"}
    assert points == local_plugins()[entry["name"]][1]
    module = importlib.import_module(next(iter(points.values())))
    implemented = {name for name, obj in vars(module).items() if hasattr(obj, "grpo_impl")}
    assert implemented == set(entry["hooks"]), entry["name"]


@pytest.mark.parametrize("entry", LOCAL, ids=[e["name"] for e in LOCAL])
def test_a_listed_plugin_passes_the_reward_contract_suite(entry, register_plugin):
    from grpo_core.contract import check_reward
    from grpo_core.plugin import registry

    module = importlib.import_module(next(iter(local_plugins()[entry["name"]][1].values())))
    register_plugin(module)
    names = [n for n, e in registry.rewards().entries.items() if e.plugin == module.__name__]
    assert bool(names) == ("register_rewards" in entry["hooks"])
    failed = {}
    for name in names:
        how = (entry.get("contract") or {}).get(name, {})
        with CONTRACT.served(how.get("server")) as served:  # e.g. a judge reward's test double judge
            bad = [str(r) for r in check_reward(name, {**served, **(how.get("params") or {})}, how.get("columns"))
                   if not r.ok]
        if bad:
            failed[name] = bad
    assert failed == {}


def test_the_page_is_written_from_the_list():
    text = DIRECTORY.PAGE.read_text()
    assert DIRECTORY.page(text, ENTRIES) == text, "run python scripts/plugin_directory.py"
    for entry in ENTRIES:
        assert f"[{entry['name']}](" in text and f"`{entry['install']}`" in text
