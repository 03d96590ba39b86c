"""grpo view reads a run through the run folder's room (grpo_core.runfiles), never through
the trainer that wrote it: in a process where the trainer's modules, run/ and the training
stack cannot be imported, every page of the hand-made run (tests/view/conftest.py) is
served with what a user reads there, filters included.

The plugin manager imports the registries' built-ins (``grpo_core.trainer.methods``, and
``grpo_core.trainer.samplers`` where present) for every command, ``grpo --help`` included:
those stay importable; every other module of ``trainer/`` is refused."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from .conftest import make_run

CHILD = r'''
import importlib.abc, json, sys, types
from argparse import Namespace

REGISTRIES = ("grpo_core.trainer.methods", "grpo_core.trainer.samplers")  # the plugin manager's built-ins
FORBIDDEN = ("grpo_core.trainer", "grpo_core.run", "torch", "trl", "transformers", "accelerate", "peft")


def forbidden(name):
    if name == "grpo_core.trainer" or any(name == r or name.startswith(r + ".") for r in REGISTRIES):
        return False  # the package (parent of the registries) and the registries' built-ins
    return any(name == f or name.startswith(f + ".") for f in FORBIDDEN)


class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if forbidden(name):
            raise ImportError(f"{name} is made unimportable by the test")
        return None


sys.meta_path.insert(0, Refuse())

import grpo_core
from grpo_core.plugin import plugins


@grpo_core.hookimpl
def register_rewards(register):
    register("toy.right", lambda completions, answer, **kw: [0.0] * len(completions), correctness=True)
    register("toy.format", lambda completions, **kw: [0.0] * len(completions))


plugins.load_plugins()
plugins.pm.register(types.SimpleNamespace(register_rewards=register_rewards), name="toy")

import urllib.request
from grpo_core.commands.view import build
from grpo_core.serve.server import Background

pages = {}
with Background(build(Namespace(runs=[sys.argv[1]], token=None))) as url:
    for path in ["/", "/run/0", "/run/0/config", "/run/0/rollouts?suspect=on", "/run/0/step/3/group/0",
                 "/compare?a=0&b=0"]:
        with urllib.request.urlopen(url + path, timeout=60) as response:
            pages[path] = [response.status, response.read().decode()]
loaded = sorted(m for m in sys.modules if forbidden(m) or m.startswith("grpo_core.trainer"))
print(json.dumps({"pages": pages, "loaded": loaded}))
'''


def test_grpo_view_serves_a_run_with_the_trainer_unimportable(tmp_path):
    run = make_run(tmp_path / "run")
    env = {**os.environ, "GRPO_PLUGINS": ""}
    out = subprocess.run([sys.executable, "-c", CHILD, str(run)], capture_output=True, text=True, timeout=240,
                         env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    found = json.loads(out.stdout.strip().splitlines()[-1])
    pages = found["pages"]
    assert {path: status for path, (status, _) in pages.items()} == {path: 200 for path in pages}
    # what was imported of the trainer: only the package and the registries' built-ins
    assert all(m == "grpo_core.trainer" or m.startswith(("grpo_core.trainer.methods", "grpo_core.trainer.samplers"))
               for m in found["loaded"]), found["loaded"]
    run_page = pages["/run/0"][1]
    # progress.json read (finished), metrics.jsonl's token figures: 10 + 20 + 30 generated, half teaching
    assert "finished" in run_page
    assert "50% of 60 generated completion tokens trained nothing (their advantage was 0); 30 taught." in run_page
    # the rollout log read, and the suspect filter found the correctness reward: step 1 group 1, step 3 group 0
    suspects = pages["/run/0/rollouts?suspect=on"][1]
    assert 'id="step1-round0-group1"' in suspects and 'id="step3-round0-group0"' in suspects
    assert suspects.count('<tr class="match">') == 2
    assert pages["/run/0/step/3/group/0"][1].count("&lt;answer&gt;7&lt;/answer&gt;") == 1
    assert "toy.right:2.0" in pages["/run/0/config"][1]
