"""Entry-point discovery, GRPO_PLUGINS filtering and isolation of broken plugins,
exercised through real (fake-installed) distributions in a subprocess."""

from __future__ import annotations

import json

import pytest

from .fakedist import REWARD_MODULE, make_dist, run_grpo


@pytest.fixture
def site(tmp_path):
    site = tmp_path / "site"
    make_dist(site, "acme-good", {"acme": "acme_good"},
              {"acme_good": REWARD_MODULE.format(func="good", name="acme.good", desc="good one")})
    make_dist(site, "beta-plugin", {"beta": "beta_plugin"},
              {"beta_plugin": REWARD_MODULE.format(func="b", name="beta.thing", desc="beta one")})
    return site


def _names(stdout: str) -> list[str]:
    """The plugins' names (the core's own model.classifier is always there)."""
    return [r["name"] for r in json.loads(stdout) if r["plugin"] != "grpo_core.data.builtins"]


def test_installed_plugins_are_found_by_entry_point(site):
    out = run_grpo(["rewards", "list", "--json"], site, plugins="acme-good,beta-plugin")
    assert out.returncode == 0, out.stderr
    assert _names(out.stdout) == ["acme.good", "beta.thing"]
    plugins = json.loads(run_grpo(["plugins"], site, plugins="acme-good,beta-plugin").stdout)
    acme = next(p for p in plugins if p["name"] == "acme")
    assert acme["distribution"] == "acme-good"
    assert acme["version"] == "1.0"
    assert acme["hooks"] == ["register_rewards"]


def test_grpo_plugins_restricts_loading_to_named_distributions(site):
    out = run_grpo(["rewards", "list", "--json"], site, plugins="beta-plugin")
    assert _names(out.stdout) == ["beta.thing"]
    # underscores and case are normalised like pip does
    out = run_grpo(["rewards", "list", "--json"], site, plugins="Acme_Good")
    assert _names(out.stdout) == ["acme.good"]
    # empty means none
    out = run_grpo(["rewards", "list", "--json"], site, plugins="")
    assert _names(out.stdout) == []


def test_grpo_plugins_naming_an_uninstalled_distribution_warns(site):
    out = run_grpo(["rewards", "list", "--json"], site, plugins="acme-good,acme-typo")
    assert _names(out.stdout) == ["acme.good"]
    assert "GRPO_PLUGINS names 'acme-typo'" in out.stderr
    assert "acme-good" in out.stderr  # lists what is installed


def test_broken_plugin_is_reported_and_others_still_load(site):
    make_dist(site, "acme-broken", {"broken": "acme_broken"},
              {"acme_broken": "import not_a_real_module_xyz\n"})
    out = run_grpo(["rewards", "list", "--json"], site, plugins="acme-good,acme-broken,beta-plugin")
    assert out.returncode == 0
    assert _names(out.stdout) == ["acme.good", "beta.thing"]
    assert "grpo plugin 'broken' (distribution acme-broken)" in out.stderr
    assert "ModuleNotFoundError" in out.stderr and "not_a_real_module_xyz" in out.stderr
    # `grpo plugins` exits non-zero so scripts notice
    assert run_grpo(["plugins"], site, plugins="acme-good,acme-broken").returncode == 1


def test_same_entry_point_name_in_two_distributions_loads_both_and_says_so(site):
    # pluggy alone would load one of them and say nothing.
    make_dist(site, "acme-clone", {"acme": "acme_clone"},
              {"acme_clone": REWARD_MODULE.format(func="c", name="clone.thing", desc="")})
    out = run_grpo(["rewards", "list", "--json"], site, plugins="acme-good,acme-clone")
    assert "entry point name 'acme' is already used by distribution acme-clone" in out.stderr
    assert "is loaded as 'acme@acme-good'" in out.stderr
    assert _names(out.stdout) == ["acme.good", "clone.thing"]


def test_a_third_party_entry_point_named_math_does_not_shadow_grpo_rewards_math(site):
    make_dist(site, "aaa-math", {"math": "aaa_math"},
              {"aaa_math": REWARD_MODULE.format(func="m", name="aaa.thing", desc="")})
    out = run_grpo(["rewards", "list", "--json"], site, plugins="grpo-rewards-math,aaa-math")
    assert out.returncode == 0, out.stderr
    names = _names(out.stdout)
    assert "math.correctness" in names and "aaa.thing" in names
    assert "entry point name 'math' is already used by distribution grpo-rewards-math" in out.stderr


def test_same_reward_name_from_two_distributions_is_an_error_only_where_used(site):
    make_dist(site, "acme-rival", {"rival": "acme_rival"},
              {"acme_rival": REWARD_MODULE.format(func="r", name="acme.good", desc="")})
    plugins = "acme-good,acme-rival,beta-plugin"
    out = run_grpo(["rewards", "list", "--json"], site, plugins=plugins)
    assert out.returncode == 0, out.stderr
    assert _names(out.stdout) == ["beta.thing"]  # the others stay usable
    warning = ("reward 'acme.good' is registered by plugin 'acme' (distribution acme-good) "
               "and by plugin 'rival' (distribution acme-rival)")
    assert warning in out.stderr
    used = run_grpo(["rewards", "show", "acme.good"], site, plugins=plugins)
    assert used.returncode == 2 and warning in used.stderr
    assert run_grpo(["rewards", "show", "beta.thing"], site, plugins=plugins).returncode == 0


@pytest.mark.parametrize(
    "registration, problem",
    [('register("Bad Name", f)', "reward name 'Bad Name' is not of the form <namespace>.<name>"),
     ('register("bad.thing", 42)', "reward 'bad.thing' is 42, not a callable reward function"),
     ('register(None, f)', "reward name None is not of the form")],
)
def test_a_bad_registration_is_reported_by_plugin_and_distribution_and_skipped(site, registration, problem):
    make_dist(site, "acme-bad", {"bad": "acme_bad"}, {"acme_bad": f"""
        from grpo_core import hookimpl

        def f(completions, **kwargs):
            return [0.0] * len(completions)

        @hookimpl
        def register_rewards(register):
            {registration}
            register("bad.fine", f)
    """})
    out = run_grpo(["rewards", "list", "--json"], site, plugins="acme-good,acme-bad")
    assert out.returncode == 0, out.stderr
    assert _names(out.stdout) == ["acme.good", "bad.fine"]  # its other rewards load too
    assert "grpo plugin 'bad' (distribution acme-bad)" in out.stderr and problem in out.stderr


def test_misspelt_hook_fails_loudly_without_taking_others_down(site):
    make_dist(site, "acme-typo", {"typo": "acme_typo"}, {"acme_typo": """
        from grpo_core import hookimpl

        @hookimpl
        def register_reward(register):
            register("typo.x", lambda completions, **kw: [0.0] * len(completions))
    """})
    out = run_grpo(["rewards", "list", "--json"], site, plugins="acme-good,acme-typo")
    assert _names(out.stdout) == ["acme.good"]
    assert "unknown hook 'register_reward' (did you mean 'register_rewards'?)" in out.stderr


def test_core_alone_lists_only_its_reward_model_and_says_how_to_get_more():
    out = run_grpo(["rewards", "list"], plugins="")
    assert out.returncode == 0
    rows = [line.split()[0] for line in out.stdout.splitlines()[2:] if line.strip()]
    assert rows[0] == "model.classifier" and "grpo-core" in out.stdout
    assert "No rewards registered" in out.stdout and "pip install" in out.stdout


def test_listing_and_help_import_neither_torch_nor_trl(tmp_path):
    """Every installed plugin loaded (ours, the example's command) and one adding a command
    of its own: listing, `grpo --help` and a plugin command's --help stay light."""
    import os
    import subprocess
    import sys

    site = tmp_path / "site"
    make_dist(site, "acme-cmd", {"cmd": "acme_cmd"}, {"acme_cmd": COMMAND_MODULE})
    code = (
        "import sys; from grpo_core.cli import main\n"
        "for argv in (['rewards', 'list'], ['datasets', 'list'], ['plugins'], ['acme-echo', 'hi']):\n"
        "    assert main(argv) == 0, argv\n"
        "for argv in (['--help'], ['acme-echo', '--help'], []):\n"
        "    try:\n        main(argv)\n    except SystemExit:\n        pass\n"
        "heavy = [m for m in ('torch', 'trl', 'transformers', 'datasets') if m in sys.modules]\n"
        "print('HEAVY', heavy, file=sys.stderr)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "GRPO_PLUGINS"}  # every installed plugin
    env["PYTHONPATH"] = str(site) + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert "acme-echo" in out.stdout and "say a word" in out.stdout, out.stdout  # --help listed it
    assert "HEAVY []" in out.stderr, out.stderr


COMMAND_MODULE = """
from grpo_core import hookimpl

def setup(parser):
    parser.add_argument("word")
    parser.add_argument("--times", type=int, default=1)
    parser.set_defaults(func=run)

def run(args):
    print(" ".join([args.word] * args.times))
    if args.word == "crash":
        raise ValueError("no crashing words")
    return 3 if args.word == "fail" else 0

@hookimpl
def register_commands(register):
    register("acme-echo", setup, description="say a word")
"""


def test_a_plugin_command_is_listed_in_help_and_plugins_and_runs(site):
    make_dist(site, "acme-cmd", {"cmd": "acme_cmd"}, {"acme_cmd": COMMAND_MODULE})
    plugins = "acme-good,acme-cmd"
    help_text = run_grpo(["--help"], site, plugins=plugins).stdout
    assert "acme-echo" in help_text and "say a word [plugin 'cmd', acme-cmd]" in " ".join(help_text.split())
    out = run_grpo(["acme-echo", "hi", "--times", "3"], site, plugins=plugins)
    assert (out.returncode, out.stdout, out.stderr) == (0, "hi hi hi\n", "")
    assert run_grpo(["acme-echo", "fail"], site, plugins=plugins).returncode == 3  # its own exit code
    listed = {p["name"]: p for p in json.loads(run_grpo(["plugins"], site, plugins=plugins).stdout)}
    assert listed["cmd"]["commands"] == ["acme-echo"] and "register_commands" in listed["cmd"]["hooks"]
    assert "commands" not in listed["acme"]
    # its arguments are its own: argparse's errors name them
    bad = run_grpo(["acme-echo", "hi", "--times", "x"], site, plugins=plugins)
    assert bad.returncode == 2 and "argument --times: invalid int value: 'x'" in bad.stderr
    # a command that raises: an error naming the plugin and where, no traceback
    crash = run_grpo(["acme-echo", "crash"], site, plugins=plugins)
    assert crash.returncode == 2 and "Traceback" not in crash.stderr
    assert ("command 'acme-echo' of plugin 'cmd' (distribution acme-cmd) failed: ValueError: no crashing words "
            "(at ") in crash.stderr and "acme_cmd.py:" in crash.stderr


BROKEN_COMMANDS = {
    "raises": """
        from grpo_core import hookimpl

        @hookimpl
        def register_commands(register):
            raise RuntimeError("boom")
    """,
    "collides": """
        from grpo_core import hookimpl

        @hookimpl
        def register_commands(register):
            register("score", lambda parser: parser.set_defaults(func=lambda args: 7), description="mine")
    """,
}


@pytest.mark.parametrize("kind, problem", [
    ("raises", "grpo plugin 'bad' (distribution acme-bad): register_commands raised RuntimeError: boom; "
               "its commands are skipped."),
    ("collides", "grpo plugin 'bad' (distribution acme-bad): register_commands: 'score' is one of grpo's own "
                 "commands; the plugin's command is left out"),
])
def test_a_broken_command_plugin_is_named_once_and_grpo_still_works(site, kind, problem):
    make_dist(site, "acme-bad", {"bad": "acme_bad"}, {"acme_bad": BROKEN_COMMANDS[kind]})
    make_dist(site, "acme-cmd", {"cmd": "acme_cmd"}, {"acme_cmd": COMMAND_MODULE})
    plugins = "acme-bad,acme-cmd,acme-good"
    shown = run_grpo(["--help"], site, plugins=plugins)
    assert shown.returncode == 0 and "acme-echo" in shown.stdout
    assert shown.stderr.count(problem) == 1, shown.stderr
    listed = run_grpo(["plugins"], site, plugins=plugins)
    assert listed.stderr.count(problem) == 1 and listed.returncode == 1  # a problem: scripts notice
    assert run_grpo(["acme-echo", "hi"], site, plugins=plugins).stdout == "hi\n"
    # grpo's own `score` is grpo's (its parser, not the plugin's)
    score = run_grpo(["score", "--help"], site, plugins=plugins)
    assert score.returncode == 0 and "--rewards" in score.stdout


def test_a_command_whose_setup_raises_fails_alone_naming_its_plugin(site):
    make_dist(site, "acme-bad", {"bad": "acme_bad"}, {"acme_bad": """
        from grpo_core import hookimpl

        def setup(parser):
            raise ImportError("needs pandas")

        @hookimpl
        def register_commands(register):
            register("acme-table", setup, description="a table")
    """})
    make_dist(site, "acme-cmd", {"cmd": "acme_cmd"}, {"acme_cmd": COMMAND_MODULE})
    plugins = "acme-bad,acme-cmd"
    out = run_grpo(["acme-table", "x", "--y"], site, plugins=plugins)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert ("command 'acme-table' of plugin 'bad' (distribution acme-bad): setting up failed: ImportError: "
            "needs pandas") in out.stderr
    assert "acme-table" in run_grpo(["--help"], site, plugins=plugins).stdout  # listed: its setup is not run
    assert run_grpo(["acme-echo", "hi"], site, plugins=plugins).returncode == 0


@pytest.mark.parametrize("registration, problem", [
    ('register("Acme_Echo", setup)', "command name 'Acme_Echo' is not lower-case letters and digits"),
    ('register("acme-x", 42)', "command 'acme-x' setup is 42, not a callable"),
])
def test_a_bad_command_registration_is_reported_and_skipped(site, registration, problem):
    make_dist(site, "acme-bad", {"bad": "acme_bad"}, {"acme_bad": f"""
        from grpo_core import hookimpl

        def setup(parser):
            parser.set_defaults(func=lambda args: 0)

        @hookimpl
        def register_commands(register):
            {registration}
            register("acme-fine", setup)
    """})
    out = run_grpo(["--help"], site, plugins="acme-bad")
    assert problem in out.stderr and "acme-fine" in out.stdout
    assert run_grpo(["acme-fine"], site, plugins="acme-bad").returncode == 0


def test_a_plugin_registered_again_under_the_same_name_is_seen_afresh(register_plugin, monkeypatch):
    """Tests (and long-lived processes) unregister a plugin and register another object
    under the same name: the rewards listed are the new one's, also when the new module
    sits where the old one was freed (CPython reuses the address: a cache keyed on id()
    served the old rewards, a flaky 'unknown reward' in tests/check). Every object here
    gets one id, as if each landed at the same address."""
    import types

    import grpo_core
    from grpo_core.plugin import plugins, registry

    monkeypatch.setattr(registry, "id", lambda obj: 1, raising=False)
    for k in range(3):
        mod = types.ModuleType("acme_again")
        mod.register_rewards = grpo_core.hookimpl(lambda register, k=k: register(f"acme.r{k}", lambda c, **kw: [0.0]))
        register_plugin(mod, name="acme_again")
        assert f"acme.r{k}" in registry.rewards() and f"acme.r{k - 1}" not in registry.rewards(), k
        plugins.pm.unregister(name="acme_again")
