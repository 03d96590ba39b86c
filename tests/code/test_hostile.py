"""Hostile completions, on every backend this host has: each scores 0 with its
cause logged, nothing escapes, and no process is left behind.

Each attack is a ``solve()`` whose test passes only if the attack worked, so a
score of 0 is itself the proof it failed; the host side is then checked too (the
file not written, the checkout file still there, the listener never called, this
process alive). Namespace backends also run without the seccomp filter, to show
the namespaces hold on their own. A host where no backend with namespaces works fails
the suite (``test_the_suite_ran_on_a_backend_with_namespaces``) instead of
passing on resource limits alone; ``GRPO_CODE_EXPECT`` names the backends that
must work (``rlimits`` to accept a host without namespaces). Nothing here harms the machine: the 10 GB
allocation meets the memory limit, the "checkout" is a temporary copy.
"""

from __future__ import annotations

import os
import socket
import threading

import pytest

from grpo_rewards_code import rewards, sandbox
from grpo_rewards_code.jobs import Job, Limits
from grpo_rewards_code.rewards import METRIC

from .conftest import EXPECT_ENV, children, coverage_problem, sandbox_pids

FENCE = "```"
SECRET = "s3cret-value-of-the-trainer"
ESCAPED = ("assert solve() == 'escaped'",)
NO_FILE_ISOLATION = ("the rlimits backend does not isolate the file system or /proc (its one-time warning "
                     "says so)")


class Host:
    """What the attacks aim at, on the host side."""

    def __init__(self, tmp_path):
        self.outside = tmp_path / "outside" / "written-by-the-sandbox.txt"
        self.outside.parent.mkdir()
        self.checkout = tmp_path / "checkout"
        self.checkout.mkdir()
        self.checkout_file = self.checkout / "README.md"
        self.checkout_file.write_text("a file of the checkout\n")
        self.touched = tmp_path / "outside" / "touched-by-os-system"
        self.hits: list[bytes] = []
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(8)
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.hits.append(conn.recv(100) or b"(connected)")
            conn.close()

    def close(self):
        self.listener.close()


# name -> (code, expected cause, host check, backends that do not protect against it)
def attacks(host: Host) -> dict:
    pid = os.getpid()
    return {
        "infinite_loop": ("while True:\n    pass\ndef solve():\n    return 'escaped'\n", "timeout", None, ()),
        "fork_bomb": ("import os\nwhile True:\n    os.fork()\ndef solve():\n    return 'escaped'\n", "error",
                      None, ()),
        "allocate_10_gb": ("data = bytearray(10 * 1024 ** 3)\ndef solve():\n    return 'escaped'\n", "memory",
                           None, ()),
        "write_outside": (f"def solve():\n    with open({str(host.outside)!r}, 'w') as f:\n        f.write('x')\n"
                          "    return 'escaped'\n", "failed", lambda: not host.outside.exists(), ("rlimits",)),
        "read_env": (f"import os\ndef solve():\n    return 'escaped' if os.environ.get('GRPO_TEST_SECRET') == "
                     f"{SECRET!r} else 'no'\n", "failed", None, ()),
        # the trainer's environment through /proc: a pid namespace hides it; without one, only a
        # root trainer is safe (the sandbox dropped the capabilities the trainer still has)
        "read_trainer_environ": (f"def solve():\n    with open('/proc/{pid}/environ', 'rb') as f:\n"
                                 f"        return 'escaped' if {SECRET.encode()!r} in f.read() else 'no'\n", "failed",
                                 None, () if os.geteuid() == 0 else ("rlimits",)),
        "socket_to_localhost": (f"import socket\ndef solve():\n    s = socket.create_connection(('127.0.0.1', "
                                f"{host.port}), timeout=1)\n    s.sendall(b'pwned')\n    return 'escaped'\n",
                                "failed", lambda: host.hits == [], ()),
        "kill_parent": (f"import os, signal\ndef solve():\n    os.kill(os.getppid(), signal.SIGKILL)\n"
                        f"    os.kill({pid}, signal.SIGKILL)\n    return 'escaped'\n", "failed",
                        lambda: os.getpid() == pid, ()),
        "print_100_mb": ("print('x' * 100_000_000)\ndef solve():\n    return 'escaped'\n", "output_limit", None, ()),
        "os_system": (f"import os\ndef solve():\n    return 'escaped' if os.system('touch {host.touched}') == 0 "
                      "else 'no'\n", "failed", lambda: not host.touched.exists(), ()),
        # bubblewrap loads the filter before it execs Python, so exec itself is allowed there: the
        # shell replaces the run (its verdicts are lost) and still sees no host file
        "exec_a_shell": (f"import os\ndef solve():\n    os.execv('/bin/sh', ['sh', '-c', 'echo pwned > "
                         f"{host.touched}'])\n", ("failed", "crashed"), lambda: not host.touched.exists(), ()),
        "delete_checkout": (f"import os, shutil\ndef solve():\n    os.remove({str(host.checkout_file)!r})\n"
                            f"    shutil.rmtree({str(host.checkout)!r})\n    return 'escaped'\n", "failed",
                            lambda: host.checkout_file.read_text() == "a file of the checkout\n", ("rlimits",)),
    }


CASES = ["infinite_loop", "fork_bomb", "allocate_10_gb", "write_outside", "read_env", "read_trainer_environ",
         "socket_to_localhost",
         "kill_parent", "print_100_mb", "os_system", "exec_a_shell", "delete_checkout"]


@pytest.fixture
def host(tmp_path, monkeypatch):
    monkeypatch.setenv("GRPO_TEST_SECRET", SECRET)
    h = Host(tmp_path)
    yield h
    h.close()


def _check_host(host, case, check):
    assert sandbox_pids() == set(), f"{case}: sandbox processes left behind"
    if check is not None:
        assert check(), f"{case}: the attack reached the host"


@pytest.mark.parametrize("case", CASES)
def test_hostile_code_scores_zero_with_its_cause_logged(backend, case, host, metrics):
    code, cause, check, unprotected = attacks(host)[case]
    if backend in unprotected:
        pytest.skip(NO_FILE_ISOLATION)
    before = children()
    scores = rewards.tests([f"Here it is:\n{FENCE}python\n{code}{FENCE}"], tests=[list(ESCAPED)], timeout=1.0,
                   workers=1, sandbox=backend, **metrics.kwargs())
    assert scores == [0.0]
    (logged,) = metrics.extra["code.tests/cause"]
    assert logged in (cause if isinstance(cause, tuple) else (cause,))
    if logged in METRIC:
        assert metrics.metrics[f"code.tests/{METRIC[logged]}"] == 1.0
    _check_host(host, case, check)
    assert children() <= before


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("name", ["bwrap", "unshare"])
def test_namespaces_hold_without_the_seccomp_filter(name, case, host):
    reason = sandbox.probe(name)
    if reason:
        pytest.skip(f"sandbox '{name}' does not work on this host: {reason}")
    if case == "fork_bomb" and os.geteuid() == 0:
        pytest.skip("as root RLIMIT_NPROC does not apply: only the seccomp filter bounds a fork bomb")
    code, _, check, _ = attacks(host)[case]
    (r,) = sandbox.run([Job(code, ESCAPED)], Limits(timeout=1.0, seccomp=False), workers=1, sandbox=name)
    assert r.layers.get("seccomp") is None and r.passed == 0, (case, r)
    _check_host(host, case, check)


def test_the_sandbox_pid_scan_sees_a_live_harness():
    # the leak check above is only worth something if it can see a running sandbox
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        future = pool.submit(sandbox.run, [Job("import time\ntime.sleep(30)", ())], Limits(timeout=1.0), 1)
        seen = set()
        for _ in range(200):
            seen = sandbox_pids()
            if seen:
                break
            threading.Event().wait(0.01)
        assert seen
        assert future.result()[0].status == "timeout"
    assert sandbox_pids() == set()


def test_the_suite_ran_on_a_backend_with_namespaces():
    problem = coverage_problem(sandbox.probe, os.environ.get(EXPECT_ENV))
    assert problem is None, problem


def test_the_coverage_check_fails_a_host_without_real_isolation():
    def only_rlimits(name):
        return None if name == "rlimits" else f"{name} broken"

    assert coverage_problem(only_rlimits, None) == (
        "no backend with namespaces works here (bwrap: bwrap broken; unshare: unshare broken), so the hostile "
        "programs met resource limits only. Fix the host (install bubblewrap, allow user namespaces), or set "
        "GRPO_CODE_EXPECT=rlimits to accept testing without namespaces.")
    assert coverage_problem(only_rlimits, "bwrap") == "bwrap: bwrap broken (named in GRPO_CODE_EXPECT)"
    assert coverage_problem(only_rlimits, "rlimits") is None  # accepted by name
    assert coverage_problem(lambda name: None if name == "unshare" else "broken", None) is None  # one is enough
