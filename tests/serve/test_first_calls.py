"""First calls from many threads at once: a cold process (verl's reward worker, a
server's first requests) imports grpo's modules from several threads together."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

ALIASES = {"text": "completion_text", "errors": "GrpoError", "workers": "check_workers",
           "datafiles": "parse_split", "contract": "CheckResult", "testing": "make_tokenizer"}

# Thread A runs an alias module (made slow to start, so that the window is wide every
# time); thread B imports a name from it meanwhile. CPython waits for A to finish, then
# hands B the module object that was in sys.modules when B looked: the alias itself,
# not the module it stands for.
WINDOW = """
import importlib.abc, importlib.util, json, sys, threading, time
alias, name = "grpo_core." + sys.argv[1], sys.argv[2]
import grpo_core

class Slow(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):
        if fullname != alias:
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            sys.meta_path.insert(0, self)
        run = spec.loader.exec_module
        spec.loader.exec_module = lambda module: (time.sleep(0.3), run(module))
        return spec

sys.meta_path.insert(0, Slow())
errors = []

def second():
    while alias not in sys.modules:
        time.sleep(0.001)
    try:
        exec(f"from {alias} import {name}")
    except Exception as exc:
        errors.append(repr(exc))

threads = [threading.Thread(target=__import__, args=(alias,)), threading.Thread(target=second)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(json.dumps(errors))
"""


@pytest.mark.parametrize("alias", sorted(ALIASES))
def test_an_alias_module_imported_from_two_threads_at_once(alias):
    proc = subprocess.run([sys.executable, "-c", WINDOW, alias, ALIASES[alias]], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == []
