"""register_environments goes through the same registry as rewards: mistakes are
reported by plugin and skipped, names are listed and shown by `grpo envs`, and
listing loads neither torch nor trl."""

from __future__ import annotations

import json
import subprocess
import sys
import types

import pytest

import grpo_core
from grpo_core.plugin import plugins


class Dice:
    """Roll a die; 1.0 on a six."""

    def reset(self, **row) -> None:
        self.last = 0

    def roll(self, sides: int = 6) -> str:
        """Roll the die.

        Args:
            sides: How many sides it has.
        """
        self.last = sides
        return str(sides)

    def get_reward(self) -> float:
        return float(self.last == 6)


class NoReset:
    def act(self) -> str:
        return "x"


def plugin(registrations):
    mod = types.ModuleType("envs_registry_plugin")

    @grpo_core.hookimpl
    def register_environments(register):
        for args, kwargs in registrations:
            register(*args, **kwargs)

    mod.register_environments = register_environments
    return mod


@pytest.mark.parametrize("args, kwargs, problem", [
    (("acme.dice", Dice), {"descripton": "typo"},
     "register() of an environment got an unknown keyword 'descripton' (did you mean 'description'?)"),
    (("acme.dice", "Dice"), {}, "environment 'acme.dice' factory is 'Dice', not a callable"),
    (("Acme Dice", Dice), {}, "environment name 'Acme Dice' is not of the form <name> or <namespace>.<name>"),
])
def test_a_bad_registration_is_reported_and_skipped_the_others_load(register_plugin, args, kwargs, problem):
    register_plugin(plugin([(args, kwargs), (("acme.coin", Dice), {"description": "a coin"})]))
    with pytest.warns(grpo_core.PluginWarning) as caught:
        names = [e.name for e in grpo_core.list_environments()]
    assert names == ["acme.coin"]
    assert any(problem in str(w.message) for w in caught)


def test_a_class_is_its_own_factory_and_its_shape_is_read_as_trl_reads_it(register_plugin):
    register_plugin(plugin([(("acme.dice", Dice), {}), (("acme.broken", NoReset), {})]))
    env = grpo_core.get_environment("acme.dice")
    assert env.tools == ("roll",) and env.has_reward and env.columns == ()
    assert isinstance(env.factory(), Dice)  # what TRL's environment_factory calls
    with pytest.raises(grpo_core.GrpoError, match=r"environment 'acme.broken': NoReset has no reset\(\*\*row\) method"):
        grpo_core.get_environment("acme.broken")


def test_envs_list_and_show(register_plugin, capsys):
    from grpo_core.cli import main

    register_plugin(plugin([(("acme.dice", Dice), {})]))
    assert main(["envs", "list", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == [
        {"name": "acme.dice", "plugin": "envs_registry_plugin", "distribution": None, "version": None,
         "description": "Roll a die; 1.0 on a six."}]
    assert main(["envs", "show", "acme.dice"]) == 0
    out = capsys.readouterr().out
    assert "  roll(sides: int = 6) -> str: Roll the die." in out
    assert "Reward: get_reward(), logged as rewards/acme.dice/mean" in out
    assert main(["envs", "show", "acme.die"]) == 2
    assert "unknown environment 'acme.die'. Closest registered: acme.dice." in capsys.readouterr().err


def test_with_no_environment_plugin_the_list_says_how_to_get_one(plugin_manager, capsys):
    from grpo_core.cli import main

    plugins.load_plugins()
    assert main(["envs", "list"]) == 0
    assert "No environments registered. Install one, e.g. pip install ./packages/grpo-rewards-code" in capsys.readouterr().out


def test_envs_list_imports_neither_torch_nor_trl():
    code = (
        "import sys; from grpo_core.cli import main\n"
        "main(['envs', 'list'])\n"
        "heavy = [m for m in ('torch', 'trl', 'transformers', 'datasets') if m in sys.modules]\n"
        "print('HEAVY', heavy, file=sys.stderr)\n"
    )
    env = {k: v for k, v in __import__("os").environ.items() if k != "GRPO_PLUGINS"}  # every installed plugin
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert "HEAVY []" in out.stderr, out.stderr
    assert "python" in out.stdout and "guess_number" in out.stdout  # grpo-rewards-code's, found by entry point
