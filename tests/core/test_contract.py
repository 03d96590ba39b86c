"""The reward contract suite catches the mistakes it promises to catch."""

from __future__ import annotations

import pytest

from grpo_core import text_reward
from grpo_core.contract import RewardContract, check_reward


def good(completions, **kwargs):
    return [float(len(str(c)) % 7) for c in completions]


def wrong_length(completions, **kwargs):
    return [0.0]


def strings(completions, **kwargs):
    return ["1.0" for _ in completions]


def fragile(completions, **kwargs):
    return [float(str(c).strip()[0] == "4") for c in completions]  # IndexError on ""


def nan_reward(completions, **kwargs):
    return [float("nan") for _ in completions]


def needs_answer(completions, answer, **kwargs):
    return [1.0 if str(c).strip() == a else 0.0 for c, a in zip(completions, answer)]


def failures(func):
    return {r.name: r.message for r in check_reward(func) if not r.ok}


def test_good_reward_passes_every_check():
    assert failures(good) == {}
    assert failures(needs_answer) == {}  # required column filled with a synthetic value


def test_wrong_length_is_caught():
    assert failures(wrong_length)["plain completions"] == "returned 1 values for 2 completions"


def test_non_float_values_are_caught():
    assert failures(strings)["plain completions"] == "value #0 is str '1.0', expected float or None"


def test_crash_on_hostile_text_is_caught():
    msg = failures(fragile)["hostile text"]
    assert msg.startswith("raised IndexError")


def test_nan_is_caught():
    assert "expected a finite float or None" in failures(nan_reward)["plain completions"]


def test_lambda_is_not_picklable():
    assert "picklable" in failures(lambda completions, **kw: [0.0] * len(completions))


class TestContractBaseClass(RewardContract):
    reward = staticmethod(good)


def test_base_class_fails_for_a_bad_reward():
    class Bad(RewardContract):
        reward = staticmethod(wrong_length)

    with pytest.raises(AssertionError, match="returned 1 values for 2 completions"):
        Bad().test_plain_completions()


def slow(completions, **kwargs):
    import time

    time.sleep(0.2)
    return [0.0] * len(completions)


def test_a_contract_class_sets_the_hostile_batchs_time_limit():
    class Hurried(RewardContract):
        reward = staticmethod(slow)
        max_seconds = 0.1

    with pytest.raises(AssertionError, match=r"took 0\.\ds for 22 hostile completions \(limit 0\.1s\)"):
        Hurried().test_hostile_text()

    class Patient(RewardContract):  # the default, 30 s
        reward = staticmethod(slow)

    Patient().test_hostile_text()


async def async_length(completions, **kwargs):
    return [float(len(str(c)) % 7) for c in completions]


async def async_wrong_length(completions, **kwargs):
    return [0.0]


def hides_a_coroutine(completions, **kwargs):  # a sync wrapper TRL would never await
    return async_length(completions, **kwargs)


def test_async_reward_is_awaited_and_passes_every_check():
    assert failures(async_length) == {}


def test_async_reward_is_checked_on_its_awaited_values():
    assert failures(async_wrong_length)["plain completions"] == "returned 1 values for 2 completions"


def test_async_reward_is_checked_inside_a_running_event_loop():
    import asyncio

    async def in_a_loop():  # e.g. a notebook, or an async test
        return failures(async_length)

    assert asyncio.run(in_a_loop()) == {}


def test_a_coroutine_from_a_sync_function_is_caught():
    msg = failures(hides_a_coroutine)["plain completions"]
    assert msg.startswith("'hides_a_coroutine' returned a coroutine, but neither it nor its __call__")
    assert "Make the reward itself `async def`" in msg


@text_reward
async def async_text_length(completions, **kwargs):
    return [float(len(c)) for c in completions]


def test_text_reward_keeps_an_async_reward_async():
    import asyncio
    import inspect

    assert inspect.iscoroutinefunction(async_text_length)  # so TRL awaits it
    conversational = [[{"role": "assistant", "content": "abc"}]]
    assert asyncio.run(async_text_length(conversational)) == [3.0]
    assert failures(async_text_length) == {}


class TestAsyncContract(RewardContract):
    reward = staticmethod(async_length)


FAKE_PLUGIN = """
from grpo_core import hookimpl, text_reward

@text_reward
def brevity(completions, max_chars: int = 10, **kwargs):
    return [1.0 - min(len(c) / max_chars, 1.0) for c in completions]

@hookimpl
def register_rewards(register):
    register("fakeacme.brevity", brevity)
"""


def _run_contract(contract: type[RewardContract]) -> None:
    for name in dir(contract):
        if name.startswith("test_"):
            getattr(contract(), name)()


@pytest.fixture
def fake_acme(tmp_path, monkeypatch, plugin_manager):
    """grpo-fake-acme installed (a dist-info with its entry point) and allowed to load."""
    import importlib
    import sys

    from .fakedist import make_dist

    make_dist(tmp_path, "grpo-fake-acme", {"fakeacme": "grpo_fakeacme"}, {"grpo_fakeacme": FAKE_PLUGIN})
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("GRPO_PLUGINS", "grpo-fake-acme")
    try:
        yield importlib.import_module("grpo_fakeacme")
    finally:
        sys.modules.pop("grpo_fakeacme", None)


def test_contract_passes_for_an_installed_plugin_loaded_by_entry_point(fake_acme, plugin_manager):
    from grpo_core.plugin import plugins

    class TestInstalled(RewardContract):  # what the guide and `grpo plugin new` write
        reward = "fakeacme.brevity"
        plugin = fake_acme

    _run_contract(TestInstalled)  # pluggy refused the module under a second name before
    assert plugin_manager.get_name(fake_acme) == "fakeacme"  # the entry point's registration is kept
    assert plugins.plugin_info("fakeacme").distribution == "grpo-fake-acme"


def test_contract_registers_a_plugin_that_is_not_loaded_and_unregisters_it(fake_acme, monkeypatch,
                                                                          plugin_manager):
    monkeypatch.setenv("GRPO_PLUGINS", "")  # installed but not loaded: the suite registers it

    class TestNotLoaded(RewardContract):
        reward = "fakeacme.brevity"
        plugin = fake_acme

    _run_contract(TestNotLoaded)
    assert not plugin_manager.is_registered(fake_acme)


@pytest.mark.parametrize("grpo_plugins", [None, ""], ids=["every-installed-plugin-loads", "none-loads"])
def test_the_example_plugins_own_tests_pass_as_its_author_runs_them(grpo_plugins):
    """examples/grpo-acme/tests, outside this suite's GRPO_PLUGINS="": with the plugin
    loaded by its entry point, and with no plugin loaded (the suite registers it)."""
    import os
    import subprocess
    import sys
    from importlib.metadata import PackageNotFoundError, distribution
    from pathlib import Path

    try:
        distribution("grpo-acme")
    except PackageNotFoundError:
        pytest.skip("grpo-acme is not installed (scripts/setup.sh installs it)")
    root = Path(__file__).resolve().parents[2]
    env = {k: v for k, v in os.environ.items() if k != "GRPO_PLUGINS"}
    if grpo_plugins is not None:
        env["GRPO_PLUGINS"] = grpo_plugins
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "examples/grpo-acme/tests"], cwd=root, env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stdout[-3000:]
    assert "10 passed" in out.stdout  # 9 contract checks and the value test


# ---------------------------------------------------------------- grpo rewards check as a CI gate


def sized(completions, n: int = 3, **kwargs):
    if n < 0:
        raise ValueError(f"n must be at least 0, got {n}")
    return [float(min(len(str(c)), n)) for c in completions]


@pytest.fixture
def checked(register_plugin):
    import types

    from grpo_core import hookimpl

    mod = types.ModuleType("gate_plugin")
    mod.register_rewards = hookimpl(lambda register: (register("gate.good", good),
                                                      register("gate.short", wrong_length),
                                                      register("gate.sized", sized)))
    register_plugin(mod, name="gate_plugin")


@pytest.mark.parametrize("argv, code, ok, passed, failed", [
    (["gate.good"], 0, True, 9, 0),
    (["gate.short"], 1, False, 3, 6),  # named, empty batch and picklable (one completion) pass
    (["gate.sized", "--n", "-1"], 1, False, 1, 8),  # a value it rejects when called: only "has a name" passes
])
def test_rewards_check_json_report_and_exit_code(checked, tmp_path, capsys, argv, code, ok, passed, failed):
    import json

    from grpo_core.cli import main

    path = tmp_path / "reports" / "contract.json"  # its folder is made
    assert main(["rewards", "check", *argv, "--json", str(path)]) == code
    report = json.loads(path.read_text())
    assert (report["ok"], report["exit_code"], report["passed"], report["failed"]) == (ok, code, passed, failed)
    assert len(report["checks"]) == 9 and report["error"] is None
    assert capsys.readouterr().out.splitlines()[-1] == f"{passed} passed, {failed} failed"
    # --json -: the JSON alone on stdout, the table on stderr
    assert main(["rewards", "check", *argv, "--json", "-"]) == code
    out = capsys.readouterr()
    assert json.loads(out.out) == report and f"{passed} passed, {failed} failed" in out.err


@pytest.mark.parametrize("argv, message", [
    (["gate.nope"], "unknown reward 'gate.nope'. Closest registered: gate.good"),
    (["gate.sized", "--size", "3"], "reward 'gate.sized' has no parameter 'size'; its parameters are: n=3."),
    (["gate.sized", "--n", "many"], "reward 'gate.sized' parameter 'n' expects int, got str 'many'"),
])
def test_rewards_check_exits_2_on_bad_input_with_the_reason_in_the_report(checked, capsys, argv, message):
    import json

    from grpo_core.cli import main

    assert main(["rewards", "check", *argv, "--json", "-"]) == 2
    out = capsys.readouterr()
    report = json.loads(out.out)
    assert (report["ok"], report["exit_code"], report["checks"]) == (False, 2, [])
    assert message in report["error"] and f"Error: reward '{argv[0]}' cannot be checked: " in out.err
