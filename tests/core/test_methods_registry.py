"""Learning methods are what was registered: grpo's own are the ones its modules add with
``@METHODS.add`` (a helper module dropped into their folder changes nothing; it once made
every built-in vanish), plugins add theirs through ``register_advantages``, and
``grpo methods list`` shows both with their parameters without importing torch or trl."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest

import grpo_core
from grpo_core.cli import main
from grpo_core.plugin import registry
from grpo_core.plugin.builtins import Builtins

BUILTINS = ["grpo", "sign", "zvp"]
PKG = Path(grpo_core.__file__).parent


def run(capsys, *argv) -> tuple[int, str, str]:
    rc = main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_the_builtins_are_registered_by_grpo_core():
    found = registry.advantages()
    assert found.names() == BUILTINS
    assert all(registry.is_builtin(found.get(name)) for name in BUILTINS)
    assert found.get("zvp").obj(alpha=0.2).alpha == 0.2


STRAY = {
    # a helper with no method in it, and one that could not even be imported
    "helpers.py": "def clip(x, low, high):\n    return max(low, min(high, x))\n",
    "broken.py": "raise RuntimeError('a half-written module')\n",
}


def test_a_helper_module_in_the_methods_folder_changes_nothing(tmp_path):
    """On a copy of grpo_core with two stray modules beside the built-in methods: the same
    three methods, no plugin problem reported, and ``grpo methods list`` works."""
    copy = tmp_path / "src" / "grpo_core"
    shutil.copytree(PKG, copy, ignore=shutil.ignore_patterns("__pycache__"))
    for name, text in STRAY.items():
        (copy / "trainer" / "methods" / name).write_text(text)
    code = ("import grpo_core, sys\n"
            "from grpo_core.plugin import plugins, registry\n"
            "from grpo_core.cli import main\n"
            "print('FROM', grpo_core.__file__)\n"
            "print('NAMES', registry.advantages().names())\n"
            "print('PROBLEMS', [str(p) for p in plugins.problems])\n"
            "sys.exit(main(['methods', 'list']))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**_env(), "PYTHONPATH": str(copy.parent)})
    assert out.returncode == 0, out.stderr
    assert f"FROM {copy / '__init__.py'}" in out.stdout  # the copy ran, not the checkout
    assert f"NAMES {BUILTINS}" in out.stdout and "PROBLEMS []" in out.stdout
    assert "helpers" not in out.stdout and "broken" not in out.stdout + out.stderr


def _env() -> dict:
    import os

    return {**os.environ, "GRPO_PLUGINS": ""}


def test_builtins_register_what_was_added_through_the_hook_named(register_plugin):
    """The mechanism any registry of this shape uses: add where defined, register the lot."""
    table = Builtins("register_advantages")

    class Triple:
        pass

    @table.add("triple", description="Three times TRL's advantage")
    def triple(k: int = 3):
        return Triple()

    assert table.names() == ["triple"]
    with pytest.raises(ValueError, match="'triple' is added twice"):
        table.add("triple", description="another")(lambda: None)
    mod = types.ModuleType("triple_plugin")
    mod.register_advantages = table.hookimpl()  # pluggy takes the hook's name from the attribute
    register_plugin(mod, name="triple_plugin")
    entry = registry.advantages().get("triple")
    assert entry.obj is triple and entry.description == "Three times TRL's advantage"
    assert entry.plugin == "triple_plugin" and not registry.is_builtin(entry)


def half_plugin():
    class Half:
        def rows(self, scored):
            from grpo_core.methods import Advantages

            return Advantages(scored.advantages / 2)

    def half(factor: float = 0.5, floor: int = 0):
        """Half of TRL's advantage."""
        return Half()

    def scaled(scale: float, *, clip: float = 1.0):
        return Half()

    mod = types.ModuleType("half_plugin")

    def register_advantages(register):
        register("acme.half", half)
        register("acme.scaled", scaled, description="TRL's advantage times scale")

    mod.register_advantages = grpo_core.hookimpl(register_advantages)
    return mod


def test_methods_list_shows_the_builtins_and_a_plugins_methods_with_their_parameters(register_plugin, capsys):
    register_plugin(half_plugin(), name="half_plugin")
    rc, out, err = run(capsys, "methods", "list")
    assert rc == 0 and err == ""
    rows = {line.split()[0]: " ".join(line.split()) for line in out.splitlines()[2:] if line.strip()}
    assert list(rows)[:5] == ["acme.half", "acme.scaled", "grpo", "sign", "zvp"]
    assert rows["acme.half"].startswith("acme.half factor: float = 0.5, floor: int = 0 - Half of TRL's advantage.")
    assert rows["acme.scaled"].startswith("acme.scaled scale (required), clip: float = 1.0 - TRL's advantage")
    assert rows["zvp"].startswith("zvp alpha: float = 0.1 grpo-core RL-ZVP")
    assert rows["grpo"].startswith("grpo - grpo-core TRL's group-relative advantage")
    rc, out, _ = run(capsys, "methods", "list", "--json")
    listed = {m["name"]: m for m in json.loads(out)}
    assert listed["acme.half"]["parameters"] == ["factor: float = 0.5", "floor: int = 0"]
    assert listed["acme.half"]["plugin"] == "half_plugin" and listed["sign"]["parameters"] == ["scale: float = 0.1"]


def test_an_unknown_method_points_to_the_command_that_lists_them():
    with pytest.raises(grpo_core.UnknownNameError) as info:
        registry.advantages().get("gpro")
    assert str(info.value) == "unknown learning method 'gpro'. Closest registered: grpo. List them with `grpo methods list`."


def test_methods_list_imports_neither_torch_nor_trl():
    code = ("import sys; from grpo_core.cli import main\n"
            "rc = main(['methods', 'list'])\n"
            "print('HEAVY', [m for m in ('torch', 'trl', 'transformers', 'datasets') if m in sys.modules], rc,"
            " file=sys.stderr)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=_env())
    assert "HEAVY [] 0" in out.stderr, out.stderr

