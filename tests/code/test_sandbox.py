"""The sandbox itself, on every backend this host has: verdicts per test, the
limits firing, the verdict channel that printed text cannot forge, the batch that
never waits on a stuck child, and the fallback chain bwrap -> unshare -> rlimits."""

from __future__ import annotations

import os
import warnings

import pytest

from grpo_rewards_code import backends, sandbox
from grpo_rewards_code.jobs import Job, Limits

from .conftest import sandbox_pids

ADD = "def add(a, b):\n    return a + b\n"


def run(backend, *jobs, **limits):
    return sandbox.run(list(jobs), Limits(**{"timeout": 2.0, **limits}), workers=2, sandbox=backend)


def test_each_test_gets_its_own_verdict(backend):
    tests = ("assert add(1, 2) == 3", "assert add(2, 2) == 5", "assert sub(1, 1) == 0", "assert add(1,")
    (r,) = run(backend, Job(ADD, tests))
    assert r.status == "ok"
    assert r.tests == ["pass", "fail", "NameError", "TestSyntaxError"]
    assert r.passed == 1 and r.cause == "failed"


def test_the_namespaces_and_filters_are_in_place(backend):
    (r,) = run(backend, Job("import os\nprint(os.getcwd(), sorted(os.environ))", ()))
    assert r.status == "ok" and r.cause == "ran"
    cwd, env = r.stdout.decode().split(" ", 1)
    names = set(eval(env)) - {"PWD"}  # our own test's output, not model text; bwrap adds PWD
    assert names == {"HOME", "LC_ALL", "PATH", "PYTHONDONTWRITEBYTECODE", "PYTHONHASHSEED", "PYTHONIOENCODING",
                     "TMPDIR"}
    assert r.layers["seccomp"] == "1" and r.layers["caps"] == "1" and r.layers["rlimits"] == "1"
    if backend == "rlimits":
        assert cwd.startswith("/") and "grpo-code-" in cwd  # a fresh directory on the host
    else:
        assert cwd == "/sandbox"


def test_an_exception_at_top_level_still_runs_the_tests(backend):
    # the function is right; the example call under it raises: code.runs says no, the tests pass
    code = ADD + "print(add(1))\n"
    (r,) = run(backend, Job(code, ("assert add(1, 2) == 3",)))
    assert (r.code_error, r.tests, r.cause) == ("TypeError", ["pass"], "passed")
    assert not r.ran_clean
    (r,) = run(backend, Job("add = None\nprint(add(1))\n", ("assert add(1, 2) == 3",)))
    assert (r.code_error, r.tests, r.cause) == ("TypeError", ["TypeError"], "error")


def test_exiting_early_or_raising_systemexit_passes_nothing(backend):
    test = ("assert add(1, 2) == 3",)  # there is no add: a test that runs fails
    jobs = [Job("import sys\nsys.exit(0)", test),  # SystemExit is caught, the tests still run
            Job("import os\nos._exit(0)", test),  # the process ends before any test
            Job("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)", test)]
    r_exit, r_os_exit, r_kill = run(backend, *jobs)
    assert (r_exit.status, r_exit.code_error, r_exit.tests) == ("ok", "SystemExit", ["NameError"])
    assert (r_os_exit.status, r_os_exit.tests, r_os_exit.cause) == ("crashed", [None], "crashed")
    if backend == "unshare":  # the harness is pid 1 of its namespace: its own SIGKILL is ignored
        assert (r_kill.status, r_kill.tests) == ("ok", ["NameError"])
    else:
        assert (r_kill.status, r_kill.tests, r_kill.detail) == ("crashed", [None], "killed by SIGKILL")
    assert r_exit.passed == r_os_exit.passed == r_kill.passed == 0


def test_printed_verdicts_are_ignored(backend):
    # a completion that prints what a passing run reports, with every token it can guess
    forge = "import sys\nfor t in ('0' * 32, ''):\n    print(t, 'test 0 pass')\n    print(t, 'done')\n" \
            "sys.stdout.flush()\nimport os\nos._exit(0)\n"
    (r,) = run(backend, Job(forge, ("assert add(1, 2) == 3",)))
    assert r.status == "crashed" and r.tests == [None] and r.passed == 0


def test_an_always_equal_object_passes_no_assert(backend):
    hack = ("class Anything:\n    def __eq__(self, other): return True\n    def __ne__(self, other): return False\n"
            "    def __bool__(self): return True\n    def __lt__(self, other): return True\n"
            "def add(a, b):\n    return Anything()\n")
    tests = ("assert add(1, 2) == 3", "assert not add(1, 2) != 3", "assert add(1, 2)",
             "assert [add(1, 2)] == [3]", "assert add(1, 2) < 4", "assert add(1, 2) == 3 and True")
    (r,) = run(backend, Job(hack, tests))
    assert r.tests == ["fail"] * 6
    # plain values compare as Python does, collections included
    ok = "from collections import Counter\ndef add(a, b):\n    return a + b\ndef c(s):\n    return Counter(s)\n"
    (r,) = run(backend, Job(ok, ("assert add(1, 2) == 3", "assert c('aab') == {'a': 2, 'b': 1}",
                                 "assert add(0.1, 0.2) != 0.3", "assert add([1], [2]) == [1, 2]",
                                 "assert add(1, 1) is not None")))
    assert r.tests == ["pass"] * 5


def test_limits_fire_and_say_which(backend):
    jobs = [Job("while True:\n    pass", ("assert True",)),
            Job("x = bytearray(10 * 1024 ** 3)", ("assert True",)),
            Job("print('x' * 10_000_000)", ()),
            Job("with open('big', 'wb') as f:\n    f.write(b'0' * (32 << 20))", ()),
            Job("def f():\n    return f()\nf()", ())]
    loop, memory, output, big_file, recursion = run(backend, *jobs, timeout=1.0)
    assert (loop.status, loop.cause, loop.detail) == ("timeout", "timeout", "killed after the 1 s wall-clock limit")
    assert (memory.status, memory.code_error, memory.cause) == ("ok", "MemoryError", "memory")
    assert (output.status, output.cause) == ("output_limit", "output_limit")
    assert len(output.stdout) == 64 << 10  # what is kept of it
    assert big_file.code_error == "OSError"  # File too large (16 MB)
    assert recursion.code_error == "RecursionError"


def test_a_batch_of_stuck_runs_completes_and_leaves_no_process():
    before = sandbox_pids()
    jobs = [Job("while True:\n    pass", ())] * 3 + [Job(ADD, ("assert add(2, 2) == 4",))]
    results = sandbox.run(jobs, Limits(timeout=1.0), workers=2)
    assert [r.status for r in results] == ["timeout", "timeout", "timeout", "ok"]
    assert results[3].tests == ["pass"]
    assert sandbox_pids() <= before


def test_runs_from_threads_at_once_do_not_mix_results():
    from concurrent.futures import ThreadPoolExecutor

    def one(k):
        return sandbox.run([Job(f"def f():\n    return {k}\n", (f"assert f() == {k}", "assert f() == -1"))],
                           Limits(), workers=1)[0].tests

    with ThreadPoolExecutor(4) as pool:
        assert list(pool.map(one, range(8))) == [["pass", "fail"]] * 8


# ------------------------------------------------------------------ choosing the backend


@pytest.fixture
def fresh_probes(monkeypatch):
    sandbox.reset()
    monkeypatch.delenv(sandbox.ENV_BACKEND, raising=False)
    yield monkeypatch
    sandbox.reset()


def test_auto_takes_the_strongest_backend_that_works(fresh_probes):
    expected = next(n for n in ("bwrap", "unshare", "rlimits") if sandbox.probe(n) is None)
    assert sandbox.backend().name == expected


def test_without_bubblewrap_auto_falls_back_to_unshare(fresh_probes):
    if sandbox.probe("unshare"):
        pytest.skip(f"unshare does not work here: {sandbox.probe('unshare')}")
    fresh_probes.setattr(backends.Bwrap, "missing", lambda self: "bwrap gone")
    with warnings.catch_warnings():
        warnings.simplefilter("error", sandbox.SandboxWarning)  # unshare is no downgrade worth a warning
        assert sandbox.backend().name == "unshare"


def test_with_neither_auto_warns_once_naming_what_is_missing(fresh_probes):
    fresh_probes.setattr(backends.Bwrap, "missing", lambda self: "bubblewrap is not installed")
    fresh_probes.setattr(backends.Unshare, "missing", lambda self: "no userns")
    with pytest.warns(sandbox.SandboxWarning) as caught:
        assert sandbox.backend().name == "rlimits"
        assert sandbox.backend().name == "rlimits"
    assert len(caught) == 1
    message = str(caught[0].message)
    assert "bwrap: bubblewrap is not installed" in message and "unshare: no userns" in message
    assert "read and write your files" in message and "apt-get install bubblewrap" in message
    # and the rewards still run (with the seccomp filter)
    (r,) = sandbox.run([Job(ADD, ("assert add(1, 1) == 2",))])
    assert r.tests == ["pass"] and r.layers["seccomp"] == "1"


def test_auto_refuses_root_without_namespaces_or_seccomp(fresh_probes):
    for cls in (backends.Bwrap, backends.Unshare):
        fresh_probes.setattr(cls, "missing", lambda self: "absent")
    fresh_probes.setattr(sandbox.os, "geteuid", lambda: 0)
    sandbox.probe("rlimits")
    sandbox._probes["rlimits"][1]["seccomp"] = "0"  # as on an architecture without our syscall table
    with pytest.raises(sandbox.SandboxUnavailable, match=r"refusing to run model code as root .* name "
                                                         r"sandbox='rlimits' explicitly"):
        sandbox.backend()
    with pytest.warns(sandbox.SandboxWarning, match="no seccomp filter either"):
        assert sandbox.backend("rlimits").name == "rlimits"


def test_a_backend_named_by_parameter_or_environment_is_used_or_refused(fresh_probes):
    with pytest.warns(sandbox.SandboxWarning, match=r"resource limits only \(sandbox: 'rlimits' was named\)"):
        assert sandbox.run([Job("x = 1", ())], sandbox="rlimits")[0].layers.get("pdeathsig") == "1"
    fresh_probes.setenv(sandbox.ENV_BACKEND, "rlimits")
    assert sandbox.backend().name == "rlimits"
    fresh_probes.setattr(backends.Bwrap, "missing", lambda self: "not here")
    with pytest.raises(sandbox.SandboxUnavailable, match=r"sandbox 'bwrap' does not work on this host: not here"):
        sandbox.backend("bwrap")
    with pytest.raises(ValueError, match=r"sandbox='docker': choose one of auto, bwrap, unshare, rlimits"):
        sandbox.backend("docker")


def test_a_broken_sandbox_is_a_sandbox_error_not_a_score(fresh_probes):
    broken = backends.get("rlimits")
    fresh_probes.setattr(backends.Rlimits, "argv", lambda self, *args: ["/nonexistent/bwrap"])
    from grpo_rewards_code.runner import run_jobs

    (r,) = run_jobs([Job(ADD, ("assert True",))], broken, Limits(), 1)
    assert r.status == "sandbox_error" and "cannot start the rlimits sandbox" in r.detail
    fresh_probes.setattr(backends.Rlimits, "argv", lambda self, *args: ["python3", "-c", "import sys; sys.exit(3)"])
    (r,) = run_jobs([Job(ADD, ("assert True",))], broken, Limits(), 1)
    assert r.status == "sandbox_error" and "did not start (exit status 3)" in r.detail


def test_workers_and_limits_are_checked():
    with pytest.raises(ValueError, match=r"workers=0: give a positive number"):
        sandbox.resolve_workers(0)
    with pytest.raises(ValueError, match=r"timeout=-1: give the per-run wall-clock limit"):
        Limits(timeout=-1)
    with pytest.raises(ValueError, match=r"memory_mb=8: Python itself needs about 30 MB"):
        Limits(memory_mb=8)


def test_pool_size_follows_the_environment(monkeypatch):
    monkeypatch.setenv(sandbox.ENV_WORKERS, "3")
    assert sandbox.default_workers() == 3
    monkeypatch.setenv(sandbox.ENV_WORKERS, "many")
    with pytest.raises(ValueError, match=r"GRPO_CODE_WORKERS='many' must be a positive integer"):
        sandbox.default_workers()
    monkeypatch.delenv(sandbox.ENV_WORKERS)
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "64")
    assert sandbox.default_workers() == 1


ORPHAN_SCRIPT = """
import json, os, signal, sys, threading, time
from grpo_rewards_code import sandbox
from grpo_rewards_code.jobs import Job, Limits
from grpo_rewards_code.runner import our_processes
threading.Thread(target=sandbox.run, args=([Job("while True:\\n    pass", ())] * 2, Limits(timeout=120), 2, sys.argv[1]),
                 daemon=True).start()
for _ in range(600):
    pids = our_processes()
    if len(pids) >= 2:
        break
    time.sleep(0.05)
time.sleep(0.3)  # the harness is past its setup, in the loop
print(json.dumps(our_processes()), flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie is dead
    except FileNotFoundError:
        return False


def test_no_sandbox_outlives_a_trainer_killed_with_sigkill(backend, tmp_path):
    import json
    import subprocess
    import sys
    import time

    proc = subprocess.run([sys.executable, "-c", ORPHAN_SCRIPT, backend], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    assert proc.returncode == -9, proc.stderr[-2000:]
    pids = json.loads(proc.stdout.strip().splitlines()[-1])
    assert pids  # the runs were alive when the trainer died
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.05)
    left = [pid for pid in pids if _alive(pid)]
    for pid in left:
        os.kill(pid, 9)
    assert not left, f"left running after the trainer died: {left}"


class Niced(backends.Backend):
    """A test double: the plain child process under nice(1). One class, put in the list."""

    name = "niced"
    guarantees = "a lower CPU priority (a test double)"
    host_dir = True

    def argv(self, run_id: str = "", seccomp_fd: int | None = None) -> list[str]:
        return ["nice", "-n", "5", *backends.python_argv(run_id)]

    def payload(self, host_dir, filter_loaded=False) -> dict:
        return {"die_with_parent": True}

    def environment(self, host_dir) -> dict[str, str]:
        return backends.env(host_dir, host_dir)


def test_a_new_backend_is_one_class_added_to_the_list(fresh_probes):
    import shutil

    if shutil.which("nice") is None:
        pytest.skip("nice(1) is not installed")
    fresh_probes.setattr(backends, "BACKENDS", [Niced(), *backends.BACKENDS])
    assert sandbox.check_choice("niced") == "niced"
    assert sandbox.backend().name == "niced"  # first in the list and it works: auto takes it
    level = min(os.nice(0) + 5, 19)
    (r,) = sandbox.run([Job("import os\nlevel = os.nice(0)\n", (f"assert level == {level}",))], sandbox="niced")
    assert r.tests == ["pass"] and r.layers["pdeathsig"] == "1"  # it ran under nice, with the harness's layers
    sandbox.reset()
    fresh_probes.setattr(Niced, "missing", lambda self: "nice is broken")
    assert sandbox.backend().name == next(n for n in backends.names()[1:] if sandbox.probe(n) is None)
    with pytest.raises(sandbox.SandboxUnavailable, match="sandbox 'niced' does not work on this host: nice is broken"):
        sandbox.backend("niced")
